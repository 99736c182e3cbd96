package org.powerinfer4j.engine.kernels;

import static org.powerinfer4j.engine.kernels.Simd.F;
import static org.powerinfer4j.engine.kernels.Simd.FL;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.Objects;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import org.powerinfer4j.engine.tensor.GGMLType;
import org.powerinfer4j.engine.tensor.RepackedQ4;
import org.powerinfer4j.engine.tensor.Tensor;

/**
 * Matrix-vector and matrix-matrix products of a weight tensor (any type with a {@link RowKernel}) with float
 * activations. A weight tensor of shape ne = [n, rows] holds {@code rows} rows of length {@code n}; the product
 * is {@code out[r] = Σ_i w[r][i]·x[i]} (ggml's {@code mul_mat(w, x)}).
 *
 * <p>{@link #matVec} (decode) streams each weight row once through the type's fused dequantize-dot, rows split
 * statically over the pool: it is memory-bandwidth bound. {@link #matMul} (prefill) dequantizes a panel of rows
 * once into a per-thread float scratch and multiplies it with the whole batch — whole vectors of columns (16 at
 * 512-bit: a prompt chunk, a short prompt) through {@link BroadcastTiles}' rank-1 register tiles, the last few
 * through a 4-row × 3-column dot-product tile — so each weight byte is read once per call and the work is compute bound.
 */
public final class MatrixOps {
    private MatrixOps() {}

    /**
     * Below this many multiply-adds a product runs on the calling thread: waking the pool would cost more.
     * Not final only so that tests can force small products through the pool.
     */
    static long parallelThreshold = 1 << 15;
    /** Rows per thread share granule: 16 floats of {@code out} fill one cache line, so threads never share one. */
    static final int ROW_GRANULE = 16;
    /** Register tile of {@link #matMul}: MR weight rows × NB batch columns of accumulators. */
    private static final int MR = 4, NB = 3;
    /** Target size in floats of one thread's dequantized row panel (256 KiB: stays in L2). */
    private static final int PANEL_FLOATS = 1 << 16;
    /**
     * Below this batch (a decode pass of a few sequences) panels are {@link #SMALL_PANEL} rows: the dequantized rows
     * are met by few columns, so they should still be in L1 when the tile reads them (8 rows of 768 floats: 24 KiB).
     * Measured on 110m Q4_0, 1 thread, batch 8: 342 µs per ffn_up product with 8-row panels, 453 with 64.
     */
    private static final int SMALL_BATCH = 16, SMALL_PANEL = 8;

    private static final ThreadLocal<float[]> SCRATCH = ThreadLocal.withInitial(() -> new float[0]);

    /** Whether {@link #matVec} reads a repacked copy of a {@code type} matrix on this CPU (so whether making one pays). */
    public static boolean readsRepacked(GGMLType type) {
        return switch (type) {
            case Q4_0, Q4_K -> RepackedQ4Kernels.SUPPORTED;
            case Q5_K -> RepackedQ5KKernels.SUPPORTED;
            case Q6_K -> RepackedQ6KKernels.SUPPORTED;
            case Q8_0 -> RepackedQ8Kernels.SUPPORTED;
            default -> false;
        };
    }

    /** {@code out[outOff + r] = dot(row r of w, x[xOff..xOff+n))} for every row r. */
    public static void matVec(WorkerPool pool, Tensor w, float[] x, int xOff, float[] out, int outOff) {
        matVec(pool, w, 0, w.rows(), x, xOff, out, outOff);
    }

