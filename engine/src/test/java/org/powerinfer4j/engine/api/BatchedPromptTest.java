package org.powerinfer4j.engine.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/**
 * Under {@link DecodeBatching#FAST}, prompt chunks ride the decode passes ({@code DecodeBatcher.prompt}): rows of
 * several sequences' prompts and decode tokens in one {@code Transformer.forwardSequences} pass. Each session still
 * gets, within FAST's rounding, the logits of its prompt run alone as a chunk, and the same greedy tokens after it —
 * prompts of every length, a one-token prompt, one longer than a chunk (two chunks, the first without logits).
 */
class BatchedPromptTest {
    /** The bound {@code SequenceBatchTest} holds FAST decode steps to. */
    private static final float FAST_TOLERANCE = 0.05f;
    private static final int[] PROMPTS = {3, 10, 17, 45, 1, 25};
    private static final int DECODE = 5;

    @org.junit.jupiter.params.ParameterizedTest
    @org.junit.jupiter.params.provider.ValueSource(strings = {"llama110m", "sparseRelu"})
    void promptsRidingConcurrentPassesAreWithinRoundingOfPromptsAlone(String model) throws Exception {
        // a dense 110m model (every product on the 2-thread pool) and the PowerInfer sparse model (predict mode)
        Path p = model.equals("llama110m") ? GeneratedModels.llama110m() : GeneratedModels.sparseRelu();
        ModelOptions o = ModelOptions.defaults().withThreads(2).withContextLength(96).withDecodeBatching(DecodeBatching.FAST);
        try (Model batched = Model.open(p, o); Model alone = Model.open(p, o)) {
            batched.batchPrompts = true;
            int vocab = batched.config().vocabSize();
            SplittableRandom r = new SplittableRandom(11);
            int[][] prompts = new int[PROMPTS.length][];
            for (int i = 0; i < PROMPTS.length; i++) {
                prompts[i] = new int[PROMPTS[i]];
                for (int j = 0; j < PROMPTS[i]; j++) prompts[i][j] = 1 + r.nextInt(vocab - 1);
            }
            List<List<float[]>> want = new ArrayList<>();
            for (int[] pr : prompts) want.add(greedy(alone, pr));
            assertThat(alone.batchedPromptChunks()).as("a lone session's prompt runs as a chunk alone").isZero();

            List<Future<List<float[]>>> got = new ArrayList<>();
            CyclicBarrier go = new CyclicBarrier(PROMPTS.length);
            try (ExecutorService threads = Executors.newFixedThreadPool(PROMPTS.length)) {
                for (int[] pr : prompts)
                    got.add(threads.submit(() -> {
                        go.await();
                        return greedy(batched, pr);
                    }));
                for (int i = 0; i < PROMPTS.length; i++) {
                    List<float[]> a = got.get(i).get(), b = want.get(i);
                    assertThat(a).hasSameSizeAs(b);
                    for (int k = 0; k < a.size(); k++) {
                        float maxDelta = 0;
                        for (int v = 0; v < vocab; v++) maxDelta = Math.max(maxDelta, Math.abs(a.get(k)[v] - b.get(k)[v]));
                        assertThat(argmax(a.get(k))).as("prompt %d (%d tokens), evaluation %d: greedy token", i, PROMPTS[i], k).isEqualTo(argmax(b.get(k)));
                        assertThat(maxDelta).as("prompt %d (%d tokens), evaluation %d: max |Δ| of the logits", i, PROMPTS[i], k).isLessThanOrEqualTo(FAST_TOLERANCE);
                    }
                }
            }
            long chunks = 0;
            for (int n : PROMPTS) if (n > 1) chunks += (n + DecodeBatcher.PROMPT_CHUNK - 1) / DecodeBatcher.PROMPT_CHUNK;
            assertThat(batched.batchedPromptChunks()).as("every prompt chunk (one-token prompts are decode steps) rode a pass").isEqualTo(chunks);
        }
    }

    @Test
    void aPromptPastTheContextFailsWithTheOneLineErrorBeforeAnyChunkRuns() throws Exception {
        ModelOptions o = ModelOptions.defaults().withThreads(2).withContextLength(40).withDecodeBatching(DecodeBatching.FAST);
        try (Model m = Model.open(GeneratedModels.llama110m(), o); Session s = m.newSession()) {
            m.batchPrompts = true;
            int[] ids = new int[41];
            Arrays.fill(ids, 5);
            assertThatThrownBy(() -> s.evaluate(ids)).hasMessageContaining("exceed the context of 40");
            assertThat(m.batchedPromptChunks()).isZero();
            s.evaluate(new int[] {1, 2, 3});   // the session still works after the refused prompt
            assertThat(m.batchedPromptChunks()).isEqualTo(1);
        }
    }

    /** The logits after the prompt, then after each of {@link #DECODE} greedy tokens. */
    private static List<float[]> greedy(Model m, int[] prompt) {
        List<float[]> out = new ArrayList<>();
        try (Session s = m.newSession()) {
            float[] logits = s.evaluate(prompt).clone();
            out.add(logits);
            for (int k = 0; k < DECODE; k++) {
                logits = s.evaluate(argmax(logits)).clone();
                out.add(logits);
            }
        }
        return out;
    }

    private static int argmax(float[] v) {
        int best = 0;
        for (int i = 1; i < v.length; i++) if (v[i] > v[best]) best = i;
        return best;
    }
}
