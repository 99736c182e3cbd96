package org.powerinfer4j.engine.kernels;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.atomic.AtomicInteger;
import org.powerinfer4j.engine.tensor.Tensor;

/**
 * Neuron-aware sparse operators on neuron-major weights (one neuron = one contiguous row), built on the
 * per-type {@link RowKernel}s so every ggml type the dense path supports works here too.
 *
 * <ul>
 *   <li>{@link #rowSparseMatVec}: {@code out[r] = W[r,:]·x} for the active rows only. Rows are handed out to
 *       threads in small chunks from a shared counter (dynamic balancing), and each row is computed by one
 *       thread in a fixed order, so results do not depend on the thread count.</li>
 *   <li>{@link #sparseAxpy}: {@code y = Σ_{r active, h_r ≠ 0} h_r · W[r,:]}, fused dequantize+axpy per row for one
 *       token. Small products run on the calling thread (waking the pool costs more). Each thread owns a fixed slice of the
 *       output columns and walks all active rows in order: no shared accumulator, no atomics, and the sum order
 *       per element is the same for any thread count (PowerInfer's CPU version adds per-thread partial sums
 *       into the output without synchronisation).</li>
 * </ul>
 */
public final class SparseOps {
    private static final int ROW_CHUNK = 8;

    private SparseOps() {}

    /** out[outOff + rows[i]] = dot(W[rows[i],:], x[xOff..]) for i < count; other outputs untouched. */
    public static void rowSparseMatVec(WorkerPool pool, Tensor w, int[] rows, int count, float[] x, int xOff, float[] out, int outOff) {
        RowKernel k = Kernels.forType(w.type());
        int n = w.rowLength();
        long rowBytes = w.rowBytes();
        MemorySegment data = w.data();
        if (count < 64 || pool.threads() == 1) {
            long sink = 0;
            for (int i = 0; i < count; i++) {
                if (i + PREFETCH_AHEAD < count) sink += touch(data, rows[i + PREFETCH_AHEAD] * rowBytes, rowBytes);
                out[outOff + rows[i]] = k.dot(data, rows[i] * rowBytes, x, xOff, n);
            }
            SINK = sink;
            return;
        }
        AtomicInteger next = new AtomicInteger();
        pool.run((thread, threads) -> {
            long sink = 0;
            for (int start; (start = next.getAndAdd(ROW_CHUNK)) < count; ) {
                int end = Math.min(count, start + ROW_CHUNK);
                for (int i = start; i < end; i++) {
                    if (i + PREFETCH_AHEAD < end) sink += touch(data, rows[i + PREFETCH_AHEAD] * rowBytes, rowBytes);
                    out[outOff + rows[i]] = k.dot(data, rows[i] * rowBytes, x, xOff, n);
                }
            }
            SINK = sink;
        });
    }

    /**
     * {@link #rowSparseMatVec} for {@code batch} vectors at once (decode steps of several sequences): each listed
     * row is read once and met by every vector through the type's fused {@link RowKernel#dot}, so
     * {@code out[b*outStride + r]} is bit-identical to {@code rowSparseMatVec} of vector b alone (the row order
     * and chunking do not enter a single dot).
     */
    public static void rowSparseMatVecBatch(WorkerPool pool, Tensor w, int[] rows, int count, float[] x, int batch, float[] out, int outStride) {
        RowKernel k = Kernels.forType(w.type());
        int n = w.rowLength();
        long rowBytes = w.rowBytes();
        MemorySegment data = w.data();
        AtomicInteger next = new AtomicInteger();
        pool.run((thread, threads) -> {
            for (int start; (start = next.getAndAdd(ROW_CHUNK)) < count; ) {
                int end = Math.min(count, start + ROW_CHUNK);
                for (int i = start; i < end; i++) {
                    int r = rows[i];
                    for (int b = 0; b < batch; b++) out[b * outStride + r] = k.dot(data, r * rowBytes, x, b * n, n);
                }
            }
        });
    }

    /**
     * Batched row-sparse product: for each token b and each listed row r, {@code out[b*outStride + r] =
     * W[r,:]·x[b*n..]}. The weight row is read once and reused across the batch.
     */
    public static void rowSparseMatMul(WorkerPool pool, Tensor w, int[] rows, int count, float[] x, int batch, float[] out, int outStride) {
        RowKernel k = Kernels.forType(w.type());
        int n = w.rowLength();
        long rowBytes = w.rowBytes();
        AtomicInteger next = new AtomicInteger();
        pool.run((thread, threads) -> {
            float[] row = scratch(n);
            for (int start; (start = next.getAndAdd(ROW_CHUNK)) < count; ) {
                int end = Math.min(count, start + ROW_CHUNK);
                for (int i = start; i < end; i++) {
                    int r = rows[i];
                    k.dequantize(w.data(), r * rowBytes, row, 0, n);
                    for (int b = 0; b < batch; b++) out[b * outStride + r] = FloatKernels.dot(row, 0, x, b * n, n);
                }
            }
        });
    }

