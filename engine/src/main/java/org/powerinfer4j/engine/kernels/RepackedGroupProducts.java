package org.powerinfer4j.engine.kernels;

import org.powerinfer4j.engine.tensor.RepackedQ5K;
import org.powerinfer4j.engine.tensor.RepackedQ6K;
import org.powerinfer4j.engine.tensor.RepackedQ8;
import org.powerinfer4j.engine.tensor.Tensor;

/**
 * {@link MatrixOps#matVec} and {@link MatrixOps#matVecBatch} over the repacked layouts whose kernels take one vector
 * at a time (Q5_K, Q6_K, Q8_0): each vector prepared once on the calling thread, then every 4-row group through
 * {@code dot4} for each vector while it is in L1, the rows around the groups through {@code dot} — so a batch gives
 * each vector's bits alone.
 */
final class RepackedGroupProducts {
    private RepackedGroupProducts() {}

    /**
     * Rows {@code [rowFrom, rowFrom + rows)} of {@code w} times {@code batch} vectors ({@code x[xOff + b·n]} →
     * {@code out[outOff + b·rows]}) through its repacked copy, when it has one of these layouts whose kernels run here;
     * false (nothing done) otherwise.
     */
    static boolean run(WorkerPool pool, Tensor w, int rowFrom, int rows, float[] x, int xOff, int batch, float[] out, int outOff) {
        switch (w.repacked()) {
            case RepackedQ6K m when RepackedQ6KKernels.SUPPORTED -> matVecQ6K(pool, m, rowFrom, rows, x, xOff, batch, out, outOff);
            case RepackedQ5K m when RepackedQ5KKernels.SUPPORTED -> matVecQ5K(pool, m, rowFrom, rows, x, xOff, batch, out, outOff);
            case RepackedQ8 m when RepackedQ8Kernels.SUPPORTED -> matVecQ8(pool, m, rowFrom, rows, x, xOff, batch, out, outOff);
            case null, default -> {
                return false;
            }
        }
        return true;
    }

    /**
     * {@link MatrixOps#matVec} over repacked Q6_K, for {@code batch} vectors at once ({@code x[xOff + b·n]} → {@code out[outOff + b·rows]}):
     * each vector prepared once on the calling thread, then {@link #matVecGroups}.
     */
    private static void matVecQ6K(WorkerPool pool, RepackedQ6K m, int rowFrom, int rows, float[] x, int xOff, int batch, float[] out, int outOff) {
        int n = m.rowLength();
        float[][] xp = new float[batch][], xs = new float[batch][];
        for (int b = 0; b < batch; b++) {
            xp[b] = b == 0 ? MatrixOps.scratch(MatrixOps.PERMUTED_X, n) : new float[n];
            xs[b] = b == 0 ? MatrixOps.scratch(MatrixOps.PERMUTED_XS, RepackedQ6KKernels.offsetsLength(n)) : new float[RepackedQ6KKernels.offsetsLength(n)];
            RepackedQ6KKernels.prepare(m, x, xOff + b * n, xp[b], xs[b]);
        }
        matVecGroups(pool, new GroupKernels() {
            public float dot(int row, int b) {
                return RepackedQ6KKernels.dot(m, row, xp[b], xs[b]);
            }

            public void dot4(int row, int b, float[] o, int at, float[] lanes) {
                RepackedQ6KKernels.dot4(m, row, xp[b], xs[b], o, at, lanes);
            }
        }, rowFrom, rows, (long) rows * n * batch, batch, out, outOff);
    }

    /** {@link MatrixOps#matVec} over repacked Q5_K for {@code batch} vectors, as {@link #matVecQ6K}. */
    private static void matVecQ5K(WorkerPool pool, RepackedQ5K m, int rowFrom, int rows, float[] x, int xOff, int batch, float[] out, int outOff) {
        int n = m.rowLength(), np = m.paddedLength(), ns = RepackedQ5KKernels.offsetsLength(m);
        float[][] xp = new float[batch][], xs = new float[batch][];
        for (int b = 0; b < batch; b++) {
            xp[b] = b == 0 ? MatrixOps.scratch(MatrixOps.PERMUTED_X, np) : new float[np];
            xs[b] = b == 0 ? MatrixOps.scratch(MatrixOps.PERMUTED_XS, ns) : new float[ns];
            RepackedQ5KKernels.prepare(m, x, xOff + b * n, xp[b], xs[b]);
        }
        matVecGroups(pool, new GroupKernels() {
            public float dot(int row, int b) {
                return RepackedQ5KKernels.dot(m, row, xp[b], xs[b]);
            }

            public void dot4(int row, int b, float[] o, int at, float[] lanes) {
                RepackedQ5KKernels.dot4(m, row, xp[b], xs[b], o, at, lanes);
            }
        }, rowFrom, rows, (long) rows * n * batch, batch, out, outOff);
    }

    /** {@link MatrixOps#matVec} over repacked Q8_0 for {@code batch} vectors (x as given: the layout needs no preparation), by {@link #matVecGroups}. */
    private static void matVecQ8(WorkerPool pool, RepackedQ8 m, int rowFrom, int rows, float[] x, int xOff, int batch, float[] out, int outOff) {
        int n = m.rowLength();
        matVecGroups(pool, new GroupKernels() {
            public float dot(int row, int b) {
                return RepackedQ8Kernels.dot(m, row, x, xOff + b * n);
            }

            public void dot4(int row, int b, float[] o, int at, float[] lanes) {
                RepackedQ8Kernels.dot4(m, row, x, xOff + b * n, o, at);
            }
        }, rowFrom, rows, (long) rows * n * batch, batch, out, outOff);
    }

    /** A repacked layout's kernels against prepared vector {@code b}: one row, or the 4-row group starting at {@code row}. */
    private interface GroupKernels {
        float dot(int row, int b);

        void dot4(int row, int b, float[] out, int o, float[] lanes);
    }

    /**
     * Rows {@code [rowFrom, rowFrom + rows)} times {@code batch} vectors into {@code out[outOff + b·rows + r]}, split over
     * the pool in row shares: whole 4-row groups through {@code dot4}, rows before the first group and after the last
     * through {@code dot}. Each group meets the vectors one after the other while it is in L1, through the kernels one
     * vector alone takes, so batching never changes a result's bits.
     */
    static void matVecGroups(WorkerPool pool, GroupKernels k, int rowFrom, int rows, long work, int batch, float[] out, int outOff) {
        WorkerPool.RangeTask range = (from, to, t) -> {
            float[] lanes = Simd.lanes();
            int r = from;
            for (; r < to && ((rowFrom + r) & 3) != 0; r++)
                for (int b = 0; b < batch; b++) out[outOff + b * rows + r] = k.dot(rowFrom + r, b);
            for (; r + 4 <= to; r += 4)
                for (int b = 0; b < batch; b++) k.dot4(rowFrom + r, b, out, outOff + b * rows + r, lanes);
            for (; r < to; r++)
                for (int b = 0; b < batch; b++) out[outOff + b * rows + r] = k.dot(rowFrom + r, b);
        };
        if (pool.threads() == 1 || work < MatrixOps.parallelThreshold) range.run(0, rows, 0);
        else pool.forRange(rows, MatrixOps.ROW_GRANULE, range);
    }
}
