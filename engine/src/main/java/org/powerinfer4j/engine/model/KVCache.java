package org.powerinfer4j.engine.model;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.powerinfer4j.engine.tensor.GGMLType;

/**
 * Off-heap key/value cache of one sequence: per layer, up to {@code contextLength} rows of {@code kvDim} keys and
 * values, stored as F16 (llama.cpp's default, half the memory) or F32. Either contiguous — the sequence owns a
 * whole context, {@link #close()} frees it — or {@link #paged}: a table of blocks in a {@link KvBlockPool} that
 * several sequences share, taken as the sequence grows ({@link #reserve}, before every write), given back as it
 * shrinks ({@link #truncate}), and shared with other sequences for a common prefix ({@link #shareRows}).
 *
 * <p>Both kinds address position {@code pos} of a layer as {@code base[pos >>> shift] + layer · layerStride +
 * (pos & mask) · rowBytes}: a contiguous cache is one block as long as its context. The attention kernels read
 * {@link #runEnd} positions from {@link #offset} at {@link #rowStride()}.
 */
public final class KVCache implements AutoCloseable {
    private final Arena arena;          // a contiguous cache's own memory; null when paged
    private final KvBlockPool pool;     // a paged cache's blocks; null when contiguous
    private final MemorySegment keys, values;
    private final int layers, contextLength, kvDim;
    private final long rowBytes, layerStride;
    private final int shift, mask;
    private final long[] base;          // byte offset of each block of positions; -1: not held (paged)
    private final int[] block;          // paged: the pool block behind each table entry, -1 none
    private final GGMLType type;
    private volatile boolean evicted;   // paged and parked: the pool took the blocks

    public KVCache(int layers, int contextLength, int kvDim, GGMLType type) {
        if (type != GGMLType.F32 && type != GGMLType.F16) throw new IllegalArgumentException("KV cache type must be F16 or F32, not " + type);
        this.arena = Arena.ofShared();
        this.pool = null;
        this.layers = layers;
        this.contextLength = contextLength;
        this.kvDim = kvDim;
        this.type = type;
        this.rowBytes = (long) (type == GGMLType.F16 ? 2 : 4) * kvDim;
        this.layerStride = rowBytes * contextLength;
        this.shift = 31;   // every position is in block 0
        this.mask = Integer.MAX_VALUE;
        this.base = new long[]{0};
        this.block = null;
        long total = layerStride * layers;
        this.keys = arena.allocate(total, 64);
        this.values = arena.allocate(total, 64);
    }

    private KVCache(KvBlockPool pool, int contextLength) {
        this.arena = null;
        this.pool = pool;
        this.layers = pool.layers;
        this.contextLength = contextLength;
        this.kvDim = pool.kvDim;
        this.type = pool.type;
        this.rowBytes = pool.rowBytes;
        this.layerStride = rowBytes * KvBlockPool.BLOCK_TOKENS;
        this.shift = KvBlockPool.BLOCK_SHIFT;
        this.mask = KvBlockPool.BLOCK_TOKENS - 1;
        int entries = (contextLength + KvBlockPool.BLOCK_TOKENS - 1) / KvBlockPool.BLOCK_TOKENS;
        this.base = new long[entries];
        this.block = new int[entries];
        java.util.Arrays.fill(base, -1);
        java.util.Arrays.fill(block, -1);
        this.keys = pool.keys;
        this.values = pool.values;
    }

