package org.powerinfer4j.engine.gpu;

/**
 * Device memory of a {@link GpuBackend}: an allocation, or a view of part of one ({@link #slice}). Closing an
 * allocation frees it (no queued work may still use it); closing a view does nothing.
 */
public interface GpuBuffer extends AutoCloseable {
    long byteSize();

    /** A view of {@code bytes} bytes from {@code offset}, valid while the allocation is open. */
    GpuBuffer slice(long offset, long bytes);

    /** View of float elements {@code [from, from + count)}. */
    default GpuBuffer floats(long from, long count) {
        return slice(4 * from, 4 * count);
    }

    @Override
    void close();
}
