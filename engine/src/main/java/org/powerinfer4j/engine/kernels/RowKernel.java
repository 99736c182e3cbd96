package org.powerinfer4j.engine.kernels;

import java.lang.foreign.MemorySegment;
import org.powerinfer4j.engine.tensor.GGMLType;

/**
 * Row operations for one ggml type, reading weights in ggml's block layout straight from native memory.
 * {@code byteOffset} addresses the first block; {@code n} is a multiple of the type's block size.
 * Implementations pick the Vector API path unless it is disabled (see {@link Kernels}).
 */
public interface RowKernel {
    GGMLType type();

    /** Writes {@code n} dequantized values of the row starting at {@code byteOffset} to {@code dst[dstOffset..]}. */
    void dequantize(MemorySegment src, long byteOffset, float[] dst, int dstOffset, int n);

    /** Dot product of {@code n} weights starting at {@code byteOffset} with {@code x[xOffset..xOffset+n)}. */
    float dot(MemorySegment src, long byteOffset, float[] x, int xOffset, int n);

    /**
     * {@code y[yOffset+i] += alpha·w[i]} for the {@code n} weights starting at {@code byteOffset}: the sparse
     * down projection's step, fused so a weight row is read once and never stored as floats. Bit-identical to
     * {@link #dequantize} followed by {@link FloatKernels#axpy} on the same path (scalar or vector).
     */
    void axpy(MemorySegment src, long byteOffset, float alpha, float[] y, int yOffset, int n);
}