    /**
     * Rows {@code [rowFrom, rowTo)} of w only: {@code out[outOff + (r - rowFrom)] = dot(row r of w, x)}.
     * The product is split over the pool's threads in contiguous row shares.
     */
    public static void matVec(WorkerPool pool, Tensor w, int rowFrom, int rowTo, float[] x, int xOff, float[] out, int outOff) {
        int n = w.rowLength();
        Objects.checkFromToIndex(rowFrom, rowTo, w.rows());
        Objects.checkFromIndexSize(xOff, n, x.length);
        Objects.checkFromIndexSize(outOff, rowTo - rowFrom, out.length);
        int rows = rowTo - rowFrom;
        RepackedQ4 rep = w.repackedQ4();
        if (rep != null && RepackedQ4Kernels.SUPPORTED) {
            matVecRepacked(pool, rep, rowFrom, rows, x, xOff, out, outOff);
            return;
        }
        if (RepackedGroupProducts.run(pool, w, rowFrom, rows, x, xOff, 1, out, outOff)) return;
        if (KQuantWordKernels.handles(w.type())) {
            matVecWords(pool, w, rowFrom, rows, x, xOff, out, outOff);
            return;
        }
        RowKernel k = Kernels.forType(w.type());
        MemorySegment data = w.data();
        long rowBytes = w.rowBytes();
        if (pool.threads() == 1 || (long) rows * n < parallelThreshold) {
            matVecRows(k, data, rowBytes, n, rowFrom, 0, rows, x, xOff, out, outOff);
        } else {
            pool.forRange(rows, ROW_GRANULE, (from, to, t) -> matVecRows(k, data, rowBytes, n, rowFrom, from, to, x, xOff, out, outOff));
        }
    }

    /** {@link #matVec} over repacked Q4_0/Q4_K: x permuted once on the calling thread, then rows four at a time. */
    private static void matVecRepacked(WorkerPool pool, RepackedQ4 rep, int rowFrom, int rows, float[] x, int xOff, float[] out, int outOff) {
        int np = rep.paddedLength();
        float[] xp = PERMUTED_X.get(), xs8 = PERMUTED_XS.get();
        if (xp.length < np) PERMUTED_X.set(xp = new float[np]);
        if (xs8.length < np / 8) PERMUTED_XS.set(xs8 = new float[np / 8]);
        RepackedQ4Kernels.prepare(rep, x, xOff, xp, xs8);
        float[] fxp = xp, fxs8 = xs8;
        if (pool.threads() == 1 || (long) rows * np < parallelThreshold) {
            matVecRepackedRows(rep, rowFrom, 0, rows, fxp, fxs8, out, outOff);
        } else {
            pool.forRange(rows, ROW_GRANULE, (from, to, t) -> matVecRepackedRows(rep, rowFrom, from, to, fxp, fxs8, out, outOff));
        }
    }

    private static void matVecRepackedRows(RepackedQ4 rep, int rowBase, int from, int to, float[] xp, float[] xs8, float[] out, int outOff) {
        float[] lanes = Simd.lanes();
        int r = from;
        for (; r < to && ((rowBase + r) & 3) != 0; r++) out[outOff + r] = RepackedQ4Kernels.dot(rep, rowBase + r, xp, xs8);
        for (; r + 4 <= to; r += 4) RepackedQ4Kernels.dot4(rep, rowBase + r, xp, xs8, out, outOff + r, lanes);
        for (; r < to; r++) out[outOff + r] = RepackedQ4Kernels.dot(rep, rowBase + r, xp, xs8);
    }

    /** This thread's buffer of {@code holder}, grown to at least {@code length} floats. */
    static float[] scratch(ThreadLocal<float[]> holder, int length) {
        float[] a = holder.get();
        if (a.length < length) holder.set(a = new float[length]);
        return a;
    }

