package org.powerinfer4j.bench;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;
import org.powerinfer4j.engine.kernels.WorkerPool;

/**
 * Memory-bandwidth probe: sums a 1 GiB off-heap array (vectorized, so the loop is load-bound) with 1 thread and
 * with N threads (default: available processors), and prints the best of several passes in GB/s (10^9 B/s).
 * The matVec benchmarks report weight GB/s on the same scale, so their ratio is the fraction of bandwidth bound.
 * <pre>java --add-modules jdk.incubator.vector -cp bench/target/benchmarks.jar org.powerinfer4j.bench.BandwidthProbe [threads] [MiB]</pre>
 */
public final class BandwidthProbe {
    private static final VectorSpecies<Long> L = LongVector.SPECIES_PREFERRED;

    public static void main(String[] args) {
        int threads = args.length > 0 ? Integer.parseInt(args[0]) : Runtime.getRuntime().availableProcessors();
        long bytes = (args.length > 1 ? Long.parseLong(args[1]) : 1024L) << 20;
        try (Arena arena = Arena.ofShared()) {
            MemorySegment s = arena.allocate(bytes, 4096);
            for (long o = 0; o < bytes; o += 8) s.set(java.lang.foreign.ValueLayout.JAVA_LONG, o, o);
            System.out.printf("bandwidth 1 thread : %.1f GB/s%n", measure(s, 1));
            if (threads > 1) System.out.printf("bandwidth %d threads: %.1f GB/s%n", threads, measure(s, threads));
        }
    }

    /** Best of 5 full passes with {@code threads} threads, each summing a contiguous share. */
    public static double measure(MemorySegment s, int threads) {
        long chunk = s.byteSize() / threads / L.vectorByteSize() * L.vectorByteSize();
        long[] sink = new long[threads];
        double best = 0;
        try (WorkerPool pool = new WorkerPool(threads)) {
            for (int pass = 0; pass < 6; pass++) {
                long t0 = System.nanoTime();
                pool.run((t, n) -> sink[t] += sum(s, t * chunk, chunk));
                long ns = System.nanoTime() - t0;
                if (pass > 0) best = Math.max(best, (double) chunk * threads / ns);
            }
        }
        if (sink[0] == 42) System.out.println();
        return best;
    }

    private static long sum(MemorySegment s, long from, long len) {
        int step = L.vectorByteSize();
        LongVector a0 = LongVector.zero(L), a1 = a0, a2 = a0, a3 = a0;
        long o = from, end = from + len - 4L * step;
        for (; o <= end; o += 4L * step) {
            a0 = a0.add(LongVector.fromMemorySegment(L, s, o, ByteOrder.LITTLE_ENDIAN));
            a1 = a1.add(LongVector.fromMemorySegment(L, s, o + step, ByteOrder.LITTLE_ENDIAN));
            a2 = a2.add(LongVector.fromMemorySegment(L, s, o + 2L * step, ByteOrder.LITTLE_ENDIAN));
            a3 = a3.add(LongVector.fromMemorySegment(L, s, o + 3L * step, ByteOrder.LITTLE_ENDIAN));
        }
        return a0.add(a1).add(a2.add(a3)).reduceLanes(VectorOperators.ADD);
    }
}
