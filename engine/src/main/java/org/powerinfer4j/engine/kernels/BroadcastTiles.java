package org.powerinfer4j.engine.kernels;

import static org.powerinfer4j.engine.kernels.Simd.F;
import static org.powerinfer4j.engine.kernels.Simd.FL;

import java.util.Arrays;
import jdk.incubator.vector.FloatVector;

/**
 * Prefill's matrix product as rank-1 updates: per step k, one weight {@code w[r][k]} broadcast times a vector of
 * {@link Simd#FL} batch columns {@code xT[k][c..]}, accumulated in registers that hold the outputs themselves. The
 * 6-row × 4-vector tile keeps 24 accumulators (of the 32 vector registers AVX-512 and NEON have) and per step
 * issues 6 broadcasts and 4 loads for 24 FMAs; the activations are transposed once per product (k-major) and a
 * block of {@link #KC} steps of them stays in L1 while every row group of the panel passes over it. A batch's last
 * 32 or 16 columns (at 512-bit; short prompts are nothing else) go through 12-row tiles of two or one vectors.
 *
 * <p>Why not {@link MatrixOps}' 4×3 dot-product tile for these batches: it reads each weight vector from the L2
 * panel for three FMAs and ends each tile in lane reductions. Measured on one Sapphire Rapids core (512-bit,
 * batch 64): 4×3 reaches 58 / 33 G multiply-adds/s at row lengths 768 / 2048; this tile 77–85 with the
 * activations' constant stride ({@code IntDotBench}), 60–71 when the stride was the batch width (a variable, so C2
 * kept a bounds check per load in the loop); the register-only FMA peak is 105.
 *
 * <p>Every output is one FMA chain over k in order from 0f — {@code s = fma(w[r][k], x[c][k], s)} — whatever
 * the block sizes, thread count or execution mode, so {@link #reference} gives its bits exactly.
 */
final class BroadcastTiles {
    private BroadcastTiles() {}

    /** Rows and vectors of the register tile. */
    static final int ROWS = 6, VECS = 4;
    /** Batch columns per tile: four vectors; the narrower groups of a batch's last columns: two vectors. */
    static final int COLS = VECS * FL, COLS2 = 2 * FL;
    /** Rows of the narrower tiles, and so the granule panels are padded to. */
    static final int PAD = 2 * ROWS;
    /** k steps per block: 64 steps × {@link #COLS} columns of activations (16 KiB at 512-bit) stay in L1. */
    static final int KC = 64;
    /**
     * Only where 24 accumulators fit in registers: 512-bit x86 (32 zmm) and 128-bit AArch64 (32 NEON registers).
     * AVX2's 16 ymm registers would spill them; those keep the 4×3 tile. {@code -Dpowerinfer4j.matmul.broadcast=false}
     * turns the path off (side-by-side benchmarks), {@code =true} on at any width (the 128-bit test execution, NEON's
     * width, runs it on x86 too).
     */
    static final boolean SUPPORTED = Simd.ENABLED && switch (System.getProperty("powerinfer4j.matmul.broadcast", "")) {
        case "false" -> false;
        case "true" -> true;
        default -> FL == 16 || (FL == 4 && "aarch64".equals(System.getProperty("os.arch")));
    };

    /** The calling thread's k-major copies: two, for a product over plain and permuted activations at once. */
    private static final ThreadLocal<float[][]> TRANSPOSED = ThreadLocal.withInitial(() -> new float[2][0]);
    private static final ThreadLocal<float[]> ACC = ThreadLocal.withInitial(() -> new float[0]);

    /**
     * Columns of a batch this path takes: whole vectors of columns — groups of {@link #COLS} first, then at most one
     * of {@link #COLS2} and one of {@link Simd#FL} (the rest, under a vector, goes through the dot-product tiles).
     */
    static int columns(int batch) {
        return SUPPORTED ? batch / FL * FL : 0;
    }

    /** Width of the column group starting at {@code c0} of {@code cols} (from {@link #columns}). */
    static int groupWidth(int c0, int cols) {
        int left = cols - c0;
        return left >= COLS ? COLS : left >= COLS2 ? COLS2 : FL;
    }

