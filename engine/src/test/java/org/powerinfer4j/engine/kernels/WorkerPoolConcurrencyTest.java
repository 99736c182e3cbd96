package org.powerinfer4j.engine.kernels;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** {@link WorkerPool#run} from many threads at once: each caller gets a whole phase of its own; nested calls are refused. */
class WorkerPoolConcurrencyTest {

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void concurrentCallersEachGetTheirOwnPhase() throws Exception {
        int callers = 6, rounds = 400, n = 4096;
        try (WorkerPool pool = new WorkerPool(3); ExecutorService ex = Executors.newFixedThreadPool(callers)) {
            CyclicBarrier start = new CyclicBarrier(callers);
            List<Future<Integer>> wrong = new ArrayList<>();
            for (int c = 0; c < callers; c++) {
                int id = c + 1;
                wrong.add(ex.submit(() -> {
                    start.await();
                    int bad = 0;
                    int[] out = new int[n];
                    for (int r = 0; r < rounds; r++) {
                        int v = id * 100_000 + r;
                        // every element written exactly once, by the share that owns it
                        pool.forRange(n, (from, to, t) -> {
                            for (int i = from; i < to; i++) out[i] = v;
                        });
                        for (int x : out) if (x != v) bad++;
                        int[] seen = new int[pool.threads()];
                        pool.run((t, count) -> seen[t] = count);
                        for (int s : seen) if (s != pool.threads()) bad++;
                    }
                    return bad;
                }));
            }
            for (Future<Integer> f : wrong) assertThat(f.get()).isZero();
        }
    }

    @Test
    @Timeout(value = 20, unit = TimeUnit.SECONDS)
    void aNestedCallFromATaskIsRefusedNotDeadlocked() {
        for (int threads : new int[] {1, 2, 3}) {
            try (WorkerPool pool = new WorkerPool(threads)) {
                AtomicReference<Throwable> fromWorker = new AtomicReference<>();
                assertThatThrownBy(() -> pool.run((t, count) -> {
                    try {
                        pool.run((t2, c2) -> {});
                    } catch (IllegalStateException e) {
                        if (t != 0) fromWorker.set(e);
                        if (t == 0) throw e;
                    }
                })).isInstanceOf(IllegalStateException.class).hasMessageContaining("nested");
                if (threads > 1) assertThat(fromWorker.get()).isInstanceOf(IllegalStateException.class);
                // and the pool still works afterwards
                int[] hits = new int[threads];
                pool.run((t, count) -> hits[t]++);
                assertThat(hits).containsOnly(1);
            }
        }
    }

    @Test
    @Timeout(value = 20, unit = TimeUnit.SECONDS)
    void closeWaitsForTheRunningPhase() throws Exception {
        WorkerPool pool = new WorkerPool(2);
        CyclicBarrier inside = new CyclicBarrier(2);
        int[] done = new int[2];
        Thread t = new Thread(() -> pool.run((th, c) -> {
            if (th == 0) {
                try {
                    inside.await();
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            }
            try {
                Thread.sleep(200);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            done[th] = 1;
        }));
        t.start();
        inside.await();
        pool.close();
        t.join();
        assertThat(done).containsExactly(1, 1);
        assertThatThrownBy(() -> pool.run((a, b) -> {})).isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
    }
}
