package org.powerinfer4j.engine.tensor;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * A CPU copy of a quantized matrix re-laid out at load for the vector kernels (llama.cpp's "repacked" CPU buffers):
 * the same quants and scales, so every dequantized value is bit-identical to the file's; only the order in memory
 * changes. {@link RepackedQ4} holds Q4_0 and Q4_K, {@link RepackedQ5K} Q5_K, {@link RepackedQ6K} Q6_K, {@link RepackedQ8} Q8_0.
 */
public sealed interface RepackedMatrix permits RepackedQ4, RepackedQ5K, RepackedQ6K, RepackedQ8 {
    /** Columns of one row (the tensor's ne[0]). */
    int rowLength();

    /** Rows of the matrix. */
    int rows();

    /** The ggml type these are the weights of. */
    GGMLType type();

    /** The copy's native memory (owned by the arena it was allocated in). */
    MemorySegment data();

    /** Bytes per weight row in this layout, for footprints. */
    long rowBytes();

    /** Repacks rows {@code [from, to)} of {@code src} (same type and shape) into this matrix; disjoint ranges may run on different threads. */
    void repackRows(Tensor src, int from, int to);

    /** Whether {@code t} has a repacked layout: a 2-D Q4_0, Q4_K, Q5_K, Q6_K or Q8_0 matrix. */
    static boolean repackable(Tensor t) {
        return RepackedQ4.repackable(t) || RepackedQ5K.repackable(t) || RepackedQ6K.repackable(t) || RepackedQ8.repackable(t);
    }

    /** A zeroed copy for a {@code rows × n} matrix of {@code type} in {@code arena}, to be filled by {@link #repackRows}. */
    static RepackedMatrix allocate(Arena arena, GGMLType type, int n, int rows) {
        return switch (type) {
            case Q5_K -> RepackedQ5K.allocate(arena, n, rows);
            case Q6_K -> RepackedQ6K.allocate(arena, n, rows);
            case Q8_0 -> RepackedQ8.allocate(arena, n, rows);
            default -> RepackedQ4.allocate(arena, type, n, rows);
        };
    }
}
