package org.powerinfer4j.engine.tensor;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * A typed view of weights inside a mapped file (or other native memory). Shape is in ggml order:
 * {@code ne[0]} is the contiguous row length, {@code ne[1]} the number of rows, and so on.
 * The data segment is never copied to the heap. {@code repacked} is null or a CPU-friendly copy of the same
 * Q4_0, Q4_K, Q5_K, Q6_K or Q8_0 weights ({@link RepackedMatrix}) that the dense matrix–vector products use instead of {@code data}.
 */
public record Tensor(String name, GGMLType type, long[] ne, MemorySegment data, RepackedMatrix repacked) {

    public Tensor {
        ne = ne.clone();
        if (repacked != null && (type != repacked.type() || ne.length != 2 || repacked.rowLength() != ne[0] || repacked.rows() != ne[1]))
            throw new IllegalArgumentException(name + ": repacked planes do not match " + type + " " + Arrays.toString(ne));
    }

    public Tensor(String name, GGMLType type, long[] ne, MemorySegment data) {
        this(name, type, ne, data, null);
    }

    /** This tensor with its repacked copy attached. */
    public Tensor withRepacked(RepackedMatrix r) {
        return new Tensor(name, type, ne, data, r);
    }

    /** The repacked copy when it is a {@link RepackedQ4} (Q4_0, Q4_K), else null. */
    public RepackedQ4 repackedQ4() {
        return repacked instanceof RepackedQ4 q ? q : null;
    }

    public long elementCount() {
        long n = 1;
        for (long d : ne) n = Math.multiplyExact(n, d);
        return n;
    }

    /** Length of one row (ne[0]). */
    public int rowLength() {
        return Math.toIntExact(ne[0]);
    }

    /** Number of rows: product of ne[1..]. */
    public int rows() {
        long r = 1;
        for (int i = 1; i < ne.length; i++) r = Math.multiplyExact(r, ne[i]);
        return Math.toIntExact(r);
    }

    /** Bytes of one row. */
    public long rowBytes() {
        return type.byteSize(ne[0]);
    }

    /** Byte offset of row {@code r} within {@link #data()}. */
    public long rowOffset(long r) {
        return r * rowBytes();
    }

    public String shapeString() {
        return Arrays.toString(ne);
    }
}
