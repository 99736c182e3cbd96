package org.powerinfer4j.engine.model;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.LinkedHashSet;
import org.powerinfer4j.engine.tensor.GGMLType;

/**
 * One off-heap store of KV cache blocks shared by many sequences ({@link KVCache#paged}): a sequence's cache is a
 * table of blocks of {@link #BLOCK_TOKENS} positions, taken from here as it grows and given back when it shrinks,
 * so the sequences of a server share one budget of tokens instead of each holding a whole context. A block holds,
 * for every layer, its positions' keys (and, in the parallel values segment, values) row after row, so the
 * attention kernels read a block's positions at one stride.
 *
 * <p>Blocks are reference-counted: a prompt prefix one sequence has evaluated is mapped into another's table
 * ({@link KVCache#shareRows}) rather than recomputed or copied, and the first write into a shared block copies it
 * first (copy-on-write, {@link KVCache#reserve}). Sequences that are idle may be <i>parked</i>: when no block is
 * free, the least recently parked ones lose their whole cache (and start over when next used) before a request
 * fails. Every table change and reference count is guarded by this pool's monitor.
 */
public final class KvBlockPool implements AutoCloseable {
    /** Positions per block: a multiple of the 4-position attention kernels' quads, small enough to share prefixes finely. */
    public static final int BLOCK_TOKENS = 16;
    static final int BLOCK_SHIFT = 4;

    private final Arena arena = Arena.ofShared();
    final MemorySegment keys, values;
    final int layers, kvDim, blocks;
    final GGMLType type;
    final long rowBytes, blockBytes;
    private final int[] refs;
    private final int[] free;
    private int freeCount;
    private final LinkedHashSet<KVCache> parked = new LinkedHashSet<>();   // oldest parked first
    private boolean closed;

    /** A pool of {@code totalTokens} positions (rounded up to whole blocks) for a model of these dimensions. */
    public KvBlockPool(int layers, int kvDim, GGMLType type, int totalTokens) {
        if (type != GGMLType.F32 && type != GGMLType.F16) throw new IllegalArgumentException("KV cache type must be F16 or F32, not " + type);
        if (totalTokens < 1) throw new IllegalArgumentException("a KV cache of " + totalTokens + " tokens");
        this.layers = layers;
        this.kvDim = kvDim;
        this.type = type;
        this.blocks = (totalTokens + BLOCK_TOKENS - 1) / BLOCK_TOKENS;
        this.rowBytes = (long) (type == GGMLType.F16 ? 2 : 4) * kvDim;
        this.blockBytes = rowBytes * BLOCK_TOKENS * layers;
        this.keys = arena.allocate(blockBytes * blocks, 64);
        this.values = arena.allocate(blockBytes * blocks, 64);
        this.refs = new int[blocks];
        this.free = new int[blocks];
        for (int i = 0; i < blocks; i++) free[i] = blocks - 1 - i;   // block 0 first
        this.freeCount = blocks;
    }

    /** Native bytes of a pool of {@code totalTokens} positions. */
    public static long bytesFor(int layers, int kvDim, GGMLType type, int totalTokens) {
        long blocks = (totalTokens + BLOCK_TOKENS - 1) / BLOCK_TOKENS;
        return 2L * blocks * BLOCK_TOKENS * layers * kvDim * (type == GGMLType.F16 ? 2 : 4);
    }

    public int capacityTokens() {
        return blocks * BLOCK_TOKENS;
    }

    /** Positions in blocks held by some sequence (a shared block counts once). */
    public synchronized int usedTokens() {
        return (blocks - freeCount) * BLOCK_TOKENS;
    }

    public GGMLType type() {
        return type;
    }

    /**
     * A free block for {@code taker} with one reference; when none is free, parked caches (other than the taker) are
     * evicted, oldest first, until one is. Caller holds the monitor.
     */
    int take(KVCache taker) {
        if (closed) throw new IllegalStateException("the shared KV cache is closed");
        while (freeCount == 0) {
            KVCache victim = null;
            for (KVCache k : parked) {
                if (k != taker && k.heldBlocks() > 0) {
                    victim = k;
                    break;
                }
            }
            if (victim == null)
                throw new KvCacheFullException("the KV cache is full: all " + capacityTokens() + " tokens are in use by other sequences "
                        + "(raise -c, or lower --parallel or --ctx-per-slot)");
            victim.evict();
        }
        int b = free[--freeCount];
        refs[b] = 1;
        return b;
    }

    void retain(int block) {
        refs[block]++;
    }

    void release(int block) {
        if (--refs[block] == 0 && !closed) free[freeCount++] = block;
    }

    boolean shared(int block) {
        return refs[block] > 1;
    }

    long blockOffset(int block) {
        return block * blockBytes;
    }

    /** Copies all of block {@code from} (every layer, keys and values) into block {@code to}. */
    void copyBlock(int from, int to) {
        MemorySegment.copy(keys, blockOffset(from), keys, blockOffset(to), blockBytes);
        MemorySegment.copy(values, blockOffset(from), values, blockOffset(to), blockBytes);
    }

    void park(KVCache k) {
        parked.remove(k);   // re-parking moves it to the young end
        parked.add(k);
    }

    void unpark(KVCache k) {
        parked.remove(k);
    }

    /** Frees the blocks; sequences still holding some fail on their next use. */
    @Override
    public synchronized void close() {
        if (closed) return;
        closed = true;
        parked.clear();
        arena.close();
    }
}
