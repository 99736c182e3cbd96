package org.powerinfer4j.engine.kernels;

import org.powerinfer4j.engine.tensor.Tensor;

public final class MatrixOps {
    private MatrixOps() {}

    public static void matVec(WorkerPool pool, Tensor w, float[] x, int xOff, float[] out, int outOff) {
        RowKernel k = Kernels.forType(w.type());
        int n = w.rowLength();
        long rb = w.rowBytes();
        pool.forRange(w.rows(), (from, to, t) -> {
            for (int r = from; r < to; r++) out[outOff + r] = k.dot(w.data(), r * rb, x, xOff, n);
        });
    }

    public static void matMul(WorkerPool pool, Tensor w, float[] x, int batch, float[] out) {
        RowKernel k = Kernels.forType(w.type());
        int n = w.rowLength(), rows = w.rows();
        long rb = w.rowBytes();
        pool.forRange(rows, (from, to, t) -> {
            for (int r = from; r < to; r++)
                for (int b = 0; b < batch; b++) out[b * rows + r] = k.dot(w.data(), r * rb, x, b * n, n);
        });
    }
}
