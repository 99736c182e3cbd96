package org.powerinfer4j.engine.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Arrays;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.powerinfer4j.engine.TestData;
import org.powerinfer4j.engine.model.KvCacheFullException;
import org.powerinfer4j.engine.sampling.SamplingParams;

/**
 * Sessions on one {@link SharedKvCache}: the same logits as a session with a cache of its own, a prefix shared
 * block by block that generates what a cold prompt does, and a full cache that ends or refuses generations with
 * one line instead of wrong numbers.
 */
class SharedKvCacheTest {
    private static final GenerationParams GREEDY = GenerationParams.defaults().withMaxTokens(24).withSampling(SamplingParams.GREEDY);

    @Test
    void aPagedSessionGivesTheContiguousSessionsLogitsBitForBit() throws Exception {
        // 110m shape, 2 threads: the parallel paths; a 45-token prompt (chunks of 16, key quads across 3 blocks), then decode
        try (Model m = Model.open(GeneratedModels.llama110m(), ModelOptions.defaults().withThreads(2).withContextLength(128).withBatchSize(16));
             SharedKvCache cache = m.newSharedKvCache(256); Session own = m.newSession(); Session paged = m.newSession(cache, 128)) {
            int[] prompt = new SplittableRandom(3).ints(45, 3, m.config().vocabSize()).toArray();
            assertThat(paged.evaluate(prompt)).isEqualTo(own.evaluate(prompt));
            for (int t = 0; t < 20; t++) {
                int next = 3 + t * 7 % (m.config().vocabSize() - 3);
                assertThat(paged.evaluate(next)).as("decode step %d", t).isEqualTo(own.evaluate(next));
            }
            assertThat(cache.usedTokens()).isEqualTo(80);   // 65 positions: 5 blocks of 16
            paged.rollback(30);
            assertThat(cache.usedTokens()).isEqualTo(32);
            paged.reset();
            assertThat(cache.usedTokens()).isZero();
        }
    }

    @Test
    void aSharedPrefixIsStoredOnceAndGivesTheColdPromptsTokens() throws Exception {
        try (Model m = Model.open(TestData.file("models/stories260K.gguf"), ModelOptions.defaults().withThreads(2).withContextLength(256).withBatchSize(16));
             SharedKvCache cache = m.newSharedKvCache(512)) {
            int[] a = m.tokenizer().encode(AdoptPrefixTest.SHARED + " She ran to it.", true, false);
            int[] b = m.tokenizer().encode(AdoptPrefixTest.SHARED + " Her friend Tom came.", true, false);
            int common = 0;
            while (a[common] == b[common]) common++;
            assertThat(common).isGreaterThan(32);
            try (Session donor = m.newSession(cache, 256); Session warm = m.newSession(cache, 256); Session cold = m.newSession()) {
                donor.complete(a, GREEDY, null);
                int donorTokens = cache.usedTokens();
                assertThat(warm.adoptPrefix(donor, b, common)).isEqualTo(common);
                // whole blocks are mapped, not copied: only the partial last block is new
                assertThat(cache.usedTokens() - donorTokens).isEqualTo(common % 16 == 0 ? 0 : 16);
                GenerationResult w = warm.complete(b, GREEDY, null), c = cold.complete(b, GREEDY, null);
                assertThat(w.promptTokens()).hasSize(b.length - common);   // only the new suffix was evaluated
                assertThat(w.generatedTokens()).containsExactly(c.generatedTokens());
                // the donor's rows are its own still: it continues as a session that never shared does
                try (Session alone = m.newSession()) {
                    int[] more = Arrays.copyOf(donor.tokens(), donor.tokens().length + 1);
                    more[more.length - 1] = b[common];
                    GenerationResult d = donor.complete(more, GREEDY, null), e = alone.complete(more, GREEDY, null);
                    assertThat(d.generatedTokens()).containsExactly(e.generatedTokens());
                }
            }
            assertThat(cache.usedTokens()).isZero();
        }
    }

