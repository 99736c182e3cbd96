package org.powerinfer4j.engine.model;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Off-heap key/value cache: per layer, {@code contextLength} rows of {@code kvDim} F32 keys and values.
 * Owned by one session; {@link #close()} frees it.
 */
public final class KVCache implements AutoCloseable {
    private final Arena arena = Arena.ofShared();
    private final MemorySegment keys, values;
    private final int layers, contextLength, kvDim;
    private final long layerBytes, rowBytes;

    public KVCache(int layers, int contextLength, int kvDim) {
        this.layers = layers;
        this.contextLength = contextLength;
        this.kvDim = kvDim;
        this.rowBytes = 4L * kvDim;
        this.layerBytes = rowBytes * contextLength;
        long total = layerBytes * layers;
        this.keys = arena.allocate(total, 64);
        this.values = arena.allocate(total, 64);
    }

    public static long bytesFor(int layers, int contextLength, int kvDim) {
        return 2L * layers * contextLength * kvDim * 4L;
    }

    public int contextLength() {
        return contextLength;
    }

    public MemorySegment keys() {
        return keys;
    }

    public MemorySegment values() {
        return values;
    }

    /** Byte offset of position {@code pos} in layer {@code layer} (same for keys and values). */
    public long offset(int layer, int pos) {
        return layer * layerBytes + pos * rowBytes;
    }

    /** Stores one position's key and value vectors. */
    public void store(int layer, int pos, float[] k, int kOff, float[] v, int vOff) {
        long o = offset(layer, pos);
        MemorySegment.copy(k, kOff, keys, ValueLayout.JAVA_FLOAT, o, kvDim);
        MemorySegment.copy(v, vOff, values, ValueLayout.JAVA_FLOAT, o, kvDim);
    }

    public long byteSize() {
        return 2 * layerBytes * layers;
    }

    @Override
    public void close() {
        if (arena.scope().isAlive()) arena.close();
    }
}