    /** {@link #matVec} over Q4_K/Q6_K: x permuted and its sub-block sums taken once on the calling thread, then rows. */
    private static void matVecWords(WorkerPool pool, Tensor w, int rowFrom, int rows, float[] x, int xOff, float[] out, int outOff) {
        int n = w.rowLength();
        float[] xp = PERMUTED_X.get(), xs = PERMUTED_XS.get();
        if (xp.length < n) PERMUTED_X.set(xp = new float[n]);
        if (xs.length < KQuantWordKernels.offsetsLength(n)) PERMUTED_XS.set(xs = new float[KQuantWordKernels.offsetsLength(n)]);
        KQuantWordKernels.prepare(w.type(), x, xOff, n, xp, xs);
        float[] fxp = xp, fxs = xs;
        if (pool.threads() == 1 || (long) rows * n < parallelThreshold) {
            matVecWordRows(w, rowFrom, 0, rows, fxp, fxs, out, outOff);
        } else {
            pool.forRange(rows, ROW_GRANULE, (from, to, t) -> matVecWordRows(w, rowFrom, from, to, fxp, fxs, out, outOff));
        }
    }

    private static void matVecWordRows(Tensor w, int rowBase, int from, int to, float[] xp, float[] xs, float[] out, int outOff) {
        float[] scales = KQuantWordKernels.scalesScratch();
        MemorySegment data = w.data();
        long rowBytes = w.rowBytes();
        int n = w.rowLength();
        GGMLType type = w.type();
        for (int r = from; r < to; r++) out[outOff + r] = KQuantWordKernels.dot(type, data, (rowBase + r) * rowBytes, n, xp, xs, scales);
    }

    static final ThreadLocal<float[]> PERMUTED_X = ThreadLocal.withInitial(() -> new float[0]);
    static final ThreadLocal<float[]> PERMUTED_XS = ThreadLocal.withInitial(() -> new float[0]);

    private static void matVecRows(RowKernel k, MemorySegment data, long rowBytes, int n, int rowBase, int from, int to,
                                   float[] x, int xOff, float[] out, int outOff) {
        for (int r = from; r < to; r++) out[outOff + r] = k.dot(data, (rowBase + r) * rowBytes, x, xOff, n);
    }

