package org.powerinfer4j.engine.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.powerinfer4j.engine.TestData;
import org.powerinfer4j.engine.model.ModelException;
import org.powerinfer4j.engine.sampling.Sampler;
import org.powerinfer4j.engine.sampling.SamplingParams;

/**
 * Speculative greedy output is token-identical to plain greedy output — with prompt lookup and with a draft model
 * (the same model, a quantized copy, a different model) — and stops (max tokens, the context end, a cancelling
 * listener, a continued conversation) exactly where plain decoding stops. Verification runs per-token kernels on
 * these dense CPU models, so each verified row has the bits of a decode step; where the prefill kernels verify
 * (GPU layers, sparse FFN) their rounding can differ from decode's and flip a near-tie, so bit-exact logits are
 * not claimed there. A verification that accepts every draft must fail these comparisons.
 */
class SpeculativeDecodingTest {
    private static final String REPETITIVE = "Once upon a time there was a little girl. Once upon a time there was a little girl. "
            + "Once upon a time there was a little girl. Once upon a time";
    private static final ModelOptions OPTS = ModelOptions.defaults().withThreads(2).withContextLength(256);
    private static final GenerationParams GREEDY = new GenerationParams(64, SamplingParams.GREEDY, false);

    private static Path stories() {
        return TestData.file("models/stories260K.gguf");
    }

    @Test
    void promptLookupGreedyEqualsPlainGreedy() throws Exception {
        try (Model m = Model.open(stories(), OPTS)) {
            int[] plain = generate(m, GREEDY, REPETITIVE);
            GenerationResult spec = generateResult(m, GREEDY.withSpeculation(Speculation.promptLookup(8)), REPETITIVE);
            assertThat(spec.generatedTokens()).containsExactly(plain);
            assertThat(spec.draftedTokens()).isPositive();
            assertThat(spec.acceptedTokens()).isPositive();   // a repetitive prompt: lookups get accepted
        }
    }

    @Test
    void theSameModelAsItsOwnDraftAcceptsEveryDraft() throws Exception {
        try (Model m = Model.open(stories(), OPTS)) {
            int[] plain = generate(m, GREEDY, "Lily went to the park");
            GenerationResult spec = generateResult(m, GREEDY.withSpeculation(Speculation.draft(m, 5)), "Lily went to the park");
            assertThat(spec.generatedTokens()).containsExactly(plain);
            // the ceiling: the draft's decode steps and the exact verification see the same bits
            assertThat(spec.acceptedTokens()).isEqualTo(spec.draftedTokens()).isPositive();
        }
    }

    @Test
    void aQuantizedDraftAndADifferentModelGiveThePlainOutput() throws Exception {
        try (Model m = Model.open(stories(), OPTS);
             Model q8 = Model.open(TestData.file("models/quantized/stories260K-q8_0.gguf"), OPTS);
             Model other = Model.open(GeneratedModels.smallSwiglu(), OPTS)) {   // random weights, the same vocabulary
            int[] plain = generate(m, GREEDY, "Lily went to the park");
            assertThat(generate(m, GREEDY.withSpeculation(Speculation.draft(q8, 4)), "Lily went to the park")).containsExactly(plain);
            assertThat(generate(m, GREEDY.withSpeculation(Speculation.draft(other, 4)), "Lily went to the park")).containsExactly(plain);
            int[] plainOther = generate(other, GREEDY, REPETITIVE);   // and a generated model as the target, prompt lookup
            assertThat(generate(other, GREEDY.withSpeculation(Speculation.promptLookup(6)), REPETITIVE)).containsExactly(plainOther);
        }
    }

    @Test
    void aGenerated110mModelWithPromptLookupEqualsPlain() throws Exception {
        try (Model m = Model.open(GeneratedModels.llama110m(), OPTS)) {
            GenerationParams p = GREEDY.withMaxTokens(24);
            assertThat(generate(m, p.withSpeculation(Speculation.promptLookup(8)), REPETITIVE)).containsExactly(generate(m, p, REPETITIVE));
        }
    }

    @Test
    void acceptingEveryDraftWouldFailTheComparison() throws Exception {
        try (Model m = Model.open(stories(), OPTS); Session s = m.newSession()) {
            int[] plain = generate(m, GREEDY, REPETITIVE);
            s.evaluate(m.tokenizer().encode(REPETITIVE, true, false));
            Emitter em = new Emitter(GREEDY, m.tokenizer(), null);
            new SpeculativeDecoder(s, new PromptLookup(3), 8, true).run(new Sampler(GREEDY.sampling()), em, (l, h, n, draft) -> draft);
            assertThat(em.generated()).hasSize(plain.length).isNotEqualTo(plain);
        }
    }

