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
 * continuation token for token, and the top-5 log-probabilities of each step close to llama.cpp's.
 *
 * <p>Tolerances, from measurement (2 prompts × 64 steps × top-5, our default F16 KV cache like llama.cpp's):
 * <pre>
 *   model              mean |Δlogprob|   max |Δlogprob|   max on the top-1 token
 *   F32                0.0012            0.010            0.002
 *   F16 (tiny-random)  0.00002           0.0001           0.0001
 *   F16 (stories)      0.0022            0.017            0.003
 *   BF16               0.0083            0.087            0.012
 *   Q8_0/Q4_0/Q4_1     0.030–0.033       0.14–0.22        0.047–0.058
 * </pre>
 * The quantized models differ from llama.cpp by a few 1e-2 on average, as SOURCES.md anticipates (llama.cpp's
 * CPU path rounds activations to 8 bits for quantized dot products; we keep them in F32), and the largest
 * deviations sit on low-probability tokens (log-prob below −5) where a small logit shift moves the log-prob
 * most. So each model gets a bound on the mean (≈1.5× measured) and on the maximum (≈1.3× measured); the greedy
 * tokens — the robust comparison — must match exactly.
 */
class LlamaCppParityTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    static Stream<Arguments> models() {
        return Stream.of(
                Arguments.of("models/stories260K.gguf", "reference/stories260K.llamacpp.json", 0.002, 0.015, true),
                Arguments.of("models/llama-2-tiny-random.gguf", "reference/llama-2-tiny-random.llamacpp.json", 0.0001, 0.001, true),
                Arguments.of("models/quantized/stories260K-f16.gguf", "reference/stories260K-f16.llamacpp.json", 0.0035, 0.025, true),
                Arguments.of("models/quantized/stories260K-bf16.gguf", "reference/stories260K-bf16.llamacpp.json", 0.0125, 0.12, true),
                Arguments.of("models/quantized/stories260K-q8_0.gguf", "reference/stories260K-q8_0.llamacpp.json", 0.05, 0.22, true),
                // Q8_0 is repacked too (tensor.RepackedQ8): the file's own layout keeps its parity check
                Arguments.of("models/quantized/stories260K-q8_0.gguf", "reference/stories260K-q8_0.llamacpp.json", 0.05, 0.22, false),
                Arguments.of("models/quantized/stories260K-q4_0.gguf", "reference/stories260K-q4_0.llamacpp.json", 0.05, 0.28, true),
                // Q4_0 matrices are repacked for the CPU at load (tensor.RepackedQ4); the file's own layout must agree too
                Arguments.of("models/quantized/stories260K-q4_0.gguf", "reference/stories260K-q4_0.llamacpp.json", 0.05, 0.28, false),
                Arguments.of("models/quantized/stories260K-q4_1.gguf", "reference/stories260K-q4_1.llamacpp.json", 0.05, 0.2, true));
    }

    @ParameterizedTest(name = "{0} repack={4}")
    @MethodSource("models")
    void greedyContinuationAndLogProbsMatchLlamaCpp(String model, String reference, double meanTolerance, double maxTolerance,
                                                    boolean repack) throws Exception {
        JsonNode ref = JSON.readTree(Files.readString(TestData.file(reference)));
        Path path = TestData.file(model);
        try (Model m = Model.open(path, ModelOptions.defaults().withThreads(2).withContextLength(512).withRepack(repack))) {
            // repacked exactly when its type has a CPU layout (Q4_0, Q4_K, Q5_K, Q6_K, Q8_0) the kernels read here and the repack is on
            org.powerinfer4j.engine.tensor.Tensor wq = m.weights().layers()[0].wq();
            boolean layout = org.powerinfer4j.engine.tensor.RepackedMatrix.repackable(wq) && org.powerinfer4j.engine.kernels.MatrixOps.readsRepacked(wq.type());
            assertThat(m.weights().layers()[0].wq().repacked() != null).as("attention weights repacked")
                    .isEqualTo(layout && repack && org.powerinfer4j.engine.kernels.RepackedQ4Kernels.SUPPORTED);
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
                    double sum = 0;
                    int count = 0;
                    for (int i = 0; i < Math.min(64, steps.size()); i++) {
                        double[] logProbs = logSoftmax(logits);
                        for (JsonNode top : steps.get(i).get("top")) {
                            double ours = logProbs[top.get("id").asInt()], theirs = top.get("logprob").asDouble();
                            assertThat(ours).as("%s step %d token %s", model, i, top.get("id")).isCloseTo(theirs, within(maxTolerance));
                            sum += Math.abs(ours - theirs);
                            count++;
                        }
                        logits = s.evaluate(expected[i]);
                    }
                    assertThat(sum / count).as("%s mean |Δlogprob|", model).isLessThanOrEqualTo(meanTolerance);
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
