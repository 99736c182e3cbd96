package org.powerinfer4j.bench;

import java.util.Random;
import java.util.concurrent.TimeUnit;
import jdk.incubator.vector.FloatVector;
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