    /**
     * {@code batch} independent matrix–vector products in one pass over the weights: {@code out[b*rows + r]} is
     * bit-identical to {@code matVec(w, x[b*n..])[r]}, because each row goes through the same fused kernel once per
     * vector while it is in L1 (repacked Q4_0/Q4_K: four vectors at a time share each converted nibble,
     * {@link RepackedQ4Kernels#dot2x4}, in the fused kernel's summation order). Decode steps of several sequences share the weight stream this way without their
     * results depending on which other sequences rode along (matMul's dequantize-then-tile order differs from the
     * fused kernels' by rounding).
     */
    public static void matVecBatch(WorkerPool pool, Tensor w, float[] x, int batch, float[] out) {
        int n = w.rowLength(), rows = w.rows();
        if (batch < 1) throw new IllegalArgumentException("batch must be >= 1, is " + batch);
        Objects.checkFromIndexSize(0, Math.multiplyExact(batch, n), x.length);
        Objects.checkFromIndexSize(0, Math.multiplyExact(batch, rows), out.length);
        if (batch == 1) {
            matVec(pool, w, x, 0, out, 0);
            return;
        }
        if (RepackedGroupProducts.run(pool, w, 0, rows, x, 0, batch, out, 0)) return;
        RepackedQ4 rep = w.repackedQ4();
        boolean repacked = rep != null && RepackedQ4Kernels.SUPPORTED, words = !repacked && KQuantWordKernels.handles(w.type());
        float[][] xp = null, xs = null;
        if (repacked || words) {   // each vector prepared once on the calling thread, as matVec does
            int np = repacked ? rep.paddedLength() : n, ns = repacked ? np / 8 : KQuantWordKernels.offsetsLength(n);
            xp = new float[batch][np];
            xs = new float[batch][ns];
            for (int b = 0; b < batch; b++) {
                if (repacked) RepackedQ4Kernels.prepare(rep, x, b * n, xp[b], xs[b]);
                else KQuantWordKernels.prepare(w.type(), x, b * n, n, xp[b], xs[b]);
            }
        }
        float[][] fxp = xp, fxs = xs;
        RowKernel k = repacked || words ? null : Kernels.forType(w.type());
        WorkerPool.RangeTask range = (from, to, t) -> {
            if (repacked) {
                float[] lanes = Simd.lanes();   // at least RepackedQ4Kernels.DOT2X4_SCRATCH
                int r = from;
                for (; r < to && (r & 3) != 0; r++)
                    for (int b = 0; b < batch; b++) out[b * rows + r] = RepackedQ4Kernels.dot(rep, r, fxp[b], fxs[b]);
                for (; r + 4 <= to; r += 4) {   // a 4-row group: two row pairs × four vectors share each converted nibble
                    int b = 0;
                    for (; b + 4 <= batch; b += 4) {
                        for (int pair = r; pair < r + 4; pair += 2)
                            RepackedQ4Kernels.dot2x4(rep, pair, fxp[b], fxp[b + 1], fxp[b + 2], fxp[b + 3], fxs[b], fxs[b + 1], fxs[b + 2], fxs[b + 3],
                                    out, b * rows + pair, (b + 1) * rows + pair, (b + 2) * rows + pair, (b + 3) * rows + pair, lanes);
                        if (rep.mins()) for (int v = b; v < b + 4; v++) RepackedQ4Kernels.addMinTerms(rep, r, fxs[v], out, v * rows + r, lanes);
                    }
                    for (; b < batch; b++) RepackedQ4Kernels.dot4(rep, r, fxp[b], fxs[b], out, b * rows + r, lanes);
                }
                for (; r < to; r++)
                    for (int b = 0; b < batch; b++) out[b * rows + r] = RepackedQ4Kernels.dot(rep, r, fxp[b], fxs[b]);
            } else if (words) {
                float[] scales = KQuantWordKernels.scalesScratch();
                for (int r = from; r < to; r++)
                    for (int b = 0; b < batch; b++)
                        out[b * rows + r] = KQuantWordKernels.dot(w.type(), w.data(), r * w.rowBytes(), n, fxp[b], fxs[b], scales);
            } else {
                for (int r = from; r < to; r++)
                    for (int b = 0; b < batch; b++) out[b * rows + r] = k.dot(w.data(), r * w.rowBytes(), x, b * n, n);
            }
        };
        if (pool.threads() == 1 || (long) rows * n * batch < parallelThreshold) range.run(0, rows, 0);
        else pool.forRange(rows, ROW_GRANULE, range);
    }

    /**
     * Batched product: x is {@code batch} row-major activation vectors of length n ({@code x[b*n + i]}), out is
     * {@code batch} row-major result vectors ({@code out[b*rows + r]}).
     */
    public static void matMul(WorkerPool pool, Tensor w, float[] x, int batch, float[] out) {
        int n = w.rowLength(), rows = w.rows();
        if (batch < 1) throw new IllegalArgumentException("batch must be >= 1, is " + batch);
        Objects.checkFromIndexSize(0, Math.multiplyExact(batch, n), x.length);
        Objects.checkFromIndexSize(0, Math.multiplyExact(batch, rows), out.length);
        if (batch == 1) {
            matVec(pool, w, x, 0, out, 0);
            return;
        }
        RepackedQ4 rep = RepackedQ4Kernels.SUPPORTED ? w.repackedQ4() : null;
        if (rep != null) {
            int np = rep.paddedLength();
            matMulPanels(pool, panels(w, rep), np, rows, permuted(x, n, np, batch), batch, out);
        } else {
            matMulPanels(pool, panels(w, null), n, rows, x, batch, out);
        }
    }

    /** Where matMul's panel rows come from: the repacked copy (in its permuted column order) or the type's dequantize. */
    private static PanelSource panels(Tensor w, RepackedQ4 rep) {
        if (rep != null) return (row, dst, off) -> RepackedQ4Kernels.dequantizePermuted(rep, row, dst, off);
        RowKernel k = Kernels.forType(w.type());
        MemorySegment data = w.data();
        int n = w.rowLength();
        return (row, dst, off) -> k.dequantize(data, w.rowOffset(row), dst, off, n);
    }

