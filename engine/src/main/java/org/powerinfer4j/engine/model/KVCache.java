package org.powerinfer4j.engine.model;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.powerinfer4j.engine.tensor.GGMLType;

/**
 * Off-heap key/value cache: per layer, {@code contextLength} rows of {@code kvDim} keys and values, stored as
 * F16 (llama.cpp's default, half the memory) or F32. Owned by one session; {@link #close()} frees it.
 */
public final class KVCache implements AutoCloseable {
    private final Arena arena = Arena.ofShared();
    private final MemorySegment keys, values;
    private final int layers, contextLength, kvDim;
    private final long layerBytes, rowBytes;
    private final GGMLType type;

    public KVCache(int layers, int contextLength, int kvDim, GGMLType type) {
        if (type != GGMLType.F32 && type != GGMLType.F16) throw new IllegalArgumentException("KV cache type must be F16 or F32, not " + type);
        this.layers = layers;
        this.contextLength = contextLength;
        this.kvDim = kvDim;
        this.type = type;
        this.rowBytes = (long) (type == GGMLType.F16 ? 2 : 4) * kvDim;
        this.layerBytes = rowBytes * contextLength;
        long total = layerBytes * layers;
        this.keys = arena.allocate(total, 64);
        this.values = arena.allocate(total, 64);
    }

    public static long bytesFor(int layers, int contextLength, int kvDim, GGMLType type) {
        return 2L * layers * contextLength * kvDim * (type == GGMLType.F16 ? 2 : 4);
    }

    public GGMLType type() {
        return type;
    }

    /** Bytes per element. */
    public int elementBytes() {
        return type == GGMLType.F16 ? 2 : 4;
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
        if (type == GGMLType.F32) {
            MemorySegment.copy(k, kOff, keys, ValueLayout.JAVA_FLOAT, o, kvDim);
            MemorySegment.copy(v, vOff, values, ValueLayout.JAVA_FLOAT, o, kvDim);
        } else {
            for (int i = 0; i < kvDim; i++) {
                short kh = Float.floatToFloat16(k[kOff + i]);
                short vh = Float.floatToFloat16(v[vOff + i]);
                if ((kh & 0x7c00) == 0x7c00 || (vh & 0x7c00) == 0x7c00) nonFinite = true;   // Inf or NaN
                keys.set(ValueLayout.JAVA_SHORT_UNALIGNED, o + 2L * i, kh);
                values.set(ValueLayout.JAVA_SHORT_UNALIGNED, o + 2L * i, vh);
            }
        }
    }

    /**
     * Whether any stored F16 key or value is Inf or NaN (an activation beyond F16's range). Until one is, attention
     * may use the fast finite-only half conversions ({@code FloatKernels.dotF16x4}, {@code axpyF16x4}).
     */
    public boolean nonFinite() {
        return nonFinite;
    }

    private volatile boolean nonFinite;

    public long byteSize() {
        return 2 * layerBytes * layers;
    }

    @Override
    public void close() {
        if (arena.scope().isAlive()) arena.close();
    }
}
