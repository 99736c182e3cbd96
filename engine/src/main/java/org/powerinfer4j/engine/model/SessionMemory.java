package org.powerinfer4j.engine.model;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import org.powerinfer4j.engine.tensor.GGMLType;

/**
 * What one session's buffers need, checked before they are allocated: the KV cache lives off-heap (native memory,
 * zeroed on allocation, so an oversized one would page in until the OS kills the process), the attention scores
 * and activations on the Java heap. A context that cannot fit is a one-line error saying how much it needs and how
 * much there is, instead of an {@link OutOfMemoryError} or the OOM killer.
 */
public final class SessionMemory {
    private SessionMemory() {}

    /** Native bytes of a session's KV cache. */
    public static long kvBytes(ModelConfig c, int contextLength, GGMLType kvType) {
        return KVCache.bytesFor(c.layers(), contextLength, c.kvDim(), kvType);
    }

    /** Heap bytes of a session's attention scores (one row per thread) and activations for {@code maxBatch} tokens. */
    public static long heapBytes(ModelConfig c, int contextLength, int maxBatch, int threads) {
        long perToken = 3L * c.dim() + Math.max(c.dim(), c.qDim()) + 2L * c.qDim() + 2L * c.kvDim() + 2L * c.ffDim();
        return 4L * ((long) threads * contextLength + (long) maxBatch * perToken + c.vocabSize());
    }

    /** Throws a {@link ModelException} when a session of {@code contextLength} tokens cannot fit in the memory available now. */
    public static void requireFits(ModelConfig c, int contextLength, int maxBatch, int threads, GGMLType kvType) {
        long kv = kvBytes(c, contextLength, kvType);
        long nativeFree = availableNativeBytes();
        if (kv > nativeFree)
            throw new ModelException("a context of " + contextLength + " tokens needs " + gib(kv) + " for its KV cache (" + c.layers()
                    + " layers × " + c.kvDim() + " " + kvType + " keys and values per token), but only " + gib(nativeFree)
                    + " of memory is available: lower -c");
        requireHeapFits(c, contextLength, maxBatch, threads);
    }

    /** The heap part of {@link #requireFits}: a session whose KV cache comes from a shared pool needs only this. */
    public static void requireHeapFits(ModelConfig c, int contextLength, int maxBatch, int threads) {
        long heap = heapBytes(c, contextLength, maxBatch, threads);
        long heapFree = Runtime.getRuntime().maxMemory() - liveHeapBytes();
        if (heap > heapFree)
            throw new ModelException("a context of " + contextLength + " tokens needs " + gib(heap) + " of Java heap for attention scores ("
                    + threads + " threads) and activations, but only " + gib(heapFree) + " is free: lower -c or -t, or raise -Xmx");
    }

    /** Throws a {@link ModelException} when a shared KV cache of {@code totalTokens} positions cannot fit in the memory available now. */
    public static void requirePoolFits(ModelConfig c, int totalTokens, GGMLType kvType) {
        long kv = KvBlockPool.bytesFor(c.layers(), c.kvDim(), kvType, totalTokens);
        long nativeFree = availableNativeBytes();
        if (kv > nativeFree)
            throw new ModelException("a shared KV cache of " + totalTokens + " tokens needs " + gib(kv) + ", but only " + gib(nativeFree)
                    + " of memory is available: lower -c");
    }

    /**
     * The heap still in use after the last collection (garbage since then is not a shortage: the allocation would
     * collect it); 0 before the first collection.
     */
    static long liveHeapBytes() {
        long live = 0;
        for (var pool : ManagementFactory.getMemoryPoolMXBeans()) {
            var after = pool.getType() == java.lang.management.MemoryType.HEAP ? pool.getCollectionUsage() : null;
            if (after != null) live += after.getUsed();
        }
        return live;
    }

    /**
     * Physical memory the process can still use: Linux's MemAvailable (free plus reclaimable page cache), capped by
     * the total the JVM sees (a container's limit); elsewhere the JVM's free physical memory.
     */
    static long availableNativeBytes() {
        long total = Long.MAX_VALUE, free = Long.MAX_VALUE;
        try {
            var os = (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
            total = os.getTotalMemorySize();
            free = os.getFreeMemorySize();
        } catch (LinkageError | ClassCastException e) {
            // a runtime without jdk.management (a jlink'd JRE): /proc alone, else no limit we can see
        }
        try {
            for (String line : Files.readAllLines(Path.of("/proc/meminfo")))
                if (line.startsWith("MemAvailable:"))
                    return Math.min(total, 1024 * Long.parseLong(line.replaceAll("[^0-9]", "")));
        } catch (IOException | RuntimeException e) {
            // not Linux (or /proc unreadable): the JVM's own figure
        }
        return free;
    }

    private static String gib(long bytes) {
        return String.format(Locale.ROOT, "%.1f GiB", bytes / (double) (1L << 30));
    }
}