    /** The batch in the repacked column order (rows of padded length np), in this thread's buffer: permuted once per product. */
    private static float[] permuted(float[] x, int n, int np, int batch) {
        float[] xp = PERMUTED_X.get();
        if (xp.length < batch * np) PERMUTED_X.set(xp = new float[batch * np]);
        for (int b = 0; b < batch; b++) RepackedQ4.permute(x, b * n, n, xp, b * np, null);
        return xp;
    }

    /**
     * {@code matMul(ws[i], x) → outs[i]} for matrices that read the same activations (q, k and v; gate and up),
     * in one pass over the pool: x is transposed for the broadcast tiles once per column order (plain, and
     * permuted for repacked matrices) instead of once per matrix, and the threads share the rows of all of
     * them, so one phase replaces several. Each output has the bits {@link #matMul} gives it.
     */
    public static void matMulShared(WorkerPool pool, Tensor[] ws, float[] x, int batch, float[][] outs) {
        int m = ws.length, cols = BroadcastTiles.columns(batch);
        int padded = -1;   // the permuted order's padded length, one for all repacked matrices here
        for (Tensor w : ws) {
            RepackedQ4 rep = RepackedQ4Kernels.SUPPORTED ? w.repackedQ4() : null;
            if (rep != null && padded >= 0 && rep.paddedLength() != padded) padded = -2;
            else if (rep != null) padded = rep.paddedLength();
            if (w.rowLength() != ws[0].rowLength()) padded = -2;
        }
        if (batch == 1 || m == 1 || cols == 0 || padded == -2) {
            for (int i = 0; i < m; i++) matMul(pool, ws[i], x, batch, outs[i]);
            return;
        }
        int n = ws[0].rowLength();
        Objects.checkFromIndexSize(0, Math.multiplyExact(batch, n), x.length);
        float[] xp = null, xTp = null, xT = null;
        if (padded >= 0) {
            xp = permuted(x, n, padded, batch);
            xTp = BroadcastTiles.transpose(xp, padded, cols, 1);
        }
        PanelSource[] src = new PanelSource[m];
        int[] lengths = new int[m], firstRow = new int[m + 1];
        float[][] xs = new float[m][], xTs = new float[m][];
        long macs = 0;
        for (int i = 0; i < m; i++) {
            Tensor w = ws[i];
            Objects.checkFromIndexSize(0, Math.multiplyExact(batch, w.rows()), outs[i].length);
            RepackedQ4 rep = RepackedQ4Kernels.SUPPORTED ? w.repackedQ4() : null;
            src[i] = panels(w, rep);
            if (rep != null) {
                lengths[i] = padded;
                xs[i] = xp;
                xTs[i] = xTp;
            } else {
                lengths[i] = n;
                if (xT == null) xT = BroadcastTiles.transpose(x, n, cols, 0);
                xs[i] = x;
                xTs[i] = xT;
            }
            // each matrix starts at a multiple of MR, so its shares start at 4-row groups as in matMul (which rows
            // the 4x3 tiles take, and so the bits, follow from that)
            firstRow[i + 1] = firstRow[i] + (w.rows() + MR - 1) / MR * MR;
            macs += (long) w.rows() * n * batch;
        }
        WorkerPool.RangeTask task = (from, to, t) -> {
            for (int i = 0; i < m; i++) {
                int lo = Math.max(from, firstRow[i]), hi = Math.min(to, firstRow[i] + ws[i].rows());
                if (lo < hi) matMulRows(src[i], lengths[i], ws[i].rows(), lo - firstRow[i], hi - firstRow[i], xs[i], xTs[i], cols, batch, outs[i]);
            }
        };
        if (pool.threads() == 1 || macs < parallelThreshold) task.run(0, firstRow[m], 0);
        else pool.forRange(firstRow[m], MR, task);
    }

