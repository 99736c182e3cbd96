package org.powerinfer4j.engine.kernels;

import java.lang.foreign.MemorySegment;

/**
 * {@link RowKernel#axpy} for the K-quants: dequantize one 256-element super-block into a small per-thread buffer
 * (it stays in L1) and add it scaled to y before the next. Their bit-unpacking is long enough that duplicating
 * it into a fused loop would not pay; the win of fusing — never writing a whole row slice of floats — is kept.
 */
final class BlockAxpy {
    private BlockAxpy() {}

    static final int QK_K = 256;
    private static final ThreadLocal<float[]> BUF = ThreadLocal.withInitial(() -> new float[QK_K]);

    static void axpy(RowKernel k, int blockBytes, MemorySegment s, long off, float alpha, float[] y, int yo, int n, boolean vector) {
        Blocks.checkBlocks(n, QK_K);
        float[] buf = BUF.get();
        for (int i = 0; i < n / QK_K; i++) {
            k.dequantize(s, off + (long) i * blockBytes, buf, 0, QK_K);
            if (vector) FloatKernels.Vector.axpy(alpha, buf, 0, y, yo + i * QK_K, QK_K);
            else FloatKernels.Scalar.axpy(alpha, buf, 0, y, yo + i * QK_K, QK_K);
        }
    }
}