    @Test
    void prefillKernelVerificationAgreesAwayFromNearTies() throws Exception {
        // what GPU-layer and sparse models verify with: matrix–matrix kernels, rounding unlike decode's
        try (Model m = Model.open(stories(), OPTS); Session s = m.newSession()) {
            int[] plain = generate(m, GREEDY, REPETITIVE);
            s.evaluate(m.tokenizer().encode(REPETITIVE, true, false));
            Emitter em = new Emitter(GREEDY, m.tokenizer(), null);
            SpeculativeDecoder d = new SpeculativeDecoder(s, new PromptLookup(3), 8, false);
            d.run(new Sampler(GREEDY.sampling()), em);
            assertThat(em.generated()).containsExactly(plain);
            assertThat(d.accepted).isPositive();
        }
    }

    @Test
    void stopsWhereThePlainLoopStops() throws Exception {
        GenerationParams spec = GREEDY.withSpeculation(Speculation.promptLookup(8));
        try (Model m = Model.open(stories(), OPTS)) {
            for (int max : new int[]{0, 1, 2, 5, 9})   // max tokens inside a verified run of drafts
                assertThat(generate(m, spec.withMaxTokens(max), REPETITIVE)).containsExactly(generate(m, GREEDY.withMaxTokens(max), REPETITIVE));
            for (int cancelAt : new int[]{1, 3, 7}) {   // a listener that stops: same tokens, same cache position, same next turn
                List<Integer> a = new ArrayList<>(), b = new ArrayList<>();
                int[] pa = turns(m, GREEDY, cancelAt, a), pb = turns(m, spec, cancelAt, b);
                assertThat(b).isEqualTo(a);
                assertThat(pb).containsExactly(pa);
            }
        }
        try (Model small = Model.open(stories(), OPTS.withContextLength(48))) {   // the context end
            GenerationParams unlimited = GREEDY.withMaxTokens(-1);
            GenerationResult plain = generateResult(small, unlimited, REPETITIVE);
            GenerationResult sp = generateResult(small, unlimited.withSpeculation(Speculation.promptLookup(8)), REPETITIVE);
            assertThat(sp.generatedTokens()).containsExactly(plain.generatedTokens());
            assertThat(sp.stopReason()).isEqualTo(plain.stopReason()).isEqualTo("length");
        }
    }

    @Test
    void aDraftWithAnotherVocabularyIsAOneLineError() throws Exception {
        try (Model m = Model.open(stories(), OPTS); Model other = Model.open(TestData.file("models/llama-2-tiny-random.gguf"), OPTS);
             Session s = m.newSession()) {
            assertThatThrownBy(() -> s.generate("Lily", GREEDY.withSpeculation(Speculation.draft(other, 4)), null))
                    .isInstanceOf(ModelException.class).hasMessageContaining("vocabulary").hasMessageNotContaining("\n");
        }
    }

    @Test
    void evaluateAllRowsEqualOneByOneLogitsAndRollbackRewinds() throws Exception {
        try (Model m = Model.open(stories(), OPTS); Session a = m.newSession(); Session b = m.newSession()) {
            int[] ids = m.tokenizer().encode("Lily went to the park", true, false);
            a.evaluate(ids[0]);
            float[] all = a.evaluateAll(java.util.Arrays.copyOfRange(ids, 1, ids.length));
            int vocab = m.config().vocabSize();
            b.evaluate(ids[0]);
            for (int i = 1; i < ids.length; i++)
                assertThat(java.util.Arrays.copyOfRange(all, (i - 1) * vocab, i * vocab)).containsExactly(b.evaluate(ids[i]));
            a.rollback(2);
            assertThat(a.position()).isEqualTo(2);
            assertThat(a.tokens()).containsExactly(ids[0], ids[1]);
            assertThat(a.evaluate(ids[2])).containsExactly(evaluateFresh(m, java.util.Arrays.copyOf(ids, 3)));
            assertThatThrownBy(() -> a.rollback(4)).isInstanceOf(IllegalArgumentException.class);
        }
    }

    private static float[] evaluateFresh(Model m, int[] ids) {
        try (Session s = m.newSession()) {
            for (int i = 0; i < ids.length - 1; i++) s.evaluate(ids[i]);
            return s.evaluate(ids[ids.length - 1]);
        }
    }

    /** Two turns in one session, the first cancelled after {@code cancelAt} tokens; returns both positions. */
    private static int[] turns(Model m, GenerationParams p, int cancelAt, List<Integer> out) {
        try (Session s = m.newSession()) {
            int[] n = {0};
            s.generate(REPETITIVE, p, (id, text) -> {
                out.add(id);
                return ++n[0] < cancelAt;
            });
            int first = s.position();
            s.generate(" Once upon", p.withMaxTokens(12), (id, text) -> out.add(id));
            return new int[]{first, s.position()};
        }
    }

    private static int[] generate(Model m, GenerationParams p, String prompt) {
        return generateResult(m, p, prompt).generatedTokens();
    }

    private static GenerationResult generateResult(Model m, GenerationParams p, String prompt) {
        try (Session s = m.newSession()) {
            return s.generate(prompt, p, null);
        }
    }
}
