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
     * Copies positions {@code [from, to)} of every layer's keys and values from {@code src} (a cache of the same
     * model: layers, width and type), for a prompt prefix another session has already evaluated. The caller keeps
     * {@code src}'s rows in that range unchanged meanwhile.
     */
    public void copyRows(KVCache src, int from, int to) {
        if (src.layers != layers || src.kvDim != kvDim || src.type != type)
            throw new IllegalArgumentException("KV caches of different shapes: " + src.layers + "×" + src.kvDim + " " + src.type + " vs " + layers + "×" + kvDim + " " + type);
        if (from < 0 || from > to || to > Math.min(contextLength, src.contextLength))
            throw new IllegalArgumentException("rows " + from + ".." + to + " are outside the caches (" + src.contextLength + ", " + contextLength + " positions)");
        if (from == to) return;
        long bytes = (to - from) * rowBytes;
        for (int l = 0; l < layers; l++) {
            MemorySegment.copy(src.keys, src.offset(l, from), keys, offset(l, from), bytes);
            MemorySegment.copy(src.values, src.offset(l, from), values, offset(l, from), bytes);
        }
        if (src.nonFinite) nonFinite = true;   // conservative: the copied rows may hold an Inf
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
