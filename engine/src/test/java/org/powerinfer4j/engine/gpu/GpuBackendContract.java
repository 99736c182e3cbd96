package org.powerinfer4j.engine.gpu;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.powerinfer4j.engine.kernels.Kernels;
import org.powerinfer4j.engine.kernels.WorkerPool;
import org.powerinfer4j.engine.model.RopeType;
import org.powerinfer4j.engine.kernels.SparseOps;
import org.powerinfer4j.engine.tensor.GGMLType;
import org.powerinfer4j.engine.tensor.Tensor;

/**
 * What every {@link GpuBackend} must compute, checked against the CPU: {@link SparseOps} for the sparse operators
 * (where the CPU kernels support the weight type; otherwise a float64 evaluation of the decoded weights) and float64
 * evaluations of the layer math. Random shapes include row/column tails (odd sizes, partial tiles), empty and full
 * masks, and compact hot-row matrices addressed through a gpu_bucket-style row map.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class GpuBackendContract {
    protected GpuBackend gpu;
    protected GpuStream s;
    private WorkerPool pool;
    private Arena arena;

    /** The backend under test; may abort the class through an assumption. */
    protected abstract GpuBackend open();

    @BeforeAll
    void setUp() {
        gpu = open();
        s = gpu.createStream();
        pool = new WorkerPool(2);
        arena = Arena.ofShared();
    }

    @AfterAll
    void tearDown() {
        if (s != null) s.close();
        if (gpu != null) gpu.close();
        if (pool != null) pool.close();
        if (arena != null) arena.close();
    }

    // --- helpers ---------------------------------------------------------------------------------------------------

    private static boolean cpuKernels(GGMLType t) {
        try {
            Kernels.forType(t);
            return true;
        } catch (IllegalArgumentException e) {
            return false;
        }
    }

    private GpuBuffer upload(float[] v) {
        return gpu.uploadFloats(s, v);
    }

    private GpuBuffer uploadBytes(byte[] v) {
        GpuBuffer b = gpu.allocate(Math.max(1, v.length));
        try (Arena a = Arena.ofConfined()) {
            gpu.upload(s, a.allocateFrom(ValueLayout.JAVA_BYTE, v), b, 0);
            gpu.synchronize(s);
        }
        return b;
    }

    private float[] download(GpuBuffer b, int n) {
        return gpu.downloadFloats(s, b, 0, n);
    }

    /** |actual − expected| ≤ rel·magnitude + 1e-5 element-wise, magnitude = Σ|terms| of each expected value. */
    private static void assertClose(float[] actual, double[] expected, double[] magnitude, double rel, String what) {
        assertThat(actual).as(what).hasSize(expected.length);
        for (int i = 0; i < expected.length; i++) {
            double tol = rel * (magnitude == null ? Math.abs(expected[i]) : magnitude[i]) + 1e-5;
            if (Math.abs(actual[i] - expected[i]) > tol || Float.isNaN(actual[i]))
                throw new AssertionError(what + "[" + i + "] = " + actual[i] + ", expected " + expected[i] + " ± " + tol);
        }
    }

    private static double[] toDouble(float[] v) {
        double[] d = new double[v.length];
        for (int i = 0; i < v.length; i++) d[i] = v[i];
        return d;
    }

    private static int[] sortedSubset(Random rnd, int n, double fraction) {
        List<Integer> l = new ArrayList<>();
        for (int i = 0; i < n; i++) if (rnd.nextDouble() < fraction) l.add(i);
        return l.stream().mapToInt(Integer::intValue).toArray();
    }

    private static GGMLType[] types() {
        return new GGMLType[] {GGMLType.F32, GGMLType.F16, GGMLType.Q8_0, GGMLType.Q4_0, GGMLType.Q4_K, GGMLType.Q5_K, GGMLType.Q6_K};
    }

    // --- FFN operators ---------------------------------------------------------------------------------------------

    @Test
    void denseMatVecMatchesCpu() {
        Random rnd = new Random(11);
        for (GGMLType t : types()) {
            int[][] shapes = t.blockSize == 256 ? new int[][] {{37, 256}, {300, 512}, {1, 256}, {9, 4096}}
                    : t.isQuantized() ? new int[][] {{37, 64}, {300, 96}, {1, 32}, {9, 4096}} : new int[][] {{37, 64}, {300, 96}, {5, 77}, {3, 200}, {2, 6}};
            for (int[] sh : shapes) {
                int rows = sh[0], cols = sh[1];
                Tensor w = TestWeights.random("w", t, rows, cols, rnd, arena);
                float[] x = TestWeights.floats(rnd, cols, 0.1f);
                for (boolean relu : new boolean[] {false, true}) {
                    double[] exp = new double[rows], mag = new double[rows];
                    for (int r = 0; r < rows; r++) {
                        float[] row = TestWeights.row(w, r);
                        for (int c = 0; c < cols; c++) {
                            exp[r] += (double) row[c] * x[c];
                            mag[r] += Math.abs((double) row[c] * x[c]);
                        }
                        if (relu) exp[r] = Math.max(0, exp[r]);
                    }
                    GpuMatrix m = gpu.uploadMatrix(s, w);
                    try (GpuBuffer xb = upload(x); GpuBuffer out = gpu.allocate(4L * rows)) {
                        gpu.matVec(s, m, xb, out, relu);
                        assertClose(download(out, rows), exp, mag, 1e-4, t + " " + rows + "x" + cols + " relu=" + relu);
                    } finally {
                        m.data().close();
                    }
                }
            }
        }
    }

    /** Compact hot rows (gpu_bucket), predictor mask over all neurons: equals SparseOps over the active hot rows. */
    @ParameterizedTest
    @EnumSource(value = GGMLType.class, names = {"F32", "F16", "Q8_0", "Q4_0", "Q4_K", "Q5_K", "Q6_K"})
    void rowSparseMatVecOverHotRowsMatchesSparseOps(GGMLType t) {
        Random rnd = new Random(12 + t.ordinal());
        boolean cpu = cpuKernels(t);
        int[] dims = t.blockSize == 256 ? new int[] {256, 512} : t.isQuantized() ? new int[] {128, 96} : new int[] {72, 70, 128};
        for (int dim : dims)
            for (double density : new double[] {0.0, 0.35, 1.0}) {
                int ff = 700;
                Tensor w = TestWeights.random("up", t, ff, dim, rnd, arena);
                int[] bucket = sortedSubset(rnd, ff, 0.6);
                byte[] mask = new byte[ff];
                List<Integer> active = new ArrayList<>();
                for (int r = 0; r < ff; r++) mask[r] = (byte) (rnd.nextDouble() < density ? 1 : 0);
                for (int r : bucket) if (mask[r] != 0) active.add(r);
                float[] x = TestWeights.floats(rnd, dim, 0.05f);
                // CPU: the active hot rows of the full matrix, in neuron order
                float[] full = new float[ff];
                int[] act = active.stream().mapToInt(Integer::intValue).toArray();
                double[] mag = new double[bucket.length];
                if (cpu) SparseOps.rowSparseMatVec(pool, w, act, act.length, x, 0, full, 0);
                for (int j = 0; j < bucket.length; j++) {
                    float[] row = TestWeights.row(w, bucket[j]);
                    double d = 0;
                    for (int c = 0; c < dim; c++) {
                        d += (double) row[c] * x[c];
                        mag[j] += Math.abs((double) row[c] * x[c]);
                    }
                    if (!cpu && mask[bucket[j]] != 0) full[bucket[j]] = (float) d;
                }
                double[] exp = new double[bucket.length];
                for (int j = 0; j < bucket.length; j++) exp[j] = mask[bucket[j]] != 0 ? full[bucket[j]] : 0;
                GpuMatrix hot = gpu.uploadRows(s, w, bucket, bucket.length);
                try (GpuBuffer xb = upload(x); GpuBuffer mb = uploadBytes(mask); GpuBuffer map = gpu.uploadInts(s, bucket);
                     GpuBuffer out = gpu.allocate(4L * Math.max(1, bucket.length))) {
                    gpu.rowSparseMatVec(s, hot, xb, mb, map, out);
                    assertClose(download(out, bucket.length), exp, mag, 1e-4, t + " dim " + dim + " density " + density);
                } finally {
                    hot.data().close();
                }
            }
    }

    @Test
    void rowSparseMatVecWithoutRowMapSkipsMaskedRows() {
        Random rnd = new Random(13);
        Tensor w = TestWeights.random("w", GGMLType.Q4_0, 513, 64, rnd, arena);
        byte[] mask = new byte[513];
        for (int r = 0; r < 513; r += 3) mask[r] = 1;
        float[] x = TestWeights.floats(rnd, 64, 0f);
        GpuMatrix m = gpu.uploadMatrix(s, w);
        try (GpuBuffer xb = upload(x); GpuBuffer mb = uploadBytes(mask); GpuBuffer out = gpu.allocate(4L * 513)) {
            gpu.matVec(s, m, xb, out, false);
            float[] dense = download(out, 513);
            gpu.rowSparseMatVec(s, m, xb, mb, null, out);
            float[] sparse = download(out, 513);
            for (int r = 0; r < 513; r++) assertThat(sparse[r]).as("row %d", r).isEqualTo(mask[r] != 0 ? dense[r] : 0f);
        } finally {
            m.data().close();
        }
    }

    @ParameterizedTest
    @EnumSource(value = GGMLType.class, names = {"F32", "F16", "Q8_0", "Q4_0"})
    void sparseAxpyMatchesSparseOps(GGMLType t) {
        Random rnd = new Random(14 + t.ordinal());
        boolean cpu = cpuKernels(t);
        int[] dims = t.isQuantized() ? new int[] {544, 64, 1056} : new int[] {544, 77, 1030};
        int[] rowCounts = {1300, 5, 0};
        for (int dim : dims)
            for (int rows : rowCounts) {
                Tensor w = TestWeights.random("down_t", t, rows, dim, rnd, arena);
                float[][] decoded = new float[rows][];
                for (int r = 0; r < rows; r++) decoded[r] = TestWeights.row(w, r);
                GpuMatrix m = gpu.uploadMatrix(s, w);
                for (float zeros : new float[] {0.6f, 1.0f})
                    for (boolean accumulate : new boolean[] {false, true}) {
                        float[] h = TestWeights.floats(rnd, rows, zeros);
                        float[] y0 = TestWeights.floats(rnd, dim, 0f);
                        int[] all = new int[rows];
                        for (int r = 0; r < rows; r++) all[r] = r;
                        double[] mag = new double[dim], exp = new double[dim];
                        float[] cpuY = new float[dim];
                        if (cpu) SparseOps.sparseAxpy(pool, w, all, rows, h, rows, 1, cpuY);
                        for (int r = 0; r < rows; r++) {
                            if (h[r] == 0f) continue;
                            float[] row = decoded[r];
                            for (int c = 0; c < dim; c++) {
                                mag[c] += Math.abs((double) h[r] * row[c]);
                                if (!cpu) exp[c] += (double) h[r] * row[c];
                            }
                        }
                        for (int c = 0; c < dim; c++) {
                            if (cpu) exp[c] = cpuY[c];
                            if (accumulate) {
                                exp[c] += y0[c];
                                mag[c] += Math.abs(y0[c]);
                            }
                        }
                        try (GpuBuffer hb = upload(h); GpuBuffer y = upload(y0)) {
                            gpu.sparseAxpy(s, m, hb, y, accumulate);
                            assertClose(download(y, dim), exp, mag, 1e-4, t + " " + rows + "x" + dim + " zeros " + zeros + " acc " + accumulate);
                            // deterministic: the same call gives bit-identical results
                            if (!accumulate) {
                                float[] first = download(y, dim);
                                gpu.sparseAxpy(s, m, hb, y, false);
                                assertThat(download(y, dim)).containsExactly(first);
                            }
                        }
                    }
                m.data().close();
            }
    }

    @Test
    void predictorProducesLogitsMaskAndCount() {
        Random rnd = new Random(15);
        int dim = 96, hidden = 40, ff = 333;
        float threshold = 0.2f;
        Tensor fc1 = TestWeights.random("fc1", GGMLType.F16, hidden, dim, rnd, arena);
        Tensor fc2 = TestWeights.random("fc2", GGMLType.F16, ff, hidden, rnd, arena);
        float[] x = TestWeights.floats(rnd, dim, 0f);
        double[] hid = new double[hidden];
        for (int i = 0; i < hidden; i++) {
            float[] row = TestWeights.row(fc1, i);
            for (int c = 0; c < dim; c++) hid[i] += (double) row[c] * x[c];
            hid[i] = Math.max(0, hid[i]);
        }
        double[] logits = new double[ff], mag = new double[ff];
        for (int r = 0; r < ff; r++) {
            float[] row = TestWeights.row(fc2, r);
            for (int i = 0; i < hidden; i++) {
                logits[r] += row[i] * hid[i];
                mag[r] += Math.abs(row[i] * hid[i]);
            }
        }
        GpuMatrix m1 = gpu.uploadMatrix(s, fc1), m2 = gpu.uploadMatrix(s, fc2);
        try (GpuBuffer xb = upload(x); GpuBuffer hb = gpu.allocate(4L * hidden); GpuBuffer lb = gpu.allocate(4L * ff); GpuBuffer mb = gpu.allocate(ff);
             GpuBuffer cb = gpu.uploadInts(s, new int[] {5}); Arena a = Arena.ofConfined()) {
            gpu.predictor(s, m1, m2, xb, hb, lb, threshold, mb, cb);
            float[] got = download(lb, ff);
            assertClose(got, logits, mag, 1e-4, "logits");
            MemorySegment maskHost = a.allocate(ff), countHost = a.allocate(4);
            gpu.download(s, mb, 0, maskHost);
            gpu.download(s, cb, 0, countHost);
            gpu.synchronize(s);
            int active = 0;
            for (int r = 0; r < ff; r++) {
                boolean on = maskHost.get(ValueLayout.JAVA_BYTE, r) != 0;
                assertThat(on).as("mask %d (logit %f)", r, got[r]).isEqualTo(got[r] >= threshold);
                if (on) active++;
            }
            assertThat(active).isBetween(1, ff - 1);
            assertThat(countHost.get(ValueLayout.JAVA_INT, 0)).isEqualTo(5 + active);
        } finally {
            m1.data().close();
            m2.data().close();
        }
    }

    @ParameterizedTest
    @EnumSource(GpuActivation.class)
    void activationsMatchTheCpuFormulas(GpuActivation act) {
        Random rnd = new Random(16);
        int n = 1001;
        float[] g = TestWeights.floats(rnd, n, 0.1f), u = TestWeights.floats(rnd, n, 0.1f);
        for (int i = 0; i < n; i += 7) g[i] *= 40;   // GELU's and SiLU's saturated tails
        if (act == GpuActivation.SWIGLU_OAI) for (int i = 0; i < n; i += 3) { g[i] *= 150; u[i] *= 150; }   // past both clamps (±7)
        for (boolean gated : new boolean[] {true, false}) {
            if (!gated && (act == GpuActivation.DRELU || act == GpuActivation.SWIGLU_OAI)) continue;   // these need both projections
            double[] exp = new double[n];
            for (int i = 0; i < n; i++) {
                double x = g[i], up = gated ? u[i] : 1;
                exp[i] = switch (act) {
                    case SWIGLU -> x / (1 + Math.exp(-x)) * up;
                    case REGLU -> x > 0 ? x * up : 0;
                    case DRELU -> x > 0 && up > 0 ? x * up : 0;
                    case RELU -> Math.max(0, x);
                    case GELU -> 0.5 * x * (1 + erf(x / Math.sqrt(2))) * up;
                    case GELU_TANH -> 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x * x * x))) * up;
                    case SWIGLU_OAI -> Math.min(x, 7) / (1 + Math.exp(-1.702 * Math.min(x, 7))) * (Math.max(-7, Math.min(up, 7)) + 1);
                };
            }
            try (GpuBuffer gb = upload(g); GpuBuffer ub = upload(u)) {
                gpu.activation(s, act, gb, gated && act != GpuActivation.RELU ? ub : null, gb, n); // in place, as the executor uses it
                float[] got = download(gb, n);
                assertClose(got, exp, null, 1e-5, act + (gated ? " gated" : " plain"));
                for (int i = 0; i < n; i++) if (act.ordinal() <= GpuActivation.RELU.ordinal() && act != GpuActivation.SWIGLU && exp[i] == 0) assertThat(got[i]).isZero();
            }
        }
    }

    /** erf by Simpson's rule over e^(−t²) on 2000 intervals: float64-accurate far beyond the 1e-5 checked. */
    static double erf(double x) {
        double a = Math.min(Math.abs(x), 8), h = a / 2000, sum = 1 + Math.exp(-a * a);
        for (int k = 1; k < 2000; k++) sum += (k % 2 == 1 ? 4 : 2) * Math.exp(-(k * h) * (k * h));
        return Math.signum(x) * 2 / Math.sqrt(Math.PI) * sum * h / 3;
    }

    @Test
    void gatherAndScatterAddFollowTheIndexMap() {
        Random rnd = new Random(17);
        int ff = 500;
        int[] bucket = sortedSubset(rnd, ff, 0.3);
        float[] full = TestWeights.floats(rnd, ff, 0f), base = TestWeights.floats(rnd, ff, 0f);
        try (GpuBuffer src = upload(full); GpuBuffer idx = gpu.uploadInts(s, bucket); GpuBuffer compact = gpu.allocate(4L * bucket.length);
             GpuBuffer dst = upload(base)) {
            gpu.gather(s, src, idx, compact, bucket.length);
            float[] c = download(compact, bucket.length);
            for (int j = 0; j < bucket.length; j++) assertThat(c[j]).isEqualTo(full[bucket[j]]);
            gpu.scatterAdd(s, compact, idx, dst, bucket.length);
            float[] d = download(dst, ff);
            float[] exp = base.clone();
            for (int j = 0; j < bucket.length; j++) exp[bucket[j]] += c[j];
            assertThat(d).containsExactly(exp);
        }
    }

    @Test
    void maskedAddTouchesOnlyActiveRows() {
        Random rnd = new Random(19);
        int ff = 300;
        int[] hot = sortedSubset(rnd, ff, 0.4);
        int k = hot.length;
        byte[] mask = new byte[ff];
        for (int i = 0; i < ff; i++) mask[i] = (byte) (rnd.nextBoolean() ? 1 : 0);
        float[] y = TestWeights.floats(rnd, k, 0f), x = TestWeights.floats(rnd, k, 0f);
        try (GpuBuffer yb = upload(y); GpuBuffer xb = upload(x); GpuBuffer map = gpu.uploadInts(s, hot); GpuBuffer mb = gpu.allocate(ff)) {
            uploadBytes(mask, mb);
            gpu.maskedAdd(s, yb, xb, mb, map, k);
            float[] got = download(yb, k);
            for (int j = 0; j < k; j++) assertThat(got[j]).as("row %d", j).isEqualTo(mask[hot[j]] != 0 ? y[j] + x[j] : y[j]);
        }
        float[] y2 = TestWeights.floats(rnd, ff, 0f), x2 = TestWeights.floats(rnd, ff, 0f);
        try (GpuBuffer yb = upload(y2); GpuBuffer xb = upload(x2); GpuBuffer mb = gpu.allocate(ff)) {   // no row map: row j is neuron j
            uploadBytes(mask, mb);
            gpu.maskedAdd(s, yb, xb, mb, null, ff);
            float[] got = download(yb, ff);
            for (int j = 0; j < ff; j++) assertThat(got[j]).isEqualTo(mask[j] != 0 ? y2[j] + x2[j] : y2[j]);
        }
    }

    private void uploadBytes(byte[] bytes, GpuBuffer dst) {
        try (java.lang.foreign.Arena a = java.lang.foreign.Arena.ofConfined()) {
            java.lang.foreign.MemorySegment m = a.allocate(bytes.length);
            java.lang.foreign.MemorySegment.copy(java.lang.foreign.MemorySegment.ofArray(bytes), 0, m, 0, bytes.length);
            gpu.upload(s, m, dst, 0);
            gpu.synchronize(s);
        }
    }

    @Test
    void scaleAddIsOneFusedMultiplyAddPerElement() {
        Random rnd = new Random(18);
        int n = 777;
        float[] x = TestWeights.floats(rnd, n, 0.1f), y = TestWeights.floats(rnd, n, 0f);
        float alpha = 0.3716f;
        try (GpuBuffer xb = upload(x); GpuBuffer yb = upload(y)) {
            gpu.scaleAdd(s, yb, xb, alpha, n - 1);   // the last element is outside n: untouched
            float[] got = download(yb, n);
            for (int i = 0; i < n - 1; i++) assertThat(got[i]).as("y[%d]", i).isEqualTo(Math.fma(alpha, x[i], y[i]));
            assertThat(got[n - 1]).isEqualTo(y[n - 1]);
        }
    }

    // --- dense layer pieces ----------------------------------------------------------------------------------------

    @Test
    void rmsNormMatchesCpu() {
        Random rnd = new Random(18);
        int n = 1000, rows = 3;
        float eps = 1e-5f;
        float[] x = TestWeights.floats(rnd, n * rows, 0f), w = TestWeights.floats(rnd, n, 0f);
        double[] exp = new double[n * rows];
        for (int r = 0; r < rows; r++) {
            double ss = 0;
            for (int i = 0; i < n; i++) ss += (double) x[r * n + i] * x[r * n + i];
            double scale = 1 / Math.sqrt(ss / n + eps);
            for (int i = 0; i < n; i++) exp[r * n + i] = x[r * n + i] * scale * w[i];
        }
        try (GpuBuffer xb = upload(x); GpuBuffer wb = upload(w); GpuBuffer out = gpu.allocate(4L * n * rows)) {
            gpu.rmsNorm(s, xb, wb, out, n, rows, eps);
            assertClose(download(out, n * rows), exp, null, 1e-5, "rmsnorm");
            gpu.rmsNorm(s, xb, wb, xb, n, rows, eps); // in place
            assertClose(download(xb, n * rows), exp, null, 1e-5, "rmsnorm in place");
        }
    }

    @Test
    void layerNormMatchesCpuWithAndWithoutBias() {
        Random rnd = new Random(22);
        int n = 1000, rows = 3;
        float eps = 1e-5f;
        float[] x = TestWeights.floats(rnd, n * rows, 0f), w = TestWeights.floats(rnd, n, 0f), b = TestWeights.floats(rnd, n, 0f);
        for (int i = 0; i < x.length; i++) x[i] += 0.7f;   // a mean to remove
        for (boolean bias : new boolean[] {true, false}) {
            double[] exp = new double[n * rows];
            for (int r = 0; r < rows; r++) {
                double mean = 0, var = 0;
                for (int i = 0; i < n; i++) mean += x[r * n + i];
                mean /= n;
                for (int i = 0; i < n; i++) var += (x[r * n + i] - mean) * (x[r * n + i] - mean);
                double scale = 1 / Math.sqrt(var / n + eps);
                for (int i = 0; i < n; i++) exp[r * n + i] = (x[r * n + i] - mean) * scale * w[i] + (bias ? b[i] : 0);
            }
            try (GpuBuffer xb = upload(x); GpuBuffer wb = upload(w); GpuBuffer bb = upload(b); GpuBuffer out = gpu.allocate(4L * n * rows)) {
                gpu.layerNorm(s, xb, wb, bias ? bb : null, out, n, rows, eps);
                assertClose(download(out, n * rows), exp, null, 1e-5, "layernorm");
                gpu.layerNorm(s, xb, wb, bias ? bb : null, xb, n, rows, eps); // in place
                assertClose(download(xb, n * rows), exp, null, 1e-5, "layernorm in place");
            }
        }
    }

    @Test
    void ropeScalesCosAndSinByMscale() {
        Random rnd = new Random(23);
        int heads = 2, headDim = 8, nRot = 8, pos0 = 5;
        float mscale = 1.3f;
        float[] v = TestWeights.floats(rnd, heads * headDim, 0f), inv = GpuBackend.ropeInvFreq(nRot, 500f);
        double[] exp = toDouble(v);
        for (int h = 0; h < heads; h++)
            for (int i = 0; i < nRot / 2; i++) {
                int i0 = h * headDim + 2 * i, i1 = i0 + 1;
                double theta = (float) pos0 * inv[i];
                exp[i0] = mscale * (v[i0] * Math.cos(theta) - v[i1] * Math.sin(theta));
                exp[i1] = mscale * (v[i0] * Math.sin(theta) + v[i1] * Math.cos(theta));
            }
        try (GpuBuffer vb = upload(v); GpuBuffer fb = upload(inv)) {
            gpu.rope(s, vb, 1, heads * headDim, heads, headDim, nRot, pos0, fb, mscale, RopeType.NORMAL);
            assertClose(download(vb, v.length), exp, null, 1e-5, "rope mscale");
        }
    }

    @ParameterizedTest
    @EnumSource(RopeType.class)
    void ropeRotatesLikeTheCpu(RopeType type) {
        Random rnd = new Random(19);
        int tokens = 3, heads = 4, headDim = 16, nRot = 12, stride = 70, pos0 = 37;
        float[] v = TestWeights.floats(rnd, (tokens - 1) * stride + heads * headDim, 0f);
        float[] inv = GpuBackend.ropeInvFreq(nRot, 10000f);
        double[] exp = toDouble(v);
        for (int t = 0; t < tokens; t++)
            for (int h = 0; h < heads; h++)
                for (int i = 0; i < nRot / 2; i++) {
                    int base = t * stride + h * headDim;
                    int i0 = base + (type == RopeType.NORMAL ? 2 * i : i), i1 = type == RopeType.NORMAL ? i0 + 1 : i0 + nRot / 2;
                    double theta = (float) (pos0 + t) * inv[i];
                    exp[i0] = v[i0] * Math.cos(theta) - v[i1] * Math.sin(theta);
                    exp[i1] = v[i0] * Math.sin(theta) + v[i1] * Math.cos(theta);
                }
        try (GpuBuffer vb = upload(v); GpuBuffer fb = upload(inv)) {
            gpu.rope(s, vb, tokens, stride, heads, headDim, nRot, pos0, fb, type);
            assertClose(download(vb, v.length), exp, null, 1e-5, "rope " + type);
        }
        // the table matches the CPU forward pass's accumulation: theta_scale^i in float
        float scale = (float) Math.pow(10000f, -2.0f / nRot);
        assertThat(inv[0]).isEqualTo(1f);
        assertThat(inv[2]).isEqualTo(scale * scale);
    }

    @Test
    void attentionWithGroupedHeadsMatchesSoftmaxReference() {
        attentionMatchesSoftmaxReference(0f, null);
    }

    @Test
    void attentionSoftCapsScoresAndCountsSinks() {
        float[] sinks = {0.5f, -2f, 3f, 0f, 1f, -0.5f, 2f, -1f};
        attentionMatchesSoftmaxReference(4f, null);
        attentionMatchesSoftmaxReference(0f, sinks);
        attentionMatchesSoftmaxReference(2.5f, sinks);
    }

    /** Softmax(cap(q·k·scale)) over positions (plus a per-head sink logit that takes weight and adds no value) · v, in float64. */
    private void attentionMatchesSoftmaxReference(float softcap, float[] sinks) {
        Random rnd = new Random(20);
        int heads = 8, kvHeads = 2, headDim = 24, kvStride = kvHeads * headDim + 8;
        float scale = (float) (1 / Math.sqrt(headDim));
        for (int nKv : new int[] {1, 7, 900}) {
            float[] q = TestWeights.floats(rnd, heads * headDim, 0f);
            float[] k = TestWeights.floats(rnd, nKv * kvStride, 0f), v = TestWeights.floats(rnd, nKv * kvStride, 0f);
            for (int i = 0; i < q.length; i++) q[i] *= 3; // peaked softmax
            double[] exp = TestWeights.attention(q, 0, k, v, heads, kvHeads, headDim, kvStride, 0, nKv, scale, softcap, sinks);
            try (GpuBuffer qb = upload(q); GpuBuffer kb = upload(k); GpuBuffer vb = upload(v); GpuBuffer out = gpu.allocate(4L * heads * headDim);
                 GpuBuffer sb = sinks == null ? null : upload(sinks)) {
                gpu.attention(s, qb, kb, vb, out, heads, kvHeads, headDim, kvStride, nKv, scale, softcap, sb);
                assertClose(download(out, heads * headDim), exp, null, 1e-4, "attention nKv " + nKv + " softcap " + softcap + " sinks " + (sinks != null));
            }
        }
    }

    @Test
    void addAndCopies() {
        Random rnd = new Random(21);
        float[] a = TestWeights.floats(rnd, 777, 0f), b = TestWeights.floats(rnd, 777, 0f);
        try (GpuBuffer ab = upload(a); GpuBuffer bb = upload(b); GpuBuffer c = gpu.allocate(4L * 777)) {
            gpu.add(s, ab, bb, 777);
            float[] sum = download(ab, 777);
            for (int i = 0; i < 777; i++) assertThat(sum[i]).isEqualTo(a[i] + b[i]);
            gpu.copy(s, bb, 4, c, 0, 4L * 776);
            assertThat(download(c, 776)).containsExactly(java.util.Arrays.copyOfRange(b, 1, 777));
            gpu.zero(s, c);
            assertThat(download(c, 777)).containsOnly(0f);
            assertThat(gpu.downloadFloats(s, bb.floats(10, 5), 0, 5)).containsExactly(java.util.Arrays.copyOfRange(b, 10, 15));
        }
    }

    // --- streams ---------------------------------------------------------------------------------------------------

    @Test
    void eventsOrderWorkAcrossStreams() {
        int n = 1 << 20;
        float[] ones = new float[n];
        java.util.Arrays.fill(ones, 1f);
        try (GpuStream s1 = gpu.createStream(); GpuStream s2 = gpu.createStream(); GpuBuffer a = gpu.uploadFloats(s, ones);
             GpuBuffer b = gpu.allocate(4L * n)) {
            gpu.zero(s2, b);
            GpuEvent zeroed = gpu.record(s2);
            gpu.wait(s1, zeroed);
            for (int i = 0; i < 8; i++) gpu.add(s1, a, a, n);   // a = 256 after eight doublings
            GpuEvent done = gpu.record(s1);
            gpu.wait(s2, done);
            gpu.add(s2, b, a, n);                                // must see the final a
            gpu.synchronize(s2);
            assertThat(done.isComplete()).isTrue();
            float[] got = gpu.downloadFloats(s2, b, 0, n);
            assertThat(got[0]).isEqualTo(256f);
            assertThat(got[n - 1]).isEqualTo(256f);
            gpu.synchronize(done);
            done.close();
            zeroed.close();
        }
    }

    /** Timing events bracket device work: the measured time is positive and within the host's wall time. */
    @Test
    void timedEventsMeasureDeviceWork() {
        int n = 1 << 20;
        try (GpuStream st = gpu.createStream(); GpuBuffer a = gpu.allocate(4L * n)) {
            gpu.zero(st, a);
            long t0 = System.nanoTime();
            GpuEvent from = gpu.recordTimed(st);
            for (int i = 0; i < 8; i++) gpu.add(st, a, a, n);
            GpuEvent to = gpu.recordTimed(st);
            gpu.synchronize(st);
            long wall = System.nanoTime() - t0;
            long device = gpu.elapsedNanos(from, to);
            assertThat(device).isPositive().isLessThanOrEqualTo(wall);
            assertThat(gpu.elapsedNanos(to, to)).isZero();
            from.close();
            to.close();
        }
    }

    /** One event recorded again and again (as the hybrid FFN does per layer): each wait covers the latest record. */
    @Test
    void reusedEventWaitsForItsLatestRecord() {
        int n = 1 << 18;
        float[] ones = new float[n];
        java.util.Arrays.fill(ones, 1f);
        try (GpuStream st = gpu.createStream(); GpuBuffer a = gpu.uploadFloats(st, ones); GpuEvent e = gpu.createEvent(false)) {
            assertThat(e.isComplete()).as("never recorded").isTrue();
            for (int round = 1; round <= 3; round++) {
                for (int i = 0; i < 4; i++) gpu.add(st, a, a, n);
                gpu.record(e, st);
                gpu.synchronize(e);
                assertThat(e.isComplete()).isTrue();
                float[] got = gpu.downloadFloats(st, a, 0, n);
                assertThat(got[n - 1]).as("round %d", round).isEqualTo((float) Math.pow(16, round));
            }
        }
    }

    @Test
    void shapeErrorsAreReportedWhenIssued() {
        Random rnd = new Random(22);
        Tensor w = TestWeights.random("w", GGMLType.F16, 10, 64, rnd, arena);
        GpuMatrix m = gpu.uploadMatrix(s, w);
        try (GpuBuffer x = gpu.allocate(4 * 64); GpuBuffer small = gpu.allocate(4 * 9)) {
            assertThatThrownBy(() -> gpu.matVec(s, m, x, small, false)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("out");
            assertThatThrownBy(() -> gpu.matVec(s, m, small, x, false)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("x");
            assertThatThrownBy(() -> gpu.attention(s, x, x, x, x, 3, 2, 16, 32, 1, 1f)).isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> new GpuMatrix(small, GGMLType.Q4_0, 2, 33)).isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> new GpuMatrix(small, GGMLType.Q4_K, 1, 256)).isInstanceOf(IllegalArgumentException.class);
        } finally {
            m.data().close();
        }
    }
}
