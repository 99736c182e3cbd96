package org.powerinfer4j.engine.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.powerinfer4j.engine.TestData;
import org.powerinfer4j.engine.sampling.SamplingParams;

/** {@link Session#adoptPrefix}: a prompt prefix taken from another session's cache generates what a cold prompt does. */
class AdoptPrefixTest {
    static final String SHARED = "Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her friends. "
            + "One day, she saw a big red ball under a tree.";

    @Test
    void adoptedPrefixGivesTheColdPromptsTokens() throws Exception {
        try (Model m = Model.open(TestData.file("models/stories260K.gguf"), ModelOptions.defaults().withThreads(2).withContextLength(256).withBatchSize(16))) {
            int[] a = m.tokenizer().encode(SHARED + " She ran to it.", true, false);
            int[] b = m.tokenizer().encode(SHARED + " Her friend Tom came.", true, false);
            int common = 0;
            while (a[common] == b[common]) common++;
            assertThat(common).isGreaterThan(30);
            GenerationParams greedy = GenerationParams.defaults().withMaxTokens(24).withSampling(SamplingParams.GREEDY);
            try (Session donor = m.newSession(); Session warm = m.newSession(); Session cold = m.newSession()) {
                donor.complete(a, greedy, null);
                warm.adoptPrefix(donor, b, common);
                assertThat(warm.position()).isEqualTo(common);
                assertThat(warm.tokens()).containsExactly(Arrays.copyOf(b, common));
                GenerationResult w = warm.complete(b, greedy, null), c = cold.complete(b, greedy, null);
                assertThat(w.promptTokens()).hasSize(b.length - common);   // only the new suffix was evaluated
                assertThat(w.generatedTokens()).containsExactly(c.generatedTokens());
                // the donor's rows are untouched: it continues as before
                assertThat(donor.tokens()).startsWith(Arrays.copyOf(a, common));
            }
        }
    }

    @Test
    void refusesAnotherModelsSessionAndOversizedPrefixes() throws Exception {
        try (Model m = Model.open(TestData.file("models/stories260K.gguf"), ModelOptions.defaults().withContextLength(64));
             Model other = Model.open(TestData.file("models/stories260K.gguf"), ModelOptions.defaults().withContextLength(64));
             Session s = m.newSession(); Session t = other.newSession(); Session u = m.newSession()) {
            assertThatThrownBy(() -> s.adoptPrefix(t, new int[] {1, 2, 3}, 3)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("another model");
            assertThatThrownBy(() -> s.adoptPrefix(u, new int[100], 100)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("does not fit");
        }
    }
}