    /**
     * The panels of rows split over the pool. Whole vectors of batch columns ({@link BroadcastTiles#columns}) go
     * through its broadcast tiles, over activations transposed once here; the rest through the 4×3 dot-product tiles.
     */
    private static void matMulPanels(WorkerPool pool, PanelSource src, int n, int rows, float[] x, int batch, float[] out) {
        int cols = BroadcastTiles.columns(batch);
        float[] xT = cols > 0 ? BroadcastTiles.transpose(x, n, cols, 0) : null;
        if (pool.threads() == 1 || (long) rows * n * batch < parallelThreshold) {
            matMulRows(src, n, rows, 0, rows, x, xT, cols, batch, out);
        } else {
            pool.forRange(rows, MR, (from, to, t) -> matMulRows(src, n, rows, from, to, x, xT, cols, batch, out));
        }
    }

    /** Writes one weight row as n floats to dst[off..]: the matrix's dequantize, in whatever column order x uses. */
    @FunctionalInterface
    private interface PanelSource {
        void rowTo(int row, float[] dst, int off);
    }

    /** One thread's share: panels of rows dequantized once, then multiplied with every batch column. */
    private static void matMulRows(PanelSource src, int n, int rows, int from, int to, float[] x, float[] xT, int cols,
                                   int batch, float[] out) {
        int granule = cols > 0 ? BroadcastTiles.PAD : MR;
        int panel = Math.max(granule, Math.min(batch < SMALL_BATCH ? SMALL_PANEL : 64, PANEL_FLOATS / Math.max(1, n)) / granule * granule);
        float[] scratch = scratch(panel * n);
        for (int p0 = from; p0 < to; p0 += panel) {
            int pRows = Math.min(panel, to - p0);
            for (int r = 0; r < pRows; r++) src.rowTo(p0 + r, scratch, r * n);
            int b = 0;
            if (cols > 0) {
                Arrays.fill(scratch, pRows * n, BroadcastTiles.padRows(pRows) * n, 0f);   // the last tile's rows past pRows
                BroadcastTiles.panel(scratch, n, pRows, xT, cols, out, rows, p0);
                b = cols;
            }
            // with the vector path disabled everything goes through the (scalar) FloatKernels.dot below
            for (; Simd.ENABLED && b + NB <= batch; b += NB) {
                int r = 0;
                for (; r + MR <= pRows; r += MR) tile4x3(scratch, r * n, x, b * n, n, out, b * rows + p0 + r, rows);
                for (; r < pRows; r++) {
                    for (int j = 0; j < NB; j++) out[(b + j) * rows + p0 + r] = FloatKernels.dot(scratch, r * n, x, (b + j) * n, n);
                }
            }
            // the last one or two columns (a decode pass of 2, 4, 5, 7, 8 sequences) through narrower tiles: the
            // 4 rows' panel is still read once per column pair, not once per column and row
            int left = batch - b;
            if (Simd.ENABLED && (left == 1 || left == 2)) {
                int r = 0;
                for (; r + MR <= pRows; r += MR) {
                    if (left == 2) tile4x2(scratch, r * n, x, b * n, n, out, b * rows + p0 + r, rows);
                    else tile4x1(scratch, r * n, x, b * n, n, out, b * rows + p0 + r);
                }
                for (; r < pRows; r++)
                    for (int j = 0; j < left; j++) out[(b + j) * rows + p0 + r] = FloatKernels.dot(scratch, r * n, x, (b + j) * n, n);
                b = batch;
            }
            for (; b < batch; b++) {
                for (int r = 0; r < pRows; r++) out[b * rows + p0 + r] = FloatKernels.dot(scratch, r * n, x, b * n, n);
            }
        }
    }

