package org.powerinfer4j.spark;

import java.io.Serializable;
import java.util.ArrayDeque;
import java.util.Iterator;
import java.util.NoSuchElementException;
import java.util.concurrent.CancellationException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.function.MapPartitionsFunction;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.util.TaskCompletionListener;

/**
 * One partition's generation: up to {@code streams} rows generate at once, each on its own session of the executor's
 * shared model, so their decode steps ride shared passes over the weights (the engine's continuous batching); rows
 * come out in input order. The input is read lazily, a bounded window ahead, so a partition of any size streams
 * through in constant memory.
 *
 * @param promptIndex the prompt column's position in the input rows
 * @param seedIndex   the seed column's position, or -1: every row takes {@code generation.seed()}
 * @param streams     rows generating at once in this task
 * @param failOnError a row that cannot be generated fails the task (and, after retries, the job) instead of getting an error
 */
record PartitionGenerator(ModelSpec model, GenerationSpec generation, int promptIndex, int seedIndex, int streams, boolean failOnError,
                          GenerationMetrics metrics) implements MapPartitionsFunction<Row, Row>, Serializable {

    /** Rows read ahead of the one being returned, per stream: enough that one long row does not idle the others. */
    private static final int LOOKAHEAD_PER_STREAM = 4;
    private static final AtomicInteger THREADS = new AtomicInteger();

    PartitionGenerator {
        if (streams < 1) throw new IllegalArgumentException("streams must be >= 1, is " + streams);
    }

    @Override
    public Iterator<Row> call(Iterator<Row> input) {
        if (!input.hasNext()) return input;
        ExecutorModels.Shared shared = ExecutorModels.get(model);
        return new Ordered(input, shared);
    }

    /** The output rows in input order, generated {@code streams} at a time on a pool owned by this task. */
    private final class Ordered implements Iterator<Row> {
        private final Iterator<Row> input;
        private final ExecutorModels.Shared shared;
        private final ArrayDeque<Future<Row>> pending = new ArrayDeque<>();
        private final AtomicBoolean stopped = new AtomicBoolean();
        private final ExecutorService pool;
        private final TaskContext task = TaskContext.get();

        Ordered(Iterator<Row> input, ExecutorModels.Shared shared) {
            this.input = input;
            this.shared = shared;
            this.pool = Executors.newFixedThreadPool(streams, r -> Thread.ofPlatform().daemon()
                    .name("powerinfer4j-spark-" + THREADS.incrementAndGet()).unstarted(r));
            if (task != null) task.addTaskCompletionListener((TaskCompletionListener) ctx -> stop());   // killed, failed or done
        }

        @Override
        public boolean hasNext() {
            fill();
            if (pending.isEmpty()) {
                stop();
                return false;
            }
            return true;
        }

        @Override
        public Row next() {
            if (!hasNext()) throw new NoSuchElementException();
            Future<Row> head = pending.poll();
            try {
                return head.get();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                stop();
                throw new CancellationException("interrupted while generating");
            } catch (ExecutionException e) {
                stop();
                if (e.getCause() instanceof RuntimeException re) throw re;
                if (e.getCause() instanceof Error err) throw err;
                throw new IllegalStateException(e.getCause());
            }
        }

        /** Reads input rows (on the task's thread: Spark's iterators are not thread-safe) and queues their generation. */
        private void fill() {
            while (pending.size() < streams * LOOKAHEAD_PER_STREAM && !stopped.get() && input.hasNext()) {
                Row row = input.next();
                Object[] values = new Object[row.length() + 5];
                for (int i = 0; i < row.length(); i++) values[i] = row.get(i);
                String prompt = (String) values[promptIndex];
                long seed = seedIndex < 0 || values[seedIndex] == null ? generation.seed() : ((Number) values[seedIndex]).longValue();
                pending.add(pool.submit(() -> {
                    Completion c = RowGenerator.leased(shared, prompt, generation, seed, failOnError, this::cancelled);
                    metrics.record(c);
                    System.arraycopy(c.values(), 0, values, values.length - 5, 5);
                    return RowFactory.create(values);
                }));
            }
        }

        private boolean cancelled() {
            return stopped.get() || task != null && task.isInterrupted();
        }

        private void stop() {
            if (stopped.compareAndSet(false, true)) pool.shutdownNow();
        }
    }
}
