package org.powerinfer4j.engine.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.powerinfer4j.engine.TestData;
import org.powerinfer4j.engine.api.GenerationParams;
import org.powerinfer4j.engine.api.GenerationResult;
import org.powerinfer4j.engine.api.Model;
import org.powerinfer4j.engine.api.ModelOptions;
import org.powerinfer4j.engine.api.Session;
import org.powerinfer4j.engine.sampling.SamplingParams;

/**
 * Every model in testdata against llama.cpp's own output ({@code reference/*.llamacpp.json}): the same greedy
 * continuation token for token, and the top-5 log-probabilities of each step within a tolerance.
 *
 * <p>Tolerance: llama.cpp rounds activations before its dot products — to F16 for F16/BF16 weights and to
 * 8-bit blocks (Q8_0/Q8_K) for quantized weights — while we keep activations in F32. That rounding moves a
 * log-probability by up to a few 1e-2 on these models, so quantized/half models get 5e-2. For the F32 model
 * (both engines with F16 KV caches, our default as llama.cpp's) the measured deviation over 2×64 steps is
 * mean 0.0018, max 0.026 (with an F32 cache: max 0.015 — llama.cpp's own attention path rounds differently),
 * hence 3e-2. Greedy tokens must match exactly regardless.
 */
class LlamaCppParityTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    static Stream<Arguments> models() {
        return Stream.of(
                Arguments.of("models/stories260K.gguf", "reference/stories260K.llamacpp.json", 3e-2),
                Arguments.of("models/llama-2-tiny-random.gguf", "reference/llama-2-tiny-random.llamacpp.json", 5e-2),
                Arguments.of("models/quantized/stories260K-f16.gguf", "reference/stories260K-f16.llamacpp.json", 5e-2),
                Arguments.of("models/quantized/stories260K-bf16.gguf", "reference/stories260K-bf16.llamacpp.json", 5e-2),
                Arguments.of("models/quantized/stories260K-q8_0.gguf", "reference/stories260K-q8_0.llamacpp.json", 5e-2),
                Arguments.of("models/quantized/stories260K-q4_0.gguf", "reference/stories260K-q4_0.llamacpp.json", 5e-2),
                Arguments.of("models/quantized/stories260K-q4_1.gguf", "reference/stories260K-q4_1.llamacpp.json", 5e-2));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("models")
    void greedyContinuationAndLogProbsMatchLlamaCpp(String model, String reference, double tolerance) throws Exception {
        JsonNode ref = JSON.readTree(Files.readString(TestData.file(reference)));
        Path path = TestData.file(model);
        try (Model m = Model.open(path, ModelOptions.defaults().withThreads(2).withContextLength(512))) {
            for (JsonNode r : ref.get("results")) {
                int[] prompt = Stories260KParityTest.ints(r.get("prompt_ids"));
                int[] expected = Stories260KParityTest.ints(r.get("generated_ids"));
                if (m.tokenizer() != null && !r.get("prompt").asText().isEmpty())
                    assertThat(m.tokenizer().encode(r.get("prompt").asText(), true, false)).as("prompt ids").containsExactly(prompt);
                try (Session s = m.newSession()) {
                    GenerationResult g = s.generate(prompt, GenerationParams.defaults().withMaxTokens(expected.length)
                            .withSampling(SamplingParams.GREEDY).withStopAtEndOfGeneration(false), null);
                    assertThat(g.generatedTokens()).as("%s prompt '%s'", model, r.get("prompt").asText()).containsExactly(expected);
                }
                // log-probs: replay prompt + generated tokens one step at a time
                try (Session s = m.newSession()) {
                    float[] logits = s.evaluate(prompt);
                    JsonNode steps = r.get("steps");
                    for (int i = 0; i < steps.size(); i++) {
                        double[] logProbs = logSoftmax(logits);
                        for (JsonNode top : steps.get(i).get("top"))
                            assertThat(logProbs[top.get("id").asInt()]).as("%s step %d token %s", model, i, top.get("id"))
                                    .isCloseTo(top.get("logprob").asDouble(), within(tolerance));
                        logits = s.evaluate(expected[i]);
                    }
                }
            }
        }
    }

    static double[] logSoftmax(float[] logits) {
        double max = Double.NEGATIVE_INFINITY;
        for (float l : logits) max = Math.max(max, l);
        double sum = 0;
        for (float l : logits) sum += Math.exp(l - max);
        double lse = max + Math.log(sum);
        double[] r = new double[logits.length];
        for (int i = 0; i < r.length; i++) r[i] = logits[i] - lse;
        return r;
    }
}