    private static float[] scratch(int size) {
        float[] s = SCRATCH.get();
        if (s.length < size) {
            s = new float[size];
            SCRATCH.set(s);
        }
        return s;
    }

    /**
     * out[(b+j)*rows + r+i] = Σ_k w[i][k]·x[j][k] for i &lt; 4, j &lt; 3: twelve accumulators, and per step of
     * {@link Simd#FL} elements 4 + 3 loads for 12 FMAs, so the loop is bound by FMA throughput, not loads.
     */
    private static void tile4x3(float[] w, int w0, float[] x, int x0, int n, float[] out, int o0, int rows) {
        FloatVector c00 = FloatVector.zero(F), c10 = c00, c20 = c00, c30 = c00;
        FloatVector c01 = c00, c11 = c00, c21 = c00, c31 = c00;
        FloatVector c02 = c00, c12 = c00, c22 = c00, c32 = c00;
        int w1 = w0 + n, w2 = w1 + n, w3 = w2 + n, x1 = x0 + n, x2 = x1 + n;
        int k = 0;
        for (int end = n - FL; k <= end; k += FL) {
            FloatVector a0 = FloatVector.fromArray(F, w, w0 + k), a1 = FloatVector.fromArray(F, w, w1 + k);
            FloatVector a2 = FloatVector.fromArray(F, w, w2 + k), a3 = FloatVector.fromArray(F, w, w3 + k);
            FloatVector b = FloatVector.fromArray(F, x, x0 + k);
            c00 = a0.fma(b, c00); c10 = a1.fma(b, c10); c20 = a2.fma(b, c20); c30 = a3.fma(b, c30);
            b = FloatVector.fromArray(F, x, x1 + k);
            c01 = a0.fma(b, c01); c11 = a1.fma(b, c11); c21 = a2.fma(b, c21); c31 = a3.fma(b, c31);
            b = FloatVector.fromArray(F, x, x2 + k);
            c02 = a0.fma(b, c02); c12 = a1.fma(b, c12); c22 = a2.fma(b, c22); c32 = a3.fma(b, c32);
        }
        // fixed-order lane sums, four accumulators (one batch column) per vector tree; reduceLanes' order differs
        // between C2 and the interpreter
        float[] lanes = Simd.lanes();
        int st = Simd.SUM4_STRIDE;
        Simd.sum4(c00, c10, c20, c30, lanes);
        out[o0] = lanes[0] + tail(w, w0, x, x0, k, n);
        out[o0 + 1] = lanes[st] + tail(w, w1, x, x0, k, n);
        out[o0 + 2] = lanes[2 * st] + tail(w, w2, x, x0, k, n);
        out[o0 + 3] = lanes[3 * st] + tail(w, w3, x, x0, k, n);
        o0 += rows;
        Simd.sum4(c01, c11, c21, c31, lanes);
        out[o0] = lanes[0] + tail(w, w0, x, x1, k, n);
        out[o0 + 1] = lanes[st] + tail(w, w1, x, x1, k, n);
        out[o0 + 2] = lanes[2 * st] + tail(w, w2, x, x1, k, n);
        out[o0 + 3] = lanes[3 * st] + tail(w, w3, x, x1, k, n);
        o0 += rows;
        Simd.sum4(c02, c12, c22, c32, lanes);
        out[o0] = lanes[0] + tail(w, w0, x, x2, k, n);
        out[o0 + 1] = lanes[st] + tail(w, w1, x, x2, k, n);
        out[o0 + 2] = lanes[2 * st] + tail(w, w2, x, x2, k, n);
        out[o0 + 3] = lanes[3 * st] + tail(w, w3, x, x2, k, n);
    }