    @Test
    void aFullCacheEndsTheGenerationAsAFullContextAndRefusesAPromptInOneLine() throws Exception {
        try (Model m = Model.open(TestData.file("models/stories260K.gguf"), ModelOptions.defaults().withThreads(2).withContextLength(256));
             SharedKvCache cache = m.newSharedKvCache(64); Session hog = m.newSession(cache, 256); Session s = m.newSession(cache, 256)) {
            hog.evaluate(new int[40]);   // 3 of the 4 blocks
            GenerationResult r = s.generate(new int[] {1, 400, 500}, GREEDY.withMaxTokens(100), null);
            assertThat(r.stopReason()).isEqualTo("length");
            assertThat(s.position()).isEqualTo(16);   // its one block: prompt and generated tokens up to the block's end
            assertThatThrownBy(() -> hog.evaluate(new int[30])).isInstanceOf(KvCacheFullException.class)
                    .hasMessageContaining("the KV cache is full").hasMessageNotContaining("\n");
            assertThat(hog.position()).as("nothing of the refused prompt was evaluated").isEqualTo(40);
        }
    }

    @Test
    void speculativeDecodingOnAFullCacheFallsBackToPlainStepsAndEndsAsAtAFullContext() throws Exception {
        try (Model m = Model.open(TestData.file("models/stories260K.gguf"), ModelOptions.defaults().withThreads(2).withContextLength(256));
             SharedKvCache cache = m.newSharedKvCache(128); Session hog = m.newSession(cache, 256); Session s = m.newSession(cache, 256);
             Session plain = m.newSession()) {
            hog.evaluate(new int[60]);   // 4 of the 8 blocks: s has 64 positions
            int[] prompt = m.tokenizer().encode("Once upon a time there was a little girl. Once upon a time there was a little girl. "
                    + "Once upon a time there was a little girl. Once upon a time", true, false);
            assertThat(prompt.length).isBetween(30, 56);
            GenerationResult r = s.generate(prompt, GREEDY.withMaxTokens(100).withSpeculation(Speculation.promptLookup(8)), null);
            assertThat(r.stopReason()).isEqualTo("length");
            assertThat(r.draftedTokens()).as("prompt lookup proposed drafts").isPositive();
            assertThat(s.position()).isEqualTo(64);
            // exactly plain greedy decoding's tokens, as many as fitted
            GenerationResult p = plain.generate(prompt, GREEDY.withMaxTokens(r.generatedTokens().length), null);
            assertThat(r.generatedTokens()).containsExactly(p.generatedTokens());
        }
    }

    @Test
    void aParkedSessionLendsItsBlocksAndStartsOverWhenTaken() throws Exception {
        try (Model m = Model.open(TestData.file("models/stories260K.gguf"), ModelOptions.defaults().withThreads(2).withContextLength(256));
             SharedKvCache cache = m.newSharedKvCache(64); Session idle = m.newSession(cache, 256); Session busy = m.newSession(cache, 256)) {
            int[] prompt = m.tokenizer().encode("Once upon a time", true, false);
            GenerationResult first = idle.generate(prompt, GREEDY.withMaxTokens(30), null);
            idle.parkCache();
            busy.evaluate(new int[50]);   // needs the parked session's blocks
            assertThat(idle.position()).isZero();
            assertThat(idle.tokens()).isEmpty();
            busy.reset();
            // the session starts over and generates what it did the first time
            assertThat(idle.generate(prompt, GREEDY.withMaxTokens(30), null).generatedTokens()).containsExactly(first.generatedTokens());
            idle.parkCache();
            idle.unparkCache();
            assertThat(idle.position()).as("nothing was taken while it was parked").isEqualTo(prompt.length + 29);
        }
    }

    @Test
    void refusesAnotherModelsCacheAndOversizedSessions() throws Exception {
        try (Model m = Model.open(TestData.file("models/stories260K.gguf"), ModelOptions.defaults().withContextLength(64));
             Model other = Model.open(TestData.file("models/stories260K.gguf"), ModelOptions.defaults().withContextLength(64));
             SharedKvCache cache = other.newSharedKvCache(64)) {
            assertThatThrownBy(() -> m.newSession(cache, 32)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("another model");
            try (SharedKvCache own = m.newSharedKvCache(64)) {
                assertThatThrownBy(() -> m.newSession(own, 65)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("context is 64");
            }
        }
    }
}