    /**
     * The first {@code cols} of the row-major vectors of length n in x ({@code x[b*n + k]}), k-major per column
     * group ({@link #groupWidth}): group g0 of width gw holds {@code xT[g0*n + k*gw + (b - g0)]}, in the calling
     * thread's buffer, valid until its next call with the same {@code buffer} (0 or 1). Each tile reads its group at
     * a constant stride, which lets C2 hoist its bounds checks out of the k loop (a stride that is a variable keeps
     * one check per load in the loop).
     */
    static float[] transpose(float[] x, int n, int cols, int buffer) {
        float[][] buffers = TRANSPOSED.get();
        float[] xT = buffers[buffer];
        if (xT.length < n * cols) buffers[buffer] = xT = new float[n * cols];
        // one gather per k and FL columns: lane i reads x[(b0+i)*n + k]. 64 × 768 floats: 9 µs, against 35 for
        // the scalar copy — it runs on the calling thread before every product, so it is the serial part
        int[] rowStarts = new int[FL];
        for (int i = 0; i < FL; i++) rowStarts[i] = i * n;
        for (int g0 = 0; g0 < cols; ) {
            int gw = groupWidth(g0, cols);
            for (int b0 = g0; b0 < g0 + gw; b0 += FL) {
                int base = g0 * n + (b0 - g0), xo = b0 * n;
                for (int k = 0; k < n; k++) FloatVector.fromArray(F, x, xo + k, rowStarts, 0).intoArray(xT, base + k * gw);
            }
            g0 += gw;
        }
        return xT;
    }

    /**
     * {@code out[c*rows + outRow0 + r] = Σ_k w[r*n + k]·x[c][k]} for r &lt; pRows, c &lt; cols (xT from
     * {@link #transpose}). The panel w holds pRows rows rounded up by {@link #padRows} (zeroes past pRows, from the
     * caller), which are computed but not written. Groups of {@link #COLS} columns take the 6-row × 4-vector tile,
     * narrower groups 12 rows × 2 or 1 vectors: the same 24 (or 12) accumulators with fewer column loads per step.
     */
    static void panel(float[] w, int n, int pRows, float[] xT, int cols, float[] out, int rows, int outRow0) {
        int padded = padRows(pRows);
        float[] acc = ACC.get();
        if (acc.length < padded * COLS) ACC.set(acc = new float[padded * COLS]);
        for (int c0 = 0; c0 < cols; ) {
            int gw = groupWidth(c0, cols);
            for (int r = 0; r < padded; r++) Arrays.fill(acc, r * COLS, r * COLS + gw, 0f);
            for (int k0 = 0; k0 < n; k0 += KC) {
                int k1 = Math.min(n, k0 + KC);
                if (gw == COLS) for (int r = 0; r < padded; r += ROWS) tile(w, r * n, n, xT, c0 * n, k0, k1, acc, r * COLS);
                else if (gw == COLS2) for (int r = 0; r < padded; r += PAD) tile12x2(w, r * n, n, xT, c0 * n, k0, k1, acc, r * COLS);
                else for (int r = 0; r < padded; r += PAD) tile12x1(w, r * n, n, xT, c0 * n, k0, k1, acc, r * COLS);
            }
            // out column by column: each a run of pRows floats (acc, 48 KiB at most, is read across in L1/L2)
            for (int c = 0; c < gw; c++) {
                int o = (c0 + c) * rows + outRow0;
                for (int r = 0; r < pRows; r++) out[o + r] = acc[r * COLS + c];
            }
            c0 += gw;
        }
    }

    /** pRows rounded up to whole tiles of every width ({@link #PAD} rows). */
    static int padRows(int pRows) {
        return (pRows + PAD - 1) / PAD * PAD;
    }

