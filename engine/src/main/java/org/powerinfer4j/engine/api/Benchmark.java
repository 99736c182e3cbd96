package org.powerinfer4j.engine.api;

import java.util.SplittableRandom;

/**
 * llama-bench's two measurements on a loaded model. {@code pp N}: one forward pass over N random prompt tokens
 * from an empty cache (prefill throughput). {@code tg N}: N single-token forward passes from an empty cache
 * (decode throughput). Untimed warm-up runs come first — at least one, and more until {@link #WARMUP_NANOS}
 * have passed and the JIT has stopped compiling ({@link #warmUp}), so the JIT has compiled the kernels (llama-bench
 * excludes one warm-up run; a JVM needs longer) — then {@code reps} timed runs.
 */
public final class Benchmark {
    private Benchmark() {}

    static final long WARMUP_NANOS = 2_000_000_000L;
    /** Warm-up goes on past {@link #WARMUP_NANOS} while the JIT is still compiling, but never longer than this. */
    static final long MAX_WARMUP_NANOS = 20_000_000_000L;
    /** Warm-up blocks, and the JIT time within one below which compilation counts as finished. */
    private static final long BLOCK_NANOS = 500_000_000L, QUIET_COMPILE_MILLIS = 5;

    /**
     * Runs {@code once} untimed: at least {@link #WARMUP_NANOS}, then in half-second blocks until the JIT spends
     * (almost) no time compiling during a block — at most {@link #MAX_WARMUP_NANOS}. Measured: pp8 at 2 threads on a
     * 2-core machine after the fixed 2 s alone gave 202 ± 55 t/s for a first test against 425 ± 4 for a third, the
     * compiler threads sharing the cores with the two compute threads; a rate-based stop (blocks within 3%) still
     * left 313–418 ± 50–85.
     */
    static void warmUp(Runnable once) {
        long start = System.nanoTime();
        do {
            once.run();
        } while (System.nanoTime() - start < WARMUP_NANOS);
        java.lang.management.CompilationMXBean jit = java.lang.management.ManagementFactory.getCompilationMXBean();
        if (jit == null || !jit.isCompilationTimeMonitoringSupported()) return;
        long compiled = jit.getTotalCompilationTime();
        while (System.nanoTime() - start < MAX_WARMUP_NANOS) {
            long t0 = System.nanoTime();
            do {
                once.run();
            } while (System.nanoTime() - t0 < BLOCK_NANOS);
            long now = jit.getTotalCompilationTime();
            if (now - compiled <= QUIET_COMPILE_MILLIS) return;
            compiled = now;
        }
    }

    /**
     * Mean ± sample standard deviation of tokens/s over the timed repetitions. {@code tokens} is per stream;
     * {@code samples} holds each repetition's tokens/s (all streams together) and {@code samplesNs} its wall time in
     * nanoseconds (llama-bench's {@code samples_ts} and {@code samples_ns}).
     */
    public record Result(String test, int tokens, double meanTokensPerSecond, double stdTokensPerSecond, double[] samples, long[] samplesNs) {}

    public static Result prefill(Model model, int tokens, int reps) {
        return run(model, "pp" + tokens, tokens, reps, true);
    }

    public static Result decode(Model model, int tokens, int reps) {
        return run(model, "tg" + tokens, tokens, reps, false);
    }

    /**
     * {@code streams} sessions decoding {@code tokens} tokens each at the same time, one thread per session (what
     * a server with {@code -np streams} does under load; llama-batched-bench's S_TG). Tokens/s is the total of all
     * streams: with batched decode passes it grows with the stream count until compute, not memory, is the limit.
     */
    public static Result decodeParallel(Model model, int tokens, int streams, int reps) {
        if (streams == 1) return decode(model, tokens, reps);
        if (streams < 1) throw new IllegalArgumentException("streams must be >= 1, is " + streams);
        String name = "tg" + tokens + " x" + streams;
        if (tokens < 1 || tokens > model.contextLength())
            throw new IllegalArgumentException(name + ": " + tokens + " tokens do not fit the context of " + model.contextLength() + " (raise -c)");
        int[][] ids = new int[streams][];
        for (int i = 0; i < streams; i++) ids[i] = randomTokens(model, tokens, 42 + i);
        double[] tps = new double[reps];
        long[] ns = new long[reps];
        java.util.List<Session> sessions = new java.util.ArrayList<>();
        try (var pool = java.util.concurrent.Executors.newFixedThreadPool(streams)) {
            for (int i = 0; i < streams; i++) sessions.add(model.newSession());
            warmUp(() -> runStreams(pool, sessions, ids));
            for (int rep = 0; rep < reps; rep++) {
                long t0 = System.nanoTime();
                runStreams(pool, sessions, ids);
                ns[rep] = System.nanoTime() - t0;
                tps[rep] = (double) streams * tokens / (ns[rep] / 1e9);
            }
        } finally {
            sessions.forEach(Session::close);
        }
        return summary(name, tokens, tps, ns);
    }

    private static void runStreams(java.util.concurrent.ExecutorService pool, java.util.List<Session> sessions, int[][] ids) {
        java.util.List<java.util.concurrent.Future<?>> running = new java.util.ArrayList<>();
        for (int i = 0; i < sessions.size(); i++) {
            Session s = sessions.get(i);
            int[] tokens = ids[i];
            running.add(pool.submit(() -> runOnce(s, tokens, false)));
        }
        for (var f : running) {
            try {
                f.get();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted", e);
            } catch (java.util.concurrent.ExecutionException e) {
                throw e.getCause() instanceof RuntimeException r ? r : new IllegalStateException(e.getCause());
            }
        }
    }

    private static Result run(Model model, String name, int tokens, int reps, boolean prefill) {
        if (tokens < 1 || tokens > model.contextLength())
            throw new IllegalArgumentException(name + ": " + tokens + " tokens do not fit the context of " + model.contextLength() + " (raise -c)");
        int[] ids = randomTokens(model, tokens);
        double[] tps = new double[reps];
        long[] ns = new long[reps];
        try (Session s = model.newSession()) {
            warmUp(() -> runOnce(s, ids, prefill));
            for (int rep = 0; rep < reps; rep++) {
                long t0 = System.nanoTime();
                runOnce(s, ids, prefill);
                ns[rep] = System.nanoTime() - t0;
                tps[rep] = tokens / (ns[rep] / 1e9);
            }
        }
        return summary(name, tokens, tps, ns);
    }

    private static Result summary(String name, int tokens, double[] tps, long[] ns) {
        int reps = tps.length;
        double mean = 0;
        for (double v : tps) mean += v;
        mean /= reps;
        double var = 0;
        for (double v : tps) var += (v - mean) * (v - mean);
        double std = reps > 1 ? Math.sqrt(var / (reps - 1)) : 0;
        return new Result(name, tokens, mean, std, tps, ns);
    }

    private static void runOnce(Session s, int[] ids, boolean prefill) {
        s.reset();
        if (prefill) s.evaluateNoCopy(ids);
        else for (int id : ids) s.evaluateNoCopy(id);
    }

    /** Deterministic random ids, avoiding the first few (often special) tokens, like llama-bench. */
    static int[] randomTokens(Model model, int n) {
        return randomTokens(model, n, 42);
    }

    private static int[] randomTokens(Model model, int n, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        int vocab = model.config().vocabSize();
        int lo = Math.min(3, vocab - 1);
        int[] ids = new int[n];
        for (int i = 0; i < n; i++) ids[i] = lo + r.nextInt(vocab - lo);
        return ids;
    }
}