    /** A sequence of up to {@code contextLength} positions whose blocks come from {@code pool} as it grows. */
    public static KVCache paged(KvBlockPool pool, int contextLength) {
        if (contextLength < 1) throw new IllegalArgumentException("a context of " + contextLength + " tokens");
        return new KVCache(pool, contextLength);
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

    /** Whether the blocks come from a shared {@link KvBlockPool}. */
    public boolean isPaged() {
        return pool != null;
    }

    public MemorySegment keys() {
        return keys;
    }

    public MemorySegment values() {
        return values;
    }

    /** Byte offset of position {@code pos} in layer {@code layer} (same for keys and values); its block must be held. */
    public long offset(int layer, int pos) {
        return base[pos >>> shift] + layer * layerStride + (pos & mask) * rowBytes;
    }

    /** Bytes from a position's row to the next one's, within a run ({@link #runEnd}). */
    public long rowStride() {
        return rowBytes;
    }

    /** The end of the run of positions from {@code pos} that lie at {@link #rowStride()} from each other (its block's end). */
    public int runEnd(int pos) {
        return (int) Math.min(contextLength, ((long) (pos >>> shift) + 1) << shift);
    }

    /** Stores one position's key and value vectors. */
    public void store(int layer, int pos, float[] k, int kOff, float[] v, int vOff) {
        if (base[pos >>> shift] < 0) throw new IllegalStateException("KV position " + pos + " was not reserved");
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
     * Makes positions {@code [from, to)} writable before a pass stores them: a paged cache takes the blocks it lacks
     * and copies any it shares with another sequence (copy-on-write); a {@link KvCacheFullException} when the pool
     * has none left. A contiguous cache holds every position already.
     */
    public void reserve(int from, int to) {
        if (pool == null || from >= to) return;
        if (from < 0 || to > contextLength) throw new IllegalArgumentException("positions " + from + ".." + to + " outside a context of " + contextLength);
        synchronized (pool) {
            if (evicted) throw new IllegalStateException("this KV cache was evicted while parked; resume it first");
            for (int i = from >>> shift; i <= (to - 1) >>> shift; i++) ownBlock(i);
        }
    }

    /** Table entry {@code i} held and not shared: taken, or copied from the shared block. Caller holds the pool's monitor. */
    private void ownBlock(int i) {
        int b = block[i];
        if (b >= 0 && !pool.shared(b)) return;
        int nb = pool.take(this);
        if (b >= 0) {
            pool.copyBlock(b, nb);
            pool.release(b);
        } else {
            held++;
        }
        block[i] = nb;
        base[i] = pool.blockOffset(nb);
    }

    /** Gives back the blocks wholly at or after position {@code length} (a paged cache; a contiguous one keeps its memory). */
    public void truncate(int length) {
        if (pool == null) return;
        synchronized (pool) {
            for (int i = (Math.max(0, length) + mask) >>> shift; i < block.length; i++) drop(i);
        }
    }

    private void drop(int i) {
        if (block[i] < 0) return;
        pool.release(block[i]);
        block[i] = -1;
        base[i] = -1;
        held--;
    }

    /** Blocks this cache holds (a shared one counts for each holder). */
    int heldBlocks() {
        return held;
    }

    private int held;

    /**
     * Takes positions {@code [from, to)} of every layer from {@code src}, which holds a prompt prefix this cache
     * agrees with up to {@code from}: on one pool, {@code src}'s whole blocks below {@code to} are mapped into this
     * cache's table (one copy in memory for both; a later write to either side copies the block first), and the
     * last, partial block's rows are copied; otherwise the rows are copied. {@code src}'s rows in the range must not
     * change during the call. Returns the end of what was taken: {@code to}, or less where {@code src} no longer
     * holds the rows (its parked cache was evicted).
     */
    public int shareRows(KVCache src, int from, int to) {
        checkSameShape(src, from, to);
        if (from == to) return to;
        if (pool == null || src.pool != pool) {
            copyRows(src, from, to);
            return to;
        }
        int p = from;
        synchronized (pool) {
            while (p < to) {
                int i = p >>> shift, start = i << shift, sb = src.block[i];
                if (sb < 0) break;
                if (start + KvBlockPool.BLOCK_TOKENS <= to) {
                    if (block[i] != sb) {
                        if (block[i] >= 0) pool.release(block[i]);
                        else held++;
                        pool.retain(sb);
                        block[i] = sb;
                        base[i] = pool.blockOffset(sb);
                    }
                    p = start + KvBlockPool.BLOCK_TOKENS;
                } else {
                    ownBlock(i);
                    copyRun(src, p, to);
                    p = to;
                }
            }
        }
        if (src.nonFinite) nonFinite = true;   // conservative: the taken rows may hold an Inf
        return Math.min(p, to);
    }

    /**
     * Copies positions {@code [from, to)} of every layer's keys and values from {@code src} (a cache of the same
     * model: layers, width and type), for a prompt prefix another session has already evaluated. The caller keeps
     * {@code src}'s rows in that range unchanged meanwhile.
     */
    public void copyRows(KVCache src, int from, int to) {
        checkSameShape(src, from, to);
        if (from == to) return;
        reserve(from, to);
        for (int p = from; p < to; ) {
            int end = Math.min(to, Math.min(runEnd(p), src.runEnd(p)));
            copyRun(src, p, end);
            p = end;
        }
        if (src.nonFinite) nonFinite = true;   // conservative: the copied rows may hold an Inf
    }

    /** Rows {@code [from, to)}, within one run of both caches, of every layer. */
    private void copyRun(KVCache src, int from, int to) {
        long bytes = (to - from) * rowBytes;
        for (int l = 0; l < layers; l++) {
            MemorySegment.copy(src.keys, src.offset(l, from), keys, offset(l, from), bytes);
            MemorySegment.copy(src.values, src.offset(l, from), values, offset(l, from), bytes);
        }
    }

    private void checkSameShape(KVCache src, int from, int to) {
        if (src.layers != layers || src.kvDim != kvDim || src.type != type)
            throw new IllegalArgumentException("KV caches of different shapes: " + src.layers + "×" + src.kvDim + " " + src.type + " vs " + layers + "×" + kvDim + " " + type);
        if (from < 0 || from > to || to > Math.min(contextLength, src.contextLength))
            throw new IllegalArgumentException("rows " + from + ".." + to + " are outside the caches (" + src.contextLength + ", " + contextLength + " positions)");
    }

    /**
     * Marks a paged cache idle: until {@link #resume()}, the pool may take all its blocks for other sequences when it
     * runs out (least recently parked first). A contiguous cache keeps its memory.
     */
    public void park() {
        if (pool == null) return;
        synchronized (pool) {
            pool.park(this);
        }
    }

    /** Ends {@link #park()}; returns whether the blocks were taken meanwhile (the sequence must start over from position 0). */
    public boolean resume() {
        if (pool == null) return false;
        synchronized (pool) {
            pool.unpark(this);
            boolean was = evicted;
            evicted = false;
            return was;
        }
    }

    /** Whether a parked cache's blocks were taken (it holds nothing until resumed). */
    public boolean evicted() {
        return evicted;
    }

    /** The pool takes every block of this parked cache. Caller holds the pool's monitor. */
    void evict() {
        for (int i = 0; i < block.length; i++) drop(i);
        evicted = true;
        pool.unpark(this);
    }

    /**
     * Whether any stored F16 key or value is Inf or NaN (an activation beyond F16's range). Until one is, attention
     * may use the fast finite-only half conversions ({@code FloatKernels.dotF16x4}, {@code axpyF16x4}).
     */
    public boolean nonFinite() {
        return nonFinite;
    }

    private volatile boolean nonFinite;

    /** Native bytes this cache holds: its whole context when contiguous, its blocks when paged. */
    public long byteSize() {
        if (pool == null) return 2 * layerStride * layers;
        synchronized (pool) {
            return 2L * held * pool.blockBytes;
        }
    }

    @Override
    public void close() {
        if (pool == null) {
            if (arena.scope().isAlive()) arena.close();
            return;
        }
        synchronized (pool) {
            pool.unpark(this);
            for (int i = 0; i < block.length; i++) drop(i);
        }
    }
}
