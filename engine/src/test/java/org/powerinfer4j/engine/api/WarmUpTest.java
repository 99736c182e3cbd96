package org.powerinfer4j.engine.api;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.powerinfer4j.engine.TestData;
import org.powerinfer4j.engine.sampling.SamplingParams;

/** {@link Model#warmUp} changes nothing a caller sees: same tokens and logits after it, and beside it on another thread. */
class WarmUpTest {
    private static final GenerationParams GREEDY_32 = GenerationParams.defaults().withMaxTokens(32).withSampling(SamplingParams.GREEDY);

    @Test
    void generationAfterAndDuringWarmUpEqualsAFreshModelsWithoutIt() throws Exception {
        Path path = TestData.file("models/stories260K.gguf");
        int[] plain;
        float[] plainLogits;
        try (Model m = Model.open(path, ModelOptions.defaults().withThreads(2)); Session s = m.newSession()) {
            plain = s.generate("Once upon a time", GREEDY_32, null).generatedTokens();
            plainLogits = s.state().logits().clone();
        }
        try (Model m = Model.open(path, ModelOptions.defaults().withThreads(2))) {
            assertThat(m.warmUp()).isNotNegative();
            try (Session s = m.newSession()) {
                assertThat(s.generate("Once upon a time", GREEDY_32, null).generatedTokens()).isEqualTo(plain);
                assertThat(s.state().logits()).isEqualTo(plainLogits);   // bit for bit: the warm-up left no state behind
            }
            // a warm-up running while a request is served (chat warms up in the background) does not disturb it
            CompletableFuture<Long> beside = CompletableFuture.supplyAsync(m::warmUp);
            try (Session s = m.newSession()) {
                assertThat(s.generate("Once upon a time", GREEDY_32, null).generatedTokens()).isEqualTo(plain);
            }
            assertThat(beside.get()).isNotNegative();
        }
    }

    @Test
    void aContextTooSmallForTheWarmUpIsSkipped() throws Exception {
        try (Model m = Model.open(TestData.file("models/stories260K.gguf"), ModelOptions.defaults().withContextLength(8))) {
            assertThat(m.warmUp()).isZero();
        }
    }
}
