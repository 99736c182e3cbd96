package org.powerinfer4j.engine.kernels;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A persistent pool of {@code n} compute threads (the caller is thread 0). One {@link #run} call is one
 * parallel phase: every thread runs the task with its index, and the call returns when all have finished.
 * Threads spin briefly, then park, between phases, so the per-op overhead is a few microseconds — unlike a
 * parallel stream or an executor submit per op.
 *
 * <p>Thread-safe: the pool has one set of phase fields ({@code task}, {@code phase}, {@code remaining}), so calls
 * from different threads are serialised by a fair lock — a second caller waits until the running phase has
 * finished, and each gets its own phase. A call from inside a task (the calling thread of a running phase, or
 * one of the pool's workers) is refused with an {@link IllegalStateException}: the workers it would need are
 * busy with the outer phase, so it could only deadlock or share per-thread scratch with it. Callers that keep
 * per-thread state across several phases (the model's forward pass: thread-local scratch, per-thread attention
 * buffers) must still hold their own lock over the whole sequence — {@code Model} does.
 */
public final class WorkerPool implements AutoCloseable {

    /** Work for one thread of a phase. */
    @FunctionalInterface
    public interface Task {
        void run(int thread, int threads);
    }

    /** Work on the half-open row range {@code [from, to)}, the static share of one thread. */
    @FunctionalInterface
    public interface RangeTask {
        void run(int from, int to, int thread);
    }

    private final int threads;
    private final Thread[] workers;
    private volatile Task task;
    private volatile long phase;            // incremented to start a phase
    private final AtomicInteger remaining = new AtomicInteger();
    private volatile Throwable failure;
    private volatile boolean closed;
    private final Thread[] parked;
    private final ReentrantLock phaseLock = new ReentrantLock(true);
    private volatile Thread caller;          // the thread running a phase as thread 0, null between phases

    public WorkerPool(int threads) {
        if (threads < 1) throw new IllegalArgumentException("threads must be >= 1, is " + threads);
        this.threads = threads;
        this.workers = new Thread[threads - 1];
        this.parked = new Thread[threads];
        for (int i = 1; i < threads; i++) {
            final int index = i;
            Thread t = new Thread(() -> workerLoop(index), "powerinfer4j-worker-" + i);
            t.setDaemon(true);
            workers[i - 1] = t;
            parked[i] = t;
            t.start();
        }
    }

    public int threads() {
        return threads;
    }

    /**
     * Runs {@code t} on every thread and waits for all of them. Exceptions are rethrown in the caller. Concurrent
     * callers take turns (one phase at a time, first come first served); a call from inside a task throws.
     */
    public void run(Task t) {
        Thread me = Thread.currentThread();
        if (me == caller || isWorker(me))
            throw new IllegalStateException("WorkerPool.run called from inside a task of the same pool (nested phases are not supported)");
        phaseLock.lock();
        try {
            if (closed) throw new IllegalStateException("worker pool is closed");
            caller = me;
            try {
                runPhase(t);
            } finally {
                caller = null;
            }
        } finally {
            phaseLock.unlock();
        }
    }

    private boolean isWorker(Thread t) {
        for (Thread w : workers) if (w == t) return true;
        return false;
    }

    private void runPhase(Task t) {
        if (threads == 1) {
            t.run(0, 1);
            return;
        }
        failure = null;
        task = t;
        remaining.set(threads - 1);
        phase++;
        for (Thread w : workers) LockSupport.unpark(w);
        try {
            t.run(0, threads);
        } catch (Throwable e) {
            failure = e;
        }
        int spins = 0;
        while (remaining.get() > 0) {
            if (++spins > 1 << 16) Thread.yield();
            else Thread.onSpinWait();
        }
        task = null;
        Throwable f = failure;
        if (f instanceof RuntimeException re) throw re;
        if (f instanceof Error er) throw er;
    }

    /** Splits {@code [0, n)} into equal contiguous shares, one per thread (static partition). */
    public void forRange(int n, RangeTask t) {
        run((thread, count) -> {
            long from = (long) n * thread / count, to = (long) n * (thread + 1) / count;
            if (from < to) t.run((int) from, (int) to, thread);
        });
    }

    /**
     * Like {@link #forRange} but shares are multiples of {@code granule} (e.g. a row block size), so that
     * blocked kernels never split a block between threads.
     */
    public void forRange(int n, int granule, RangeTask t) {
        int blocks = (n + granule - 1) / granule;
        run((thread, count) -> {
            long fromB = (long) blocks * thread / count, toB = (long) blocks * (thread + 1) / count;
            int from = (int) Math.min((long) n, fromB * granule), to = (int) Math.min((long) n, toB * granule);
            if (from < to) t.run(from, to, thread);
        });
    }

    private void workerLoop(int index) {
        long seen = 0;
        while (!closed) {
            int spins = 0;
            while (phase == seen && !closed) {
                if (++spins < 20_000) Thread.onSpinWait();
                else LockSupport.parkNanos(this, 200_000);
            }
            if (closed) return;
            seen = phase;
            Task t = task;
            try {
                if (t != null) t.run(index, threads);
            } catch (Throwable e) {
                failure = e;
            } finally {
                remaining.decrementAndGet();
            }
        }
    }

    /** Stops the workers, after the phase in progress (if any) has finished. */
    @Override
    public void close() {
        Thread me = Thread.currentThread();
        if (me == caller || isWorker(me)) throw new IllegalStateException("WorkerPool.close called from inside a task of the same pool");
        phaseLock.lock();
        try {
            closed = true;
            for (Thread w : workers) LockSupport.unpark(w);
        } finally {
            phaseLock.unlock();
        }
    }
}
