package org.powerinfer4j.engine.backend;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import org.powerinfer4j.engine.gpu.GpuBackend;
import org.powerinfer4j.engine.gpu.GpuEvent;

/**
 * Timestamps when the device reaches an event, for the overlap measurement. The host thread that issued the work
 * is busy with the cold neurons at that moment, so a second thread blocks on the event and reads the clock. It
 * only observes; nothing waits for it except the measurement.
 */
final class CompletionWatcher implements AutoCloseable {
    private record Job(GpuEvent event, CompletableFuture<Long> done) {}

    private static final Job STOP = new Job(null, null);
    private final LinkedBlockingQueue<Job> queue = new LinkedBlockingQueue<>();
    private final Thread thread;

    CompletionWatcher(GpuBackend gpu) {
        thread = new Thread(() -> {
            try {
                for (Job j; (j = queue.take()) != STOP; ) {
                    try {
                        gpu.synchronize(j.event);
                    } catch (RuntimeException e) {
                        // the issuing thread sees the failure when it synchronises the stream; here only the time matters
                    }
                    j.done.complete(System.nanoTime());
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, "hybrid-ffn-completion-watcher");
        thread.setDaemon(true);
        thread.start();
    }

    /** The time (System.nanoTime) at which the device reaches {@code e}, once it has. */
    CompletableFuture<Long> watch(GpuEvent e) {
        CompletableFuture<Long> f = new CompletableFuture<>();
        queue.add(new Job(e, f));
        return f;
    }

    @Override
    public void close() {
        queue.add(STOP);
        try {
            thread.join(5_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
