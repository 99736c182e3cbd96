package org.powerinfer4j.engine.gpu;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Objects;
import org.powerinfer4j.engine.tensor.GGMLType;
import org.powerinfer4j.engine.tensor.Tensor;

/**
 * The weight types the GPU kernels read, in ggml's block layouts — the mat-vecs F32, F16, Q8_0, Q4_0, Q4_K, Q5_K
 * and Q6_K, the sparse axpy the first four — and a plain decoder of them, which the simulated device computes with.
 * Also builds compact hot-row matrices from a tensor's rows.
 */
public final class GgmlRows {
    private GgmlRows() {}

    static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /** True for the types the GPU mat-vec kernels implement. */
    public static boolean supported(GGMLType t) {
        return axpySupported(t) || t == GGMLType.Q4_K || t == GGMLType.Q5_K || t == GGMLType.Q6_K;
    }

    /** True for the types the GPU sparse axpy (neuron-major {@code ffn_down_t} rows) implements. */
    public static boolean axpySupported(GGMLType t) {
        return t == GGMLType.F32 || t == GGMLType.F16 || t == GGMLType.Q8_0 || t == GGMLType.Q4_0;
    }

    /** Throws for a type the sparse axpy lacks (before its rows are uploaded, so the layer stays on the CPU). */
    public static void requireAxpySupported(GGMLType t) {
        if (!axpySupported(t)) throw new IllegalArgumentException("the GPU sparse axpy takes F32, F16, Q8_0 and Q4_0 rows, not " + t);
    }

    static void requireSupported(GGMLType t, int rowLength) {
        if (!supported(t)) throw new IllegalArgumentException("GPU kernels support F32, F16, Q8_0, Q4_0, Q4_K, Q5_K and Q6_K weights, not " + t);
        if (rowLength % t.blockSize != 0) throw new IllegalArgumentException(t + " rows must be a multiple of " + t.blockSize + " long, not " + rowLength);
    }

    /**
     * Decodes {@code n} values of a row starting at {@code offset}: Q8_0 blocks are f16 d + 32 int8 (x = d·q), Q4_0
     * blocks f16 d + 16 bytes (x_j = d·((q_j &amp; 15) − 8), x_{j+16} = d·((q_j &gt;&gt; 4) − 8)).
     */
    public static void dequantize(GGMLType t, MemorySegment src, long offset, float[] dst, int dstOff, int n) {
        switch (t) {
            case F32 -> { for (int i = 0; i < n; i++) dst[dstOff + i] = src.get(F32, offset + 4L * i); }
            case F16 -> { for (int i = 0; i < n; i++) dst[dstOff + i] = Float.float16ToFloat(src.get(I16, offset + 2L * i)); }
            case Q8_0 -> {
                for (int b = 0; b < n / 32; b++) {
                    long o = offset + 34L * b;
                    float d = Float.float16ToFloat(src.get(I16, o));
                    for (int j = 0; j < 32; j++) dst[dstOff + 32 * b + j] = d * src.get(ValueLayout.JAVA_BYTE, o + 2 + j);
                }
            }
            case Q4_0 -> {
                for (int b = 0; b < n / 32; b++) {
                    long o = offset + 18L * b;
                    float d = Float.float16ToFloat(src.get(I16, o));
                    for (int j = 0; j < 16; j++) {
                        int q = src.get(ValueLayout.JAVA_BYTE, o + 2 + j) & 0xff;
                        dst[dstOff + 32 * b + j] = d * ((q & 15) - 8);
                        dst[dstOff + 32 * b + j + 16] = d * ((q >> 4) - 8);
                    }
                }
            }
            case Q4_K, Q5_K, Q6_K -> org.powerinfer4j.engine.kernels.Kernels.forType(t).dequantize(src, offset, dst, dstOff, n);
            default -> throw new IllegalArgumentException("no GPU decoder for " + t);
        }
    }

    /**
     * The listed rows of {@code t}, in list order, as one contiguous matrix (compact row j = original row
     * {@code rows[j]}, e.g. the GPU index's gpu_bucket), allocated in {@code arena}.
     */
    public static MemorySegment gatherRows(Tensor t, int[] rows, int count, Arena arena) {
        Objects.checkFromIndexSize(0, count, rows.length);
        long rb = t.rowBytes();
        MemorySegment out = arena.allocate(Math.max(1, rb * count), 16);
        for (int j = 0; j < count; j++) {
            int r = Objects.checkIndex(rows[j], t.rows());
            MemorySegment.copy(t.data(), t.rowOffset(r), out, rb * j, rb);
        }
        return out.asSlice(0, rb * count);
    }
}