    /** Six rows of the panel from w0 on × the column tile of xT at xt (four vectors) over k in [k0, k1), into acc[a..]. */
    private static void tile(float[] w, int w0, int n, float[] xT, int xt, int k0, int k1, float[] acc, int a) {
        FloatVector c00 = FloatVector.fromArray(F, acc, a + 0 * FL), c01 = FloatVector.fromArray(F, acc, a + 1 * FL),
                c02 = FloatVector.fromArray(F, acc, a + 2 * FL), c03 = FloatVector.fromArray(F, acc, a + 3 * FL);
        FloatVector c10 = FloatVector.fromArray(F, acc, a + 4 * FL), c11 = FloatVector.fromArray(F, acc, a + 5 * FL),
                c12 = FloatVector.fromArray(F, acc, a + 6 * FL), c13 = FloatVector.fromArray(F, acc, a + 7 * FL);
        FloatVector c20 = FloatVector.fromArray(F, acc, a + 8 * FL), c21 = FloatVector.fromArray(F, acc, a + 9 * FL),
                c22 = FloatVector.fromArray(F, acc, a + 10 * FL), c23 = FloatVector.fromArray(F, acc, a + 11 * FL);
        FloatVector c30 = FloatVector.fromArray(F, acc, a + 12 * FL), c31 = FloatVector.fromArray(F, acc, a + 13 * FL),
                c32 = FloatVector.fromArray(F, acc, a + 14 * FL), c33 = FloatVector.fromArray(F, acc, a + 15 * FL);
        FloatVector c40 = FloatVector.fromArray(F, acc, a + 16 * FL), c41 = FloatVector.fromArray(F, acc, a + 17 * FL),
                c42 = FloatVector.fromArray(F, acc, a + 18 * FL), c43 = FloatVector.fromArray(F, acc, a + 19 * FL);
        FloatVector c50 = FloatVector.fromArray(F, acc, a + 20 * FL), c51 = FloatVector.fromArray(F, acc, a + 21 * FL),
                c52 = FloatVector.fromArray(F, acc, a + 22 * FL), c53 = FloatVector.fromArray(F, acc, a + 23 * FL);
        for (int k = k0; k < k1; k++) {
            int xo = xt + k * COLS, wo = w0 + k;
            FloatVector x0 = FloatVector.fromArray(F, xT, xo), x1 = FloatVector.fromArray(F, xT, xo + FL);
            FloatVector x2 = FloatVector.fromArray(F, xT, xo + 2 * FL), x3 = FloatVector.fromArray(F, xT, xo + 3 * FL);
            FloatVector s;
            s = FloatVector.broadcast(F, w[wo]); c00 = x0.fma(s, c00); c01 = x1.fma(s, c01); c02 = x2.fma(s, c02); c03 = x3.fma(s, c03);
            s = FloatVector.broadcast(F, w[wo + n]); c10 = x0.fma(s, c10); c11 = x1.fma(s, c11); c12 = x2.fma(s, c12); c13 = x3.fma(s, c13);
            s = FloatVector.broadcast(F, w[wo + 2 * n]); c20 = x0.fma(s, c20); c21 = x1.fma(s, c21); c22 = x2.fma(s, c22); c23 = x3.fma(s, c23);
            s = FloatVector.broadcast(F, w[wo + 3 * n]); c30 = x0.fma(s, c30); c31 = x1.fma(s, c31); c32 = x2.fma(s, c32); c33 = x3.fma(s, c33);
            s = FloatVector.broadcast(F, w[wo + 4 * n]); c40 = x0.fma(s, c40); c41 = x1.fma(s, c41); c42 = x2.fma(s, c42); c43 = x3.fma(s, c43);
            s = FloatVector.broadcast(F, w[wo + 5 * n]); c50 = x0.fma(s, c50); c51 = x1.fma(s, c51); c52 = x2.fma(s, c52); c53 = x3.fma(s, c53);
        }
        c00.intoArray(acc, a + 0 * FL); c01.intoArray(acc, a + 1 * FL); c02.intoArray(acc, a + 2 * FL); c03.intoArray(acc, a + 3 * FL);
        c10.intoArray(acc, a + 4 * FL); c11.intoArray(acc, a + 5 * FL); c12.intoArray(acc, a + 6 * FL); c13.intoArray(acc, a + 7 * FL);
        c20.intoArray(acc, a + 8 * FL); c21.intoArray(acc, a + 9 * FL); c22.intoArray(acc, a + 10 * FL); c23.intoArray(acc, a + 11 * FL);
        c30.intoArray(acc, a + 12 * FL); c31.intoArray(acc, a + 13 * FL); c32.intoArray(acc, a + 14 * FL); c33.intoArray(acc, a + 15 * FL);
        c40.intoArray(acc, a + 16 * FL); c41.intoArray(acc, a + 17 * FL); c42.intoArray(acc, a + 18 * FL); c43.intoArray(acc, a + 19 * FL);
        c50.intoArray(acc, a + 20 * FL); c51.intoArray(acc, a + 21 * FL); c52.intoArray(acc, a + 22 * FL); c53.intoArray(acc, a + 23 * FL);
    }