    /**
     * For each token b &lt; batch: {@code y[b*dim..] = Σ_i h[b*hStride + rows[i]] · W[rows[i],:]} over the listed rows
     * with non-zero h (W is {@code {dim, n_ff}} neuron-major, e.g. {@code ffn_down_t}). Overwrites y. One token (decode)
     * goes through the type's fused {@link RowKernel#axpy}, so each active row slice is read once and never written
     * out as floats; a batch dequantizes each row slice once into scratch and reuses it for every token that
     * activates it. Both give the same bits (the fused kernel rounds exactly as dequantize + axpy).
     */
    public static void sparseAxpy(WorkerPool pool, Tensor w, int[] rows, int count, float[] h, int hStride, int batch, float[] y) {
        RowKernel k = Kernels.forType(w.type());
        int dim = w.rowLength();
        int granule = Math.max(w.type().blockSize, 64);
        MemorySegment data = w.data();
        long rowBytes = w.rowBytes();
        if (batch == 1 && (pool.threads() == 1 || (long) count * dim < SERIAL_AXPY_ELEMENTS)) {
            axpyRows(k, data, rowBytes, rows, count, h, y, 0, dim);
            return;
        }
        pool.forRange(dim, granule, (from, to, thread) -> {
            int n = to - from;
            long colBytes = w.type().byteSize(from);
            if (batch == 1) {
                axpyRows(k, data, rowBytes, rows, count, h, y, from, n, colBytes);
                return;
            }
            float[] row = scratch(n);
            for (int b = 0; b < batch; b++) java.util.Arrays.fill(y, b * dim + from, b * dim + to, 0f);
            for (int i = 0; i < count; i++) {
                int r = rows[i];
                boolean any = false;
                for (int b = 0; b < batch && !any; b++) any = h[b * hStride + r] != 0f;
                if (!any) continue;
                k.dequantize(data, r * rowBytes + colBytes, row, 0, n);
                for (int b = 0; b < batch; b++) {
                    float hv = h[b * hStride + r];
                    if (hv != 0f) FloatKernels.axpy(hv, row, 0, y, b * dim + from, n);
                }
            }
        });
    }

    /** Below this many weights a single-token axpy runs on the calling thread. */
    private static final long SERIAL_AXPY_ELEMENTS = 1 << 15;

    private static void axpyRows(RowKernel k, MemorySegment data, long rowBytes, int[] rows, int count, float[] h, float[] y, int from, int n) {
        axpyRows(k, data, rowBytes, rows, count, h, y, from, n, 0L);
    }

    /** One token: y[from..from+n) = Σ h_r · W[r, from..from+n) over the listed rows with h_r ≠ 0, fused per row. */
    private static void axpyRows(RowKernel k, MemorySegment data, long rowBytes, int[] rows, int count, float[] h, float[] y,
                                 int from, int n, long colBytes) {
        java.util.Arrays.fill(y, from, from + n, 0f);
        long sliceBytes = k.type().byteSize(n), sink = 0;
        for (int i = 0; i < count; i++) {
            if (i + PREFETCH_AHEAD < count) sink += touch(data, rows[i + PREFETCH_AHEAD] * rowBytes + colBytes, sliceBytes);
            int r = rows[i];
            float hv = h[r];
            if (hv != 0f) k.axpy(data, r * rowBytes + colBytes, hv, y, from, n);
        }
        SINK = sink;
    }

    /**
     * Active rows are scattered, so the hardware prefetcher, which follows sequential streams, starts cold at every
     * row: a dense mat-vec streams at about twice the bandwidth of one that jumps between rows. Java has no prefetch
     * instruction, so we load one word from each 4 KiB page (and the second line of the first) of a row a few rows
     * ahead: the misses overlap the current row's work and each page's stream is already running when it is read.
     */
    private static long touch(MemorySegment data, long off, long bytes) {
        long s = data.get(ValueLayout.JAVA_BYTE, off);
        if (bytes > 64) s += data.get(ValueLayout.JAVA_BYTE, off + 64);
        for (long p = 4096 - (off & 4095); p < bytes; p += 4096) s += data.get(ValueLayout.JAVA_BYTE, off + p);
        return s;
    }

    /** Rows ahead of the current one whose pages {@link #touch} warms. */
    private static final int PREFETCH_AHEAD = 2;
    /** Keeps the JIT from dropping the touching loads as dead code. */
    @SuppressWarnings("unused")
    private static volatile long SINK;

    private static final ThreadLocal<float[]> SCRATCH = ThreadLocal.withInitial(() -> new float[0]);

    /** A per-thread row buffer (weights are dequantized into it one row slice at a time). */
    static float[] scratch(int n) {
        float[] s = SCRATCH.get();
        if (s.length < n) SCRATCH.set(s = new float[n]);
        return s;
    }

    /** Scalar reference of {@link #rowSparseMatVec}: dequantize each active row and dot in plain Java. */
    static void rowSparseMatVecReference(Tensor w, int[] rows, int count, float[] x, int xOff, float[] out, int outOff) {
        int n = w.rowLength();
        float[] row = new float[n];
        for (int i = 0; i < count; i++) {
            Kernels.forType(w.type()).dequantize(w.data(), w.rowOffset(rows[i]), row, 0, n);
            double s = 0;
            for (int j = 0; j < n; j++) s += (double) row[j] * x[xOff + j];
            out[outOff + rows[i]] = (float) s;
        }
    }

    /** Scalar reference of {@link #sparseAxpy}. */
    static void sparseAxpyReference(Tensor w, int[] rows, int count, float[] h, int hOff, float[] y, int yOff) { // one token
        int dim = w.rowLength();
        double[] acc = new double[dim];
        float[] row = new float[dim];
        for (int i = 0; i < count; i++) {
            float hv = h[hOff + rows[i]];
            if (hv == 0f) continue;
            Kernels.forType(w.type()).dequantize(w.data(), w.rowOffset(rows[i]), row, 0, dim);
            for (int j = 0; j < dim; j++) acc[j] += (double) hv * row[j];
        }
        for (int j = 0; j < dim; j++) y[yOff + j] = (float) acc[j];
    }
}
