package org.powerinfer4j.engine.api;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;
import org.powerinfer4j.engine.kernels.KernelTestAccess;
import org.powerinfer4j.engine.sparse.SparseMode;

/**
 * Sessions on one shared {@link Model} evaluated from several threads at once give exactly (bit for bit) the
 * logits each gives alone. The models are big enough that every product runs on the 2-thread worker pool, so a
 * pool shared without coordination shows up here as wrong logits.
 */
class ConcurrentSessionsTest {
    private static final int SESSIONS = 6, ROUNDS = 3, PROMPT = 6, DECODE = 10;

    @Test
    void denseSessionsOnOneModelEqualSerialOnes() throws Exception {
        Path p = GeneratedModels.llama110m();
        // EXACT: concurrent steps share passes with per-token products, so each session's logits are still its own
        // bit for bit (the default FAST batches them as matMul, within rounding: SequenceBatchTest bounds that)
        try (Model m = Model.open(p, ModelOptions.defaults().withThreads(2).withContextLength(64).withDecodeBatching(DecodeBatching.EXACT))) {
            assertThat((long) m.config().dim() * m.config().dim()).as("a q/k/v/o product reaches the pool")
                    .isGreaterThan(KernelTestAccess.parallelThreshold());
            assertConcurrentEqualsSerial(m);
        }
    }

    @Test
    void sessionsOnASharedKvCacheEqualSerialOnes() throws Exception {
        // the sessions' caches are blocks of one pool smaller than SESSIONS whole contexts; a paged cache gives the
        // contiguous cache's logits bit for bit, so the references are sessions alone with caches of their own
        Path p = GeneratedModels.llama110m();
        try (Model m = Model.open(p, ModelOptions.defaults().withThreads(2).withContextLength(64).withDecodeBatching(DecodeBatching.EXACT));
             SharedKvCache cache = m.newSharedKvCache(SESSIONS * 32)) {
            assertConcurrentEqualsSerial(m, () -> m.newSession(cache, 64));
            assertThat(cache.usedTokens()).as("every session gave its blocks back").isZero();
        }
    }

    @Test
    void sparseSessionsOnOneModelEqualSerialOnes() throws Exception {
        Path p = GeneratedModels.sparseRelu();
        try (Model m = Model.open(p, ModelOptions.defaults().withThreads(2).withContextLength(64).withDecodeBatching(DecodeBatching.EXACT))) {
            assertThat(m.sparseMode()).isEqualTo(SparseMode.PREDICT);
            assertConcurrentEqualsSerial(m);
        }
    }

    @Test
    void mixtureOfExpertsSessionsOnOneModelEqualSerialOnes() throws Exception {
        // routed experts (ReLU, exact) in shared decode passes: an expert chosen by several sessions is read once for all
        try (Model m = Model.open(org.powerinfer4j.engine.TestData.file("archs/mixtral.gguf"), ModelOptions.defaults().withThreads(2)
                .withContextLength(64).withActivation(org.powerinfer4j.engine.model.FfnActivation.REGLU).withDecodeBatching(DecodeBatching.EXACT))) {
            assertThat(m.sparseMode()).isEqualTo(SparseMode.EXACT);
            assertThat(m.transformer().supportsSequenceBatches()).isTrue();
            assertConcurrentEqualsSerial(m);
        }
    }

    private static void assertConcurrentEqualsSerial(Model m) throws Exception {
        assertConcurrentEqualsSerial(m, m::newSession);
    }

    /** Sessions from {@code concurrent} run at once equal sessions of {@link Model#newSession()} run alone. */
    private static void assertConcurrentEqualsSerial(Model m, java.util.function.Supplier<Session> concurrent) throws Exception {
        int vocab = m.config().vocabSize();
        int[][] scripts = new int[SESSIONS][];
        SplittableRandom r = new SplittableRandom(42);
        for (int i = 0; i < SESSIONS; i++) {
            scripts[i] = new int[PROMPT + i + DECODE];
            for (int j = 0; j < scripts[i].length; j++) scripts[i][j] = 3 + r.nextInt(vocab - 3);
        }
        // alone[i][v]: session i run by itself with a prompt chunk of PROMPT + v tokens (a prefill chunk and decode
        // steps round differently, so each chunking has its own reference)
        List<List<List<float[]>>> alone = new ArrayList<>();
        for (int[] s : scripts) {
            List<List<float[]>> variants = new ArrayList<>();
            for (int v = 0; v < 3; v++) variants.add(run(m::newSession, s, PROMPT + v));
            alone.add(variants);
        }

        int mismatches = 0, steps = 0;
        float maxDelta = 0;
        try (ExecutorService threads = Executors.newFixedThreadPool(SESSIONS)) {
            for (int round = 0; round < ROUNDS; round++) {
                CyclicBarrier start = new CyclicBarrier(SESSIONS);
                List<Future<List<float[]>>> futures = new ArrayList<>();
                for (int i = 0; i < SESSIONS; i++) {
                    int[] s = scripts[i];
                    int prompt = PROMPT + (round + i) % 3;    // varied chunking: prefill (matrix–matrix) and decode steps interleave
                    futures.add(threads.submit(() -> {
                        start.await();
                        return run(concurrent, s, prompt);
                    }));
                }
                for (int i = 0; i < SESSIONS; i++) {
                    List<float[]> got = futures.get(i).get();
                    List<float[]> want = alone.get(i).get((round + i) % 3);
                    assertThat(got).hasSameSizeAs(want);
                    for (int k = 0; k < got.size(); k++) {
                        float[] a = got.get(k), b = want.get(k);
                        steps++;
                        if (!java.util.Arrays.equals(a, b)) {
                            mismatches++;
                            for (int v = 0; v < a.length; v++) maxDelta = Math.max(maxDelta, Math.abs(a[v] - b[v]));
                        }
                    }
                }
            }
        }
        assertThat(mismatches).as("logit vectors differing from the session run alone (of %d; max |Δ| %s)", steps, maxDelta).isZero();
        // a waiting stream is woken by the pass that serves it or by whoever releases the lock; one that had to
        // wait out its park's timeout (20 ms) before finding the lock free was a lost wake-up (one may be a race
        // with the timeout itself on a loaded machine)
        assertThat(m.decodeRescues()).as("decode steps rescued by the park timeout, of %d", steps).isLessThanOrEqualTo(1);
    }

    /** A prompt chunk of {@code prompt} tokens, then one token at a time; the logits after each evaluation. */
    private static List<float[]> run(java.util.function.Supplier<Session> sessions, int[] script, int prompt) {
        List<float[]> out = new ArrayList<>();
        try (Session s = sessions.get()) {
            out.add(s.evaluate(java.util.Arrays.copyOf(script, prompt)));
            for (int j = prompt; j < script.length; j++) out.add(s.evaluate(script[j]));
        }
        return out;
    }
}