    /** {@link #tile4x3} for two batch columns: 4 + 2 loads for 8 FMAs. */
    private static void tile4x2(float[] w, int w0, float[] x, int x0, int n, float[] out, int o0, int rows) {
        FloatVector c00 = FloatVector.zero(F), c10 = c00, c20 = c00, c30 = c00;
        FloatVector c01 = c00, c11 = c00, c21 = c00, c31 = c00;
        int w1 = w0 + n, w2 = w1 + n, w3 = w2 + n, x1 = x0 + n;
        int k = 0;
        for (int end = n - FL; k <= end; k += FL) {
            FloatVector a0 = FloatVector.fromArray(F, w, w0 + k), a1 = FloatVector.fromArray(F, w, w1 + k);
            FloatVector a2 = FloatVector.fromArray(F, w, w2 + k), a3 = FloatVector.fromArray(F, w, w3 + k);
            FloatVector b = FloatVector.fromArray(F, x, x0 + k);
            c00 = a0.fma(b, c00); c10 = a1.fma(b, c10); c20 = a2.fma(b, c20); c30 = a3.fma(b, c30);
            b = FloatVector.fromArray(F, x, x1 + k);
            c01 = a0.fma(b, c01); c11 = a1.fma(b, c11); c21 = a2.fma(b, c21); c31 = a3.fma(b, c31);
        }
        float[] lanes = Simd.lanes();
        int st = Simd.SUM4_STRIDE;
        Simd.sum4(c00, c10, c20, c30, lanes);
        out[o0] = lanes[0] + tail(w, w0, x, x0, k, n);
        out[o0 + 1] = lanes[st] + tail(w, w1, x, x0, k, n);
        out[o0 + 2] = lanes[2 * st] + tail(w, w2, x, x0, k, n);
        out[o0 + 3] = lanes[3 * st] + tail(w, w3, x, x0, k, n);
        o0 += rows;
        Simd.sum4(c01, c11, c21, c31, lanes);
        out[o0] = lanes[0] + tail(w, w0, x, x1, k, n);
        out[o0 + 1] = lanes[st] + tail(w, w1, x, x1, k, n);
        out[o0 + 2] = lanes[2 * st] + tail(w, w2, x, x1, k, n);
        out[o0 + 3] = lanes[3 * st] + tail(w, w3, x, x1, k, n);
    }

    /** {@link #tile4x3} for one batch column: four rows against one vector, 5 loads for 4 FMAs. */
    private static void tile4x1(float[] w, int w0, float[] x, int x0, int n, float[] out, int o0) {
        FloatVector c0 = FloatVector.zero(F), c1 = c0, c2 = c0, c3 = c0;
        int w1 = w0 + n, w2 = w1 + n, w3 = w2 + n;
        int k = 0;
        for (int end = n - FL; k <= end; k += FL) {
            FloatVector b = FloatVector.fromArray(F, x, x0 + k);
            c0 = FloatVector.fromArray(F, w, w0 + k).fma(b, c0);
            c1 = FloatVector.fromArray(F, w, w1 + k).fma(b, c1);
            c2 = FloatVector.fromArray(F, w, w2 + k).fma(b, c2);
            c3 = FloatVector.fromArray(F, w, w3 + k).fma(b, c3);
        }
        float[] lanes = Simd.lanes();
        int st = Simd.SUM4_STRIDE;
        Simd.sum4(c0, c1, c2, c3, lanes);
        out[o0] = lanes[0] + tail(w, w0, x, x0, k, n);
        out[o0 + 1] = lanes[st] + tail(w, w1, x, x0, k, n);
        out[o0 + 2] = lanes[2 * st] + tail(w, w2, x, x0, k, n);
        out[o0 + 3] = lanes[3 * st] + tail(w, w3, x, x0, k, n);
    }

    /** Σ w[wo+i]·x[xo+i] for i in [k, n): the part of a row the vector loop did not cover. */
    private static float tail(float[] w, int wo, float[] x, int xo, int k, int n) {
        float s = 0f;
        for (int i = k; i < n; i++) s += w[wo + i] * x[xo + i];
        return s;
    }
}
