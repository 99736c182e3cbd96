package org.powerinfer4j.bench;

import java.util.Random;
import java.util.concurrent.TimeUnit;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.VectorSpecies;
import org.openjdk.jmh.annotations.AuxCounters;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * What one core multiplies and adds per second by the routes a JVM has for prefill (kernels issue: "measure what
 * the JVM can reach for quantized dot products"), on cache-resident data, in {@code gmacs} (10^9 multiply-adds/s):
 * <ul>
 *   <li>{@link #fmaPeak}: twelve independent register-only FMA chains, the float ceiling;</li>
 *   <li>{@link #floatBroadcastTile}: the rank-1 tile of the engine's prefill (one weight broadcast × a vector of
 *       batch columns, 6 × 4 vectors of accumulators, k-major activations);</li>
 *   <li>{@link #broadcast12x1}: the engine's tile for a batch's last 16 columns (12 rows × one vector), a broadcast per FMA;</li>
 *   <li>{@link #pairBroadcast12x1}: 8 batch columns × 2 consecutive k per vector, a 64-bit broadcast of a weight pair
 *       per FMA (from a long[] panel; {@link #pairBroadcast12x1Segment} reads the pairs from the float panel through
 *       a heap segment, which C2 does not turn into a broadcast load — 6× slower);</li>
 *   <li>{@link #int16MulAdd}: int16 × int16 → int32 pairs written as {@code out[m] += w[2m]·a[2m] + w[2m+1]·a[2m+1]},
 *       the shape C2 turns into {@code MulAddVS2VI} ({@code vpmaddwd}, {@code vpdpwssd} with AVX512-VNNI) — the
 *       only integer multiply-add C2 emits, the Vector API having none — four activation rows per weight load.</li>
 * </ul>
 * Run: {@code java -jar bench/target/benchmarks.jar IntDotBench -f 1 -wi 2 -i 3}.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 2, time = 1)
@Measurement(iterations = 3, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--add-modules", "jdk.incubator.vector"})
public class IntDotBench {
    private static final VectorSpecies<Float> F = FloatVector.SPECIES_PREFERRED;
    private static final int FL = F.length();
    /** Weight rows (int16: outputs per pass), row length, activation rows. */
    private static final int M = 256, K = 512, N = 4;
    /** The float tile's shape: 48 weight rows of 768 (a panel in L2), 64 batch columns (four vectors at 512-bit). */
    private static final int P = 48, KF = 768, COLS = 4 * FL;

    private short[] wPairs, aPairs;
    private int[] acc;
    private float[] panel, xT, facc;
    private long[] panelL;
    private java.lang.foreign.MemorySegment panelSeg;
    private static final jdk.incubator.vector.VectorSpecies<Long> LS = LongVector.SPECIES_PREFERRED;
    private static final java.lang.foreign.ValueLayout.OfLong JL = java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED;

    @State(Scope.Thread)
    @AuxCounters(AuxCounters.Type.OPERATIONS)
    public static class Macs {
        public double gmacs;
    }

    @Setup(Level.Trial)
    public void setup() {
        Random r = new Random(1);
        wPairs = new short[K * M];                  // [k/2][m][2]: pair k, k+1 of row m side by side
        aPairs = new short[N * K * M];              // [n][k/2][m][2]: activation pair repeated per m (loads, not broadcasts)
        for (int i = 0; i < wPairs.length; i++) wPairs[i] = (short) (r.nextInt(16) - 8);
        for (int i = 0; i < aPairs.length; i++) aPairs[i] = (short) (r.nextInt(60000) - 30000);
        acc = new int[N * M];
        panel = new float[P * KF];
        xT = new float[KF * COLS];
        facc = new float[6 * COLS];
        for (int i = 0; i < panel.length; i++) panel[i] = r.nextFloat() - 0.5f;
        for (int i = 0; i < xT.length; i++) xT[i] = r.nextFloat() - 0.5f;
        panelL = new long[P * KF / 2];
        java.lang.foreign.MemorySegment.copy(java.lang.foreign.MemorySegment.ofArray(panel), 0, java.lang.foreign.MemorySegment.ofArray(panelL), 0, 4L * P * KF);
        panelSeg = java.lang.foreign.MemorySegment.ofArray(panel);
    }

    @Benchmark
    public float fmaPeak(Macs macs) {
        FloatVector b = FloatVector.broadcast(F, 0.999f), a = FloatVector.broadcast(F, 1e-3f);
        FloatVector c0 = a, c1 = a.add(1f), c2 = a.add(2f), c3 = a.add(3f), c4 = a.add(4f), c5 = a.add(5f);
        FloatVector c6 = a.add(6f), c7 = a.add(7f), c8 = a.add(8f), c9 = a.add(9f), c10 = a.add(10f), c11 = a.add(11f);
        int steps = 1 << 16;
        for (int i = 0; i < steps; i++) {
            c0 = c0.fma(b, a); c1 = c1.fma(b, a); c2 = c2.fma(b, a); c3 = c3.fma(b, a); c4 = c4.fma(b, a); c5 = c5.fma(b, a);
            c6 = c6.fma(b, a); c7 = c7.fma(b, a); c8 = c8.fma(b, a); c9 = c9.fma(b, a); c10 = c10.fma(b, a); c11 = c11.fma(b, a);
        }
        macs.gmacs += 1e-9 * steps * 12 * FL;
        return c0.add(c1).add(c2).add(c3).add(c4).add(c5).add(c6).add(c7).add(c8).add(c9).add(c10).add(c11).lane(0);
    }

    @Benchmark
    public float floatBroadcastTile(Macs macs) {
        for (int r = 0; r < P; r += 6) {
            java.util.Arrays.fill(facc, 0f);
            tile6x4(panel, r * KF, xT, facc);
        }
        macs.gmacs += 1e-9 * P * KF * COLS;
        return facc[0];
    }

    private static void tile6x4(float[] w, int w0, float[] xT, float[] acc) {
        FloatVector c00 = FloatVector.zero(F), c01 = c00, c02 = c00, c03 = c00, c10 = c00, c11 = c00, c12 = c00, c13 = c00;
        FloatVector c20 = c00, c21 = c00, c22 = c00, c23 = c00, c30 = c00, c31 = c00, c32 = c00, c33 = c00;
        FloatVector c40 = c00, c41 = c00, c42 = c00, c43 = c00, c50 = c00, c51 = c00, c52 = c00, c53 = c00;
        for (int k = 0; k < KF; k++) {
            int xo = k * COLS, wo = w0 + k;
            FloatVector x0 = FloatVector.fromArray(F, xT, xo), x1 = FloatVector.fromArray(F, xT, xo + FL);
            FloatVector x2 = FloatVector.fromArray(F, xT, xo + 2 * FL), x3 = FloatVector.fromArray(F, xT, xo + 3 * FL);
            FloatVector s = FloatVector.broadcast(F, w[wo]);
            c00 = x0.fma(s, c00); c01 = x1.fma(s, c01); c02 = x2.fma(s, c02); c03 = x3.fma(s, c03);
            s = FloatVector.broadcast(F, w[wo + KF]);
            c10 = x0.fma(s, c10); c11 = x1.fma(s, c11); c12 = x2.fma(s, c12); c13 = x3.fma(s, c13);
            s = FloatVector.broadcast(F, w[wo + 2 * KF]);
            c20 = x0.fma(s, c20); c21 = x1.fma(s, c21); c22 = x2.fma(s, c22); c23 = x3.fma(s, c23);
            s = FloatVector.broadcast(F, w[wo + 3 * KF]);
            c30 = x0.fma(s, c30); c31 = x1.fma(s, c31); c32 = x2.fma(s, c32); c33 = x3.fma(s, c33);
            s = FloatVector.broadcast(F, w[wo + 4 * KF]);
            c40 = x0.fma(s, c40); c41 = x1.fma(s, c41); c42 = x2.fma(s, c42); c43 = x3.fma(s, c43);
            s = FloatVector.broadcast(F, w[wo + 5 * KF]);
            c50 = x0.fma(s, c50); c51 = x1.fma(s, c51); c52 = x2.fma(s, c52); c53 = x3.fma(s, c53);
        }
        FloatVector sum = c00.add(c01).add(c02).add(c03).add(c10).add(c11).add(c12).add(c13).add(c20).add(c21).add(c22).add(c23)
                .add(c30).add(c31).add(c32).add(c33).add(c40).add(c41).add(c42).add(c43).add(c50).add(c51).add(c52).add(c53);
        sum.intoArray(acc, 0);
    }


    /** 12 rows × one vector of 16 batch columns (a short prompt): one broadcast per FMA. */
    @Benchmark
    public float broadcast12x1(Macs macs) {
        for (int r = 0; r < P; r += 12) tile12x1k(panel, null, null, r * KF, xT, facc);
        macs.gmacs += 1e-9 * P * KF * FL;
        return facc[0];
    }

    /** 12 rows × 8 batch columns, each lane pair two consecutive k of one column: a 64-bit broadcast of a weight pair per FMA (from a long[]). */
    @Benchmark
    public float pairBroadcast12x1(Macs macs) {
        for (int r = 0; r < P; r += 12) tile12x1long(null, panelL, null, r * KF, xT, facc);
        macs.gmacs += 1e-9 * P * KF * FL / 2;
        return facc[0];
    }

    /** {@link #pairBroadcast12x1} reading the pairs from the float panel through a heap segment. */
    @Benchmark
    public float pairBroadcast12x1Segment(Macs macs) {
        for (int r = 0; r < P; r += 12) tile12x1seg(null, null, panelSeg, r * KF, xT, facc);
        macs.gmacs += 1e-9 * P * KF * FL / 2;
        return facc[0];
    }

    private static void tile12x1k(float[] w, long[] wl, java.lang.foreign.MemorySegment ws, int w0, float[] xT, float[] acc) {
        FloatVector c0 = FloatVector.zero(F), c1 = FloatVector.zero(F), c2 = FloatVector.zero(F), c3 = FloatVector.zero(F), c4 = FloatVector.zero(F), c5 = FloatVector.zero(F), c6 = FloatVector.zero(F), c7 = FloatVector.zero(F), c8 = FloatVector.zero(F), c9 = FloatVector.zero(F), c10 = FloatVector.zero(F), c11 = FloatVector.zero(F);
        for (int k = 0; k < KF; k++) {
            int wo = w0 + k;
            FloatVector x0 = FloatVector.fromArray(F, xT, k * FL);
            c0 = x0.fma(FloatVector.broadcast(F, w[wo + 0 * KF]), c0);
            c1 = x0.fma(FloatVector.broadcast(F, w[wo + 1 * KF]), c1);
            c2 = x0.fma(FloatVector.broadcast(F, w[wo + 2 * KF]), c2);
            c3 = x0.fma(FloatVector.broadcast(F, w[wo + 3 * KF]), c3);
            c4 = x0.fma(FloatVector.broadcast(F, w[wo + 4 * KF]), c4);
            c5 = x0.fma(FloatVector.broadcast(F, w[wo + 5 * KF]), c5);
            c6 = x0.fma(FloatVector.broadcast(F, w[wo + 6 * KF]), c6);
            c7 = x0.fma(FloatVector.broadcast(F, w[wo + 7 * KF]), c7);
            c8 = x0.fma(FloatVector.broadcast(F, w[wo + 8 * KF]), c8);
            c9 = x0.fma(FloatVector.broadcast(F, w[wo + 9 * KF]), c9);
            c10 = x0.fma(FloatVector.broadcast(F, w[wo + 10 * KF]), c10);
            c11 = x0.fma(FloatVector.broadcast(F, w[wo + 11 * KF]), c11);
        }
        FloatVector sum = c0.add(c1.add(c2.add(c3.add(c4.add(c5.add(c6.add(c7.add(c8.add(c9.add(c10.add(c11)))))))))));
        sum.intoArray(acc, 0);
    }

    private static void tile12x1long(float[] w, long[] wl, java.lang.foreign.MemorySegment ws, int w0, float[] xT, float[] acc) {
        FloatVector c0 = FloatVector.zero(F), c1 = FloatVector.zero(F), c2 = FloatVector.zero(F), c3 = FloatVector.zero(F), c4 = FloatVector.zero(F), c5 = FloatVector.zero(F), c6 = FloatVector.zero(F), c7 = FloatVector.zero(F), c8 = FloatVector.zero(F), c9 = FloatVector.zero(F), c10 = FloatVector.zero(F), c11 = FloatVector.zero(F);
        for (int j = 0; j < KF / 2; j++) {
            int wo = w0 / 2 + j;
            FloatVector x0 = FloatVector.fromArray(F, xT, j * FL);
            c0 = x0.fma(LongVector.broadcast(LS, wl[wo + 0 * KF / 2]).reinterpretAsFloats(), c0);
            c1 = x0.fma(LongVector.broadcast(LS, wl[wo + 1 * KF / 2]).reinterpretAsFloats(), c1);
            c2 = x0.fma(LongVector.broadcast(LS, wl[wo + 2 * KF / 2]).reinterpretAsFloats(), c2);
            c3 = x0.fma(LongVector.broadcast(LS, wl[wo + 3 * KF / 2]).reinterpretAsFloats(), c3);
            c4 = x0.fma(LongVector.broadcast(LS, wl[wo + 4 * KF / 2]).reinterpretAsFloats(), c4);
            c5 = x0.fma(LongVector.broadcast(LS, wl[wo + 5 * KF / 2]).reinterpretAsFloats(), c5);
            c6 = x0.fma(LongVector.broadcast(LS, wl[wo + 6 * KF / 2]).reinterpretAsFloats(), c6);
            c7 = x0.fma(LongVector.broadcast(LS, wl[wo + 7 * KF / 2]).reinterpretAsFloats(), c7);
            c8 = x0.fma(LongVector.broadcast(LS, wl[wo + 8 * KF / 2]).reinterpretAsFloats(), c8);
            c9 = x0.fma(LongVector.broadcast(LS, wl[wo + 9 * KF / 2]).reinterpretAsFloats(), c9);
            c10 = x0.fma(LongVector.broadcast(LS, wl[wo + 10 * KF / 2]).reinterpretAsFloats(), c10);
            c11 = x0.fma(LongVector.broadcast(LS, wl[wo + 11 * KF / 2]).reinterpretAsFloats(), c11);
        }
        FloatVector sum = c0.add(c1.add(c2.add(c3.add(c4.add(c5.add(c6.add(c7.add(c8.add(c9.add(c10.add(c11)))))))))));
        sum.intoArray(acc, 0);
    }

    private static void tile12x1seg(float[] w, long[] wl, java.lang.foreign.MemorySegment ws, int w0, float[] xT, float[] acc) {
        FloatVector c0 = FloatVector.zero(F), c1 = FloatVector.zero(F), c2 = FloatVector.zero(F), c3 = FloatVector.zero(F), c4 = FloatVector.zero(F), c5 = FloatVector.zero(F), c6 = FloatVector.zero(F), c7 = FloatVector.zero(F), c8 = FloatVector.zero(F), c9 = FloatVector.zero(F), c10 = FloatVector.zero(F), c11 = FloatVector.zero(F);
        for (int j = 0; j < KF / 2; j++) {
            long wo = 4L * w0 + 8L * j;
            FloatVector x0 = FloatVector.fromArray(F, xT, j * FL);
            c0 = x0.fma(LongVector.broadcast(LS, ws.get(JL, wo + 0 * 4L * KF)).reinterpretAsFloats(), c0);
            c1 = x0.fma(LongVector.broadcast(LS, ws.get(JL, wo + 1 * 4L * KF)).reinterpretAsFloats(), c1);
            c2 = x0.fma(LongVector.broadcast(LS, ws.get(JL, wo + 2 * 4L * KF)).reinterpretAsFloats(), c2);
            c3 = x0.fma(LongVector.broadcast(LS, ws.get(JL, wo + 3 * 4L * KF)).reinterpretAsFloats(), c3);
            c4 = x0.fma(LongVector.broadcast(LS, ws.get(JL, wo + 4 * 4L * KF)).reinterpretAsFloats(), c4);
            c5 = x0.fma(LongVector.broadcast(LS, ws.get(JL, wo + 5 * 4L * KF)).reinterpretAsFloats(), c5);
            c6 = x0.fma(LongVector.broadcast(LS, ws.get(JL, wo + 6 * 4L * KF)).reinterpretAsFloats(), c6);
            c7 = x0.fma(LongVector.broadcast(LS, ws.get(JL, wo + 7 * 4L * KF)).reinterpretAsFloats(), c7);
            c8 = x0.fma(LongVector.broadcast(LS, ws.get(JL, wo + 8 * 4L * KF)).reinterpretAsFloats(), c8);
            c9 = x0.fma(LongVector.broadcast(LS, ws.get(JL, wo + 9 * 4L * KF)).reinterpretAsFloats(), c9);
            c10 = x0.fma(LongVector.broadcast(LS, ws.get(JL, wo + 10 * 4L * KF)).reinterpretAsFloats(), c10);
            c11 = x0.fma(LongVector.broadcast(LS, ws.get(JL, wo + 11 * 4L * KF)).reinterpretAsFloats(), c11);
        }
        FloatVector sum = c0.add(c1.add(c2.add(c3.add(c4.add(c5.add(c6.add(c7.add(c8.add(c9.add(c10.add(c11)))))))))));
        sum.intoArray(acc, 0);
    }

    @Benchmark
    public int int16MulAdd(Macs macs) {
        final int s = K * M;
        for (int kp = 0; kp < K / 2; kp++) pairs4(acc, wPairs, kp * 2 * M, aPairs, kp * 2 * M, s);
        macs.gmacs += 1e-9 * M * K * N;
        return acc[0];
    }

    private static void pairs4(int[] out, short[] w, int wo, short[] a, int ao, int s) {
        for (int m = 0; m < M; m++) {
            out[m] += w[wo + 2 * m] * a[ao + 2 * m] + w[wo + 2 * m + 1] * a[ao + 2 * m + 1];
            out[M + m] += w[wo + 2 * m] * a[s + ao + 2 * m] + w[wo + 2 * m + 1] * a[s + ao + 2 * m + 1];
            out[2 * M + m] += w[wo + 2 * m] * a[2 * s + ao + 2 * m] + w[wo + 2 * m + 1] * a[2 * s + ao + 2 * m + 1];
            out[3 * M + m] += w[wo + 2 * m] * a[3 * s + ao + 2 * m] + w[wo + 2 * m + 1] * a[3 * s + ao + 2 * m + 1];
        }
    }
}
