package org.powerinfer4j.engine.gpu;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.foreign.Arena;
import java.util.Random;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.powerinfer4j.engine.tensor.GGMLType;
import org.powerinfer4j.engine.tensor.Tensor;

/**
 * The prompt-batch operators every {@link GpuBackend} must compute — {@link GpuBackend#matMul} (a GEMM on CUDA from
 * {@link GpuBackend#gemmFrom()} tokens), {@link GpuBackend#causalAttention} and {@link GpuBackend#addRows} — against
 * float64 evaluations of the decoded weights, and against the backend's own one-token operators.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class GpuPrefillContract {
    protected GpuBackend gpu;
    protected GpuStream s;
    protected Arena arena;

    protected abstract GpuBackend open();

    /** Relative error (of Σ|terms|) a batched product may have: F16 operands on CUDA, float sums elsewhere. */
    protected abstract double gemmTolerance(GGMLType t, int tokens);

    @BeforeAll
    void setUp() {
        gpu = open();
        s = gpu.createStream();
        arena = Arena.ofShared();
    }

    @AfterAll
    void tearDown() {
        if (s != null) s.close();
        if (gpu != null) gpu.close();
        if (arena != null) arena.close();
    }

    private static void assertClose(float[] actual, double[] expected, double[] magnitude, double rel, String what) {
        assertThat(actual).as(what).hasSize(expected.length);
        for (int i = 0; i < expected.length; i++) {
            double tol = rel * (magnitude == null ? Math.abs(expected[i]) : magnitude[i]) + 1e-5;
            if (Math.abs(actual[i] - expected[i]) > tol || Float.isNaN(actual[i]))
                throw new AssertionError(what + "[" + i + "] = " + actual[i] + ", expected " + expected[i] + " ± " + tol);
        }
    }

    /** out[t][r] = W[r,:]·x[t,:] for every type the device kernels take, token counts on both sides of the GEMM threshold. */
    @Test
    void matMulMatchesFloat64() {
        Random rnd = new Random(41);
        for (GGMLType t : new GGMLType[] {GGMLType.F32, GGMLType.F16, GGMLType.Q8_0, GGMLType.Q4_0, GGMLType.Q4_K, GGMLType.Q5_K, GGMLType.Q6_K}) {
            int cols = t.blockSize == 256 ? 512 : 96, rows = 37;
            Tensor w = TestWeights.random("w", t, rows, cols, rnd, arena);
            for (int tokens : new int[] {1, 3, GpuBackend.gemmFrom(), 33}) matMulCase(w, tokens, rnd, t + " tokens " + tokens, gemmTolerance(t, tokens));
        }
    }

    /** Matrices above the slab size go through in row slabs, the last one partial. */
    @Test
    void matMulInRowSlabsMatchesFloat64() {
        Random rnd = new Random(42);
        withSlabHalves(10 * 256, () -> {   // 10 rows of 256 per slab: 4 slabs for 37 rows
            for (GGMLType t : new GGMLType[] {GGMLType.Q4_0, GGMLType.Q6_K}) {
                Tensor w = TestWeights.random("w", t, 37, 256, rnd, arena);
                assertThat(GpuBackend.gemmSlabRows(37, 256)).isEqualTo(10);
                matMulCase(w, 12, rnd, t + " in slabs", gemmTolerance(t, 12));
            }
        });
    }

    /** Runs {@code r} with {@code -Dpowerinfer4j.gpu.gemmSlabHalves=halves}, restoring it after. */
    private static void withSlabHalves(int halves, Runnable r) {
        String key = "powerinfer4j.gpu.gemmSlabHalves";
        String before = System.getProperty(key);
        System.setProperty(key, String.valueOf(halves));
        try {
            r.run();
        } finally {
            if (before == null) System.clearProperty(key);
            else System.setProperty(key, before);
        }
    }

    protected void matMulCase(Tensor w, int tokens, Random rnd, String what, double tolerance) {
        matMulCase(w, TestWeights.floats(rnd, tokens * w.rowLength(), 0.1f), tokens, what, tolerance);
    }

    /**
     * Inputs beyond F16's range (65504) in some tokens' rows — activations of that size occur in real models' down
     * projections — give the float64 products, not infinities: CUDA scales such a row by a power of two before the
     * F16 GEMM and its outputs back. The other rows are untouched.
     */
    @Test
    void matMulOfInputsBeyondF16sRangeMatchesFloat64() {
        Random rnd = new Random(47);
        int tokens = Math.max(12, GpuBackend.gemmFrom());
        for (GGMLType t : new GGMLType[] {GGMLType.F16, GGMLType.Q8_0, GGMLType.Q4_0, GGMLType.Q4_K}) {
            int cols = t.blockSize == 256 ? 512 : 96;
            Tensor w = TestWeights.random("w", t, 37, cols, rnd, arena);
            float[] x = TestWeights.floats(rnd, tokens * cols, 0.1f);
            float[] big = {3e5f, 7.7e6f, 65520f, 1e20f};
            for (int k = 0; k < big.length; k++)
                for (int c = 0; c < cols; c++) x[(2 * k + 1) * cols + c] *= big[k];   // rows 1, 3, 5, 7: up to 1e20 × 0.1
            matMulCase(w, x, tokens, t + " with rows beyond 65504", gemmTolerance(t, tokens));
        }
    }

    private void matMulCase(Tensor w, float[] x, int tokens, String what, double tolerance) {
        productCase(w, x, tokens, false, what, tolerance);
    }

    /** out = x·Wᵀ ({@link GpuBackend#matMul}) or, with {@code axpy}, h·W ({@link GpuBackend#axpyMatMul}) against float64. */
    private void productCase(Tensor w, float[] in, int tokens, boolean axpy, String what, double tolerance) {
        int rows = w.rows(), cols = w.rowLength(), outLen = axpy ? cols : rows;
        double[] exp = new double[tokens * outLen], mag = new double[tokens * outLen];
        for (int r = 0; r < rows; r++) {
            float[] row = TestWeights.row(w, r);
            for (int k = 0; k < tokens; k++)
                for (int c = 0; c < cols; c++) {
                    double p = axpy ? (double) in[k * rows + r] * row[c] : (double) row[c] * in[k * cols + c];
                    int o = k * outLen + (axpy ? c : r);
                    exp[o] += p;
                    mag[o] += Math.abs(p);
                }
        }
        GpuMatrix m = gpu.uploadMatrix(s, w);
        try (GpuBuffer xb = gpu.uploadFloats(s, in); GpuBuffer out = gpu.allocate(4L * tokens * outLen + 64)) {
            if (axpy) gpu.axpyMatMul(s, m, xb, out, tokens);
            else gpu.matMul(s, m, xb, out, tokens);
            assertClose(gpu.downloadFloats(s, out, 0, tokens * outLen), exp, mag, tolerance, what);
        } finally {
            m.data().close();
        }
    }

    /**
     * y[t] = h[t]·W over neuron-major rows (the hybrid FFN's down_t) for every type the axpy kernels take, token
     * counts on both sides of the GEMM threshold, h half zeros as after a ReLU; in row slabs (the last partial); and
     * with rows of h beyond F16's range.
     */
    @Test
    void axpyMatMulMatchesFloat64() {
        Random rnd = new Random(51);
        for (GGMLType t : new GGMLType[] {GGMLType.F32, GGMLType.F16, GGMLType.Q8_0, GGMLType.Q4_0}) {
            Tensor w = TestWeights.random("down_t", t, 45, 96, rnd, arena);
            for (int tokens : new int[] {1, 3, GpuBackend.gemmFrom(), 33})
                axpyMatMulCase(w, TestWeights.floats(rnd, tokens * 45, 0.5f), tokens, t + " tokens " + tokens, gemmTolerance(t, tokens));
            int tokens = Math.max(12, GpuBackend.gemmFrom());
            float[] h = TestWeights.floats(rnd, tokens * 45, 0.5f);
            for (int j = 0; j < 45; j++) {
                h[45 + j] *= 2e5f;
                h[3 * 45 + j] *= 1e19f;
            }
            axpyMatMulCase(w, h, tokens, t + " with rows beyond 65504", gemmTolerance(t, tokens));
        }
        withSlabHalves(10 * 96, () -> {   // 10 rows of 96 per slab: 5 slabs for 45 rows
            for (GGMLType t : new GGMLType[] {GGMLType.Q8_0, GGMLType.Q4_0}) {
                Tensor w = TestWeights.random("down_t", t, 45, 96, rnd, arena);
                assertThat(GpuBackend.gemmSlabRows(45, 96)).isEqualTo(10);
                axpyMatMulCase(w, TestWeights.floats(rnd, 12 * 45, 0.5f), 12, t + " in slabs", gemmTolerance(t, 12));
            }
        });
    }

    private void axpyMatMulCase(Tensor w, float[] h, int tokens, String what, double tolerance) {
        productCase(w, h, tokens, true, what, tolerance);
    }

    /** maskRows zeroes exactly the rows whose neuron (through the row map, or itself) the token's mask leaves out. */
    @Test
    void maskRowsZeroesTheLeftOutNeuronsOfEachToken() {
        Random rnd = new Random(53);
        int tokens = 7, ff = 50;
        for (boolean mapped : new boolean[] {true, false}) {
            int k = mapped ? 19 : ff;
            int[] map = rnd.ints(0, ff).distinct().limit(k).toArray();
            float[] h = TestWeights.floats(rnd, tokens * k, 0f);
            byte[] mask = new byte[tokens * ff];
            for (int i = 0; i < mask.length; i++) mask[i] = (byte) (rnd.nextInt(3) == 0 ? 0 : 1 + rnd.nextInt(255));
            float[] exp = h.clone();
            for (int t = 0; t < tokens; t++)
                for (int j = 0; j < k; j++) if (mask[t * ff + (mapped ? map[j] : j)] == 0) exp[t * k + j] = 0f;
            try (GpuBuffer hb = gpu.uploadFloats(s, h); GpuBuffer mb = gpu.allocate(mask.length); GpuBuffer rm = mapped ? gpu.uploadInts(s, map) : null) {
                gpu.upload(s, arena.allocateFrom(java.lang.foreign.ValueLayout.JAVA_BYTE, mask), mb, 0);
                gpu.maskRows(s, hb, mb, rm, k, tokens, ff);
                assertThat(gpu.downloadFloats(s, hb, 0, tokens * k)).as(mapped ? "row map" : "identity").containsExactly(exp);
            }
        }
    }

    /**
     * A batch of queries over a cache that holds their own keys: each one equals the one-token attention over its
     * prefix (its window, with soft-cap and sinks), computed in float64.
     */
    @Test
    void causalAttentionIsEachTokensAttentionOverItsPrefix() {
        causalAttentionCases(new Random(43), 8, 2, 24);
        causalAttentionCases(new Random(48), 4, 4, 136);   // head dimensions beyond one lane's 32
    }

    protected void causalAttentionCases(Random rnd, int heads, int kvHeads, int headDim) {
        int kvStride = kvHeads * headDim;
        float scale = (float) (1 / Math.sqrt(headDim));
        float[] sinks = java.util.Arrays.copyOf(new float[] {0.5f, -2f, 3f, 0f, 1f, -0.5f, 2f, -1f}, heads);
        for (int[] c : new int[][] {{1, 1, 0}, {5, 9, 0}, {40, 40, 0}, {17, 60, 6}, {3, 200, 0}, {33, 33, 40}}) {
            int tokens = c[0], nKv = c[1], window = c[2];
            for (boolean capped : new boolean[] {false, true})
            for (GGMLType kvType : new GGMLType[] {GGMLType.F32, GGMLType.F16}) {
                float softcap = capped ? 3f : 0f;
                float[] sk = capped ? sinks : null;
                float[] q = TestWeights.floats(rnd, tokens * heads * headDim, 0f);
                for (int i = 0; i < q.length; i++) q[i] *= 3;
                float[] k = TestWeights.floats(rnd, nKv * kvStride, 0f), v = TestWeights.floats(rnd, nKv * kvStride, 0f);
                GpuBuffer kb = cache(k, kvType), vb = cache(v, kvType);
                if (kvType == GGMLType.F16) {   // the reference sees the values the cache holds
                    k = halves(k);
                    v = halves(v);
                }
                double[] exp = new double[q.length];
                for (int t = 0; t < tokens; t++) {
                    int pos = nKv - tokens + t, lo = window > 0 ? Math.max(0, pos - window + 1) : 0;
                    double[] row = TestWeights.attention(q, t * heads * headDim, k, v, heads, kvHeads, headDim, kvStride, lo, pos + 1 - lo, scale,
                            softcap, sk);
                    System.arraycopy(row, 0, exp, t * heads * headDim, row.length);
                }
                try (kb; vb; GpuBuffer qb = gpu.uploadFloats(s, q); GpuBuffer out = gpu.allocate(4L * q.length);
                     GpuBuffer sb = sk == null ? null : gpu.uploadFloats(s, sk)) {
                    gpu.causalAttention(s, qb, kb, vb, out, heads, kvHeads, headDim, kvStride, nKv, tokens, window, scale, softcap, sb, kvType);
                    assertClose(gpu.downloadFloats(s, out, 0, q.length), exp, null, 1e-4,
                            "tokens " + tokens + " nKv " + nKv + " window " + window + " capped " + capped + " KV " + kvType);
                }
            }
        }
    }

    /** A device cache of {@code kvType} holding {@code values}: uploaded floats, or those rounded on the device by {@link GpuBackend#toHalf}. */
    private GpuBuffer cache(float[] values, GGMLType kvType) {
        if (kvType == GGMLType.F32) return gpu.uploadFloats(s, values);
        GpuBuffer half = gpu.allocate(2L * Math.max(1, values.length));
        try (GpuBuffer f = gpu.uploadFloats(s, values)) {
            gpu.toHalf(s, f, half, values.length);
            gpu.synchronize(s);
        }
        return half;
    }

    private static float[] halves(float[] v) {
        float[] r = new float[v.length];
        for (int i = 0; i < v.length; i++) r[i] = Float.float16ToFloat(Float.floatToFloat16(v[i]));
        return r;
    }

    /** toHalf rounds as Java's floatToFloat16 (nearest, ties to even), overflow to infinity, subnormals and NaN included. */
    @Test
    void toHalfRoundsToNearestEven() {
        Random rnd = new Random(45);
        float[] x = new float[4096];
        for (int i = 0; i < x.length; i++) x[i] = Float.intBitsToFloat(rnd.nextInt());   // every exponent, NaN and infinities
        float[] special = {0f, -0f, 65504f, 65520f, 65519.99f, 1e-8f, 5.96e-8f, 2.98e-8f, 1 + 0x1p-11f, 1 + 0x3p-11f, Float.MIN_VALUE};
        System.arraycopy(special, 0, x, 0, special.length);
        try (GpuBuffer f = gpu.uploadFloats(s, x); GpuBuffer h = gpu.allocate(2L * x.length)) {
            gpu.toHalf(s, f, h, x.length);
            try (Arena a = Arena.ofConfined()) {
                var m = a.allocate(2L * x.length);
                gpu.download(s, h, 0, m);
                gpu.synchronize(s);
                for (int i = 0; i < x.length; i++) {
                    short want = Float.floatToFloat16(x[i]), got = m.getAtIndex(java.lang.foreign.ValueLayout.JAVA_SHORT, i);
                    if (Float.isNaN(x[i])) assertThat(Float.isNaN(Float.float16ToFloat(got))).as("NaN %d", i).isTrue();
                    else assertThat(got).as("x[%d] = %s", i, x[i]).isEqualTo(want);
                }
            }
        }
    }

    /** One token's attention over an F16 cache, long enough for CUDA's context splits: float64 over the cached halves. */
    @Test
    void attentionOverAnF16CacheMatchesFloat64() {
        Random rnd = new Random(46);
        int heads = 8, kvHeads = 2, headDim = 24, kvStride = kvHeads * headDim + 8;
        float scale = (float) (1 / Math.sqrt(headDim));
        for (int nKv : new int[] {1, 7, 900}) {
            float[] q = TestWeights.floats(rnd, heads * headDim, 0f);
            for (int i = 0; i < q.length; i++) q[i] *= 3;
            float[] k = TestWeights.floats(rnd, nKv * kvStride, 0f), v = TestWeights.floats(rnd, nKv * kvStride, 0f);
            GpuBuffer kb = cache(k, GGMLType.F16), vb = cache(v, GGMLType.F16);
            double[] exp = TestWeights.attention(q, 0, halves(k), halves(v), heads, kvHeads, headDim, kvStride, 0, nKv, scale, 0f, null);
            try (kb; vb; GpuBuffer qb = gpu.uploadFloats(s, q); GpuBuffer out = gpu.allocate(4L * heads * headDim)) {
                gpu.attention(s, qb, kb, vb, out, heads, kvHeads, headDim, kvStride, nKv, scale, 0f, null, GGMLType.F16);
                assertClose(gpu.downloadFloats(s, out, 0, heads * headDim), exp, null, 1e-4, "F16 cache, nKv " + nKv);
            }
            // the F16 cache's bytes are checked as halves: an F32-sized view is not asked for
            try (GpuBuffer small = gpu.allocate(2L * kvStride); GpuBuffer qb = gpu.allocate(4L * heads * headDim)) {
                assertThatThrownBy(() -> gpu.attention(s, qb, small, small, qb, heads, kvHeads, headDim, kvStride, 2, scale, 0f, null, GGMLType.F16))
                        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("F16 values");
                assertThatThrownBy(() -> gpu.attention(s, qb, small, small, qb, heads, kvHeads, headDim, kvStride, 1, scale, 0f, null, GGMLType.Q8_0))
                        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("F32 or F16");
            }
        }
    }

    @Test
    void addRowsAddsTheBiasToEveryRow() {
        float[] y = new float[3 * 5], b = {1f, -2f, 0.5f, 4f, 8f};
        for (int i = 0; i < y.length; i++) y[i] = i;
        try (GpuBuffer yb = gpu.uploadFloats(s, y); GpuBuffer bb = gpu.uploadFloats(s, b)) {
            gpu.addRows(s, yb, bb, 5, 3);
            float[] got = gpu.downloadFloats(s, yb, 0, y.length);
            for (int i = 0; i < y.length; i++) assertThat(got[i]).isEqualTo(y[i] + b[i % 5]);
        }
    }

    @Test
    void batchShapeErrorsAreReportedWhenIssued() {
        Tensor w = TestWeights.random("w", GGMLType.Q8_0, 4, 64, new Random(1), arena);
        GpuMatrix m = gpu.uploadMatrix(s, w);
        try (GpuBuffer x = gpu.allocate(4L * 64 * 2); GpuBuffer out = gpu.allocate(4L * 4 * 16); GpuBuffer q = gpu.allocate(4L * 64)) {
            assertThatThrownBy(() -> gpu.matMul(s, m, x, out, 16)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("x holds");
            assertThatThrownBy(() -> gpu.causalAttention(s, q, q, q, q, 1, 1, 64, 64, 1, 2, 0, 1f, 0f, null))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("2 query tokens over a cache of 1");
        } finally {
            m.data().close();
        }
    }
}