    /** Twelve rows × two vectors (a column group of {@link #COLS2}, k-major at that stride): 24 accumulators. */
    private static void tile12x2(float[] w, int w0, int n, float[] xT, int xt, int k0, int k1, float[] acc, int a) {
        FloatVector c0_0 = FloatVector.fromArray(F, acc, a + 0 * COLS + 0 * FL), c0_1 = FloatVector.fromArray(F, acc, a + 0 * COLS + 1 * FL);
        FloatVector c1_0 = FloatVector.fromArray(F, acc, a + 1 * COLS + 0 * FL), c1_1 = FloatVector.fromArray(F, acc, a + 1 * COLS + 1 * FL);
        FloatVector c2_0 = FloatVector.fromArray(F, acc, a + 2 * COLS + 0 * FL), c2_1 = FloatVector.fromArray(F, acc, a + 2 * COLS + 1 * FL);
        FloatVector c3_0 = FloatVector.fromArray(F, acc, a + 3 * COLS + 0 * FL), c3_1 = FloatVector.fromArray(F, acc, a + 3 * COLS + 1 * FL);
        FloatVector c4_0 = FloatVector.fromArray(F, acc, a + 4 * COLS + 0 * FL), c4_1 = FloatVector.fromArray(F, acc, a + 4 * COLS + 1 * FL);
        FloatVector c5_0 = FloatVector.fromArray(F, acc, a + 5 * COLS + 0 * FL), c5_1 = FloatVector.fromArray(F, acc, a + 5 * COLS + 1 * FL);
        FloatVector c6_0 = FloatVector.fromArray(F, acc, a + 6 * COLS + 0 * FL), c6_1 = FloatVector.fromArray(F, acc, a + 6 * COLS + 1 * FL);
        FloatVector c7_0 = FloatVector.fromArray(F, acc, a + 7 * COLS + 0 * FL), c7_1 = FloatVector.fromArray(F, acc, a + 7 * COLS + 1 * FL);
        FloatVector c8_0 = FloatVector.fromArray(F, acc, a + 8 * COLS + 0 * FL), c8_1 = FloatVector.fromArray(F, acc, a + 8 * COLS + 1 * FL);
        FloatVector c9_0 = FloatVector.fromArray(F, acc, a + 9 * COLS + 0 * FL), c9_1 = FloatVector.fromArray(F, acc, a + 9 * COLS + 1 * FL);
        FloatVector c10_0 = FloatVector.fromArray(F, acc, a + 10 * COLS + 0 * FL), c10_1 = FloatVector.fromArray(F, acc, a + 10 * COLS + 1 * FL);
        FloatVector c11_0 = FloatVector.fromArray(F, acc, a + 11 * COLS + 0 * FL), c11_1 = FloatVector.fromArray(F, acc, a + 11 * COLS + 1 * FL);
        for (int k = k0; k < k1; k++) {
            int xo = xt + k * COLS2, wo = w0 + k;
            FloatVector x0 = FloatVector.fromArray(F, xT, xo), x1 = FloatVector.fromArray(F, xT, xo + 1 * FL);
            FloatVector s;
            s = FloatVector.broadcast(F, w[wo]); c0_0 = x0.fma(s, c0_0); c0_1 = x1.fma(s, c0_1);
            s = FloatVector.broadcast(F, w[wo + n]); c1_0 = x0.fma(s, c1_0); c1_1 = x1.fma(s, c1_1);
            s = FloatVector.broadcast(F, w[wo + 2 * n]); c2_0 = x0.fma(s, c2_0); c2_1 = x1.fma(s, c2_1);
            s = FloatVector.broadcast(F, w[wo + 3 * n]); c3_0 = x0.fma(s, c3_0); c3_1 = x1.fma(s, c3_1);
            s = FloatVector.broadcast(F, w[wo + 4 * n]); c4_0 = x0.fma(s, c4_0); c4_1 = x1.fma(s, c4_1);
            s = FloatVector.broadcast(F, w[wo + 5 * n]); c5_0 = x0.fma(s, c5_0); c5_1 = x1.fma(s, c5_1);
            s = FloatVector.broadcast(F, w[wo + 6 * n]); c6_0 = x0.fma(s, c6_0); c6_1 = x1.fma(s, c6_1);
            s = FloatVector.broadcast(F, w[wo + 7 * n]); c7_0 = x0.fma(s, c7_0); c7_1 = x1.fma(s, c7_1);
            s = FloatVector.broadcast(F, w[wo + 8 * n]); c8_0 = x0.fma(s, c8_0); c8_1 = x1.fma(s, c8_1);
            s = FloatVector.broadcast(F, w[wo + 9 * n]); c9_0 = x0.fma(s, c9_0); c9_1 = x1.fma(s, c9_1);
            s = FloatVector.broadcast(F, w[wo + 10 * n]); c10_0 = x0.fma(s, c10_0); c10_1 = x1.fma(s, c10_1);
            s = FloatVector.broadcast(F, w[wo + 11 * n]); c11_0 = x0.fma(s, c11_0); c11_1 = x1.fma(s, c11_1);
        }
        c0_0.intoArray(acc, a + 0 * COLS + 0 * FL); c0_1.intoArray(acc, a + 0 * COLS + 1 * FL);
        c1_0.intoArray(acc, a + 1 * COLS + 0 * FL); c1_1.intoArray(acc, a + 1 * COLS + 1 * FL);
        c2_0.intoArray(acc, a + 2 * COLS + 0 * FL); c2_1.intoArray(acc, a + 2 * COLS + 1 * FL);
        c3_0.intoArray(acc, a + 3 * COLS + 0 * FL); c3_1.intoArray(acc, a + 3 * COLS + 1 * FL);
        c4_0.intoArray(acc, a + 4 * COLS + 0 * FL); c4_1.intoArray(acc, a + 4 * COLS + 1 * FL);
        c5_0.intoArray(acc, a + 5 * COLS + 0 * FL); c5_1.intoArray(acc, a + 5 * COLS + 1 * FL);
        c6_0.intoArray(acc, a + 6 * COLS + 0 * FL); c6_1.intoArray(acc, a + 6 * COLS + 1 * FL);
        c7_0.intoArray(acc, a + 7 * COLS + 0 * FL); c7_1.intoArray(acc, a + 7 * COLS + 1 * FL);
        c8_0.intoArray(acc, a + 8 * COLS + 0 * FL); c8_1.intoArray(acc, a + 8 * COLS + 1 * FL);
        c9_0.intoArray(acc, a + 9 * COLS + 0 * FL); c9_1.intoArray(acc, a + 9 * COLS + 1 * FL);
        c10_0.intoArray(acc, a + 10 * COLS + 0 * FL); c10_1.intoArray(acc, a + 10 * COLS + 1 * FL);
        c11_0.intoArray(acc, a + 11 * COLS + 0 * FL); c11_1.intoArray(acc, a + 11 * COLS + 1 * FL);
    }

