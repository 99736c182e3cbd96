package org.powerinfer4j.engine.kernels;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.atomic.AtomicIntegerArray;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;

/**
 * {@link WorkerPool#forRange(int, int, WorkerPool.RangeTask)}: whatever thread
 * takes which piece, every index is covered exactly once, and every piece starts at a multiple of the granule
 * (blocked kernels rely on that for their bits) and ends at one or at n.
 */
class WorkerPoolRangeTest {

    @Property(tries = 60)
    void everyIndexExactlyOnceInGranuleAlignedPieces(@ForAll @IntRange(min = 0, max = 5000) int n, @ForAll @IntRange(min = 1, max = 70) int granule,
                                                     @ForAll @IntRange(min = 1, max = 4) int threads) {
        try (WorkerPool pool = new WorkerPool(threads)) {
            AtomicIntegerArray hits = new AtomicIntegerArray(n);
            AtomicIntegerArray badThread = new AtomicIntegerArray(1), misaligned = new AtomicIntegerArray(1);
            pool.forRange(n, granule, (from, to, thread) -> {
                if (thread < 0 || thread >= threads) badThread.incrementAndGet(0);
                if (from % granule != 0 || (to != n && to % granule != 0) || from >= to) misaligned.incrementAndGet(0);
                for (int i = from; i < to; i++) hits.incrementAndGet(i);
            });
            for (int i = 0; i < n; i++) assertThat(hits.get(i)).as("index %d of %d", i, n).isEqualTo(1);
            assertThat(badThread.get(0)).isZero();
            assertThat(misaligned.get(0)).isZero();
        }
    }

    @Property(tries = 30)
    void theUngranularFormCoversEveryIndexOnce(@ForAll @IntRange(min = 0, max = 3000) int n, @ForAll @IntRange(min = 1, max = 3) int threads) {
        try (WorkerPool pool = new WorkerPool(threads)) {
            AtomicIntegerArray hits = new AtomicIntegerArray(n);
            pool.forRange(n, (from, to, thread) -> {
                for (int i = from; i < to; i++) hits.incrementAndGet(i);
            });
            for (int i = 0; i < n; i++) assertThat(hits.get(i)).isEqualTo(1);
        }
    }
}