    /** Twelve rows × one vector (a group of {@link Simd#FL} columns): 12 accumulators, enough FMAs in flight to hide their latency. */
    private static void tile12x1(float[] w, int w0, int n, float[] xT, int xt, int k0, int k1, float[] acc, int a) {
        FloatVector c0_0 = FloatVector.fromArray(F, acc, a + 0 * COLS + 0 * FL);
        FloatVector c1_0 = FloatVector.fromArray(F, acc, a + 1 * COLS + 0 * FL);
        FloatVector c2_0 = FloatVector.fromArray(F, acc, a + 2 * COLS + 0 * FL);
        FloatVector c3_0 = FloatVector.fromArray(F, acc, a + 3 * COLS + 0 * FL);
        FloatVector c4_0 = FloatVector.fromArray(F, acc, a + 4 * COLS + 0 * FL);
        FloatVector c5_0 = FloatVector.fromArray(F, acc, a + 5 * COLS + 0 * FL);
        FloatVector c6_0 = FloatVector.fromArray(F, acc, a + 6 * COLS + 0 * FL);
        FloatVector c7_0 = FloatVector.fromArray(F, acc, a + 7 * COLS + 0 * FL);
        FloatVector c8_0 = FloatVector.fromArray(F, acc, a + 8 * COLS + 0 * FL);
        FloatVector c9_0 = FloatVector.fromArray(F, acc, a + 9 * COLS + 0 * FL);
        FloatVector c10_0 = FloatVector.fromArray(F, acc, a + 10 * COLS + 0 * FL);
        FloatVector c11_0 = FloatVector.fromArray(F, acc, a + 11 * COLS + 0 * FL);
        for (int k = k0; k < k1; k++) {
            int xo = xt + k * FL, wo = w0 + k;
            FloatVector x0 = FloatVector.fromArray(F, xT, xo);
            FloatVector s;
            s = FloatVector.broadcast(F, w[wo]); c0_0 = x0.fma(s, c0_0);
            s = FloatVector.broadcast(F, w[wo + n]); c1_0 = x0.fma(s, c1_0);
            s = FloatVector.broadcast(F, w[wo + 2 * n]); c2_0 = x0.fma(s, c2_0);
            s = FloatVector.broadcast(F, w[wo + 3 * n]); c3_0 = x0.fma(s, c3_0);
            s = FloatVector.broadcast(F, w[wo + 4 * n]); c4_0 = x0.fma(s, c4_0);
            s = FloatVector.broadcast(F, w[wo + 5 * n]); c5_0 = x0.fma(s, c5_0);
            s = FloatVector.broadcast(F, w[wo + 6 * n]); c6_0 = x0.fma(s, c6_0);
            s = FloatVector.broadcast(F, w[wo + 7 * n]); c7_0 = x0.fma(s, c7_0);
            s = FloatVector.broadcast(F, w[wo + 8 * n]); c8_0 = x0.fma(s, c8_0);
            s = FloatVector.broadcast(F, w[wo + 9 * n]); c9_0 = x0.fma(s, c9_0);
            s = FloatVector.broadcast(F, w[wo + 10 * n]); c10_0 = x0.fma(s, c10_0);
            s = FloatVector.broadcast(F, w[wo + 11 * n]); c11_0 = x0.fma(s, c11_0);
        }
        c0_0.intoArray(acc, a + 0 * COLS + 0 * FL);
        c1_0.intoArray(acc, a + 1 * COLS + 0 * FL);
        c2_0.intoArray(acc, a + 2 * COLS + 0 * FL);
        c3_0.intoArray(acc, a + 3 * COLS + 0 * FL);
        c4_0.intoArray(acc, a + 4 * COLS + 0 * FL);
        c5_0.intoArray(acc, a + 5 * COLS + 0 * FL);
        c6_0.intoArray(acc, a + 6 * COLS + 0 * FL);
        c7_0.intoArray(acc, a + 7 * COLS + 0 * FL);
        c8_0.intoArray(acc, a + 8 * COLS + 0 * FL);
        c9_0.intoArray(acc, a + 9 * COLS + 0 * FL);
        c10_0.intoArray(acc, a + 10 * COLS + 0 * FL);
        c11_0.intoArray(acc, a + 11 * COLS + 0 * FL);
    }

    /** The scalar reference: the FMA chain every output of {@link #panel} is. */
    static float reference(float[] w, int wo, float[] x, int xo, int n) {
        float s = 0f;
        for (int k = 0; k < n; k++) s = Math.fma(w[wo + k], x[xo + k], s);
        return s;
    }
}
