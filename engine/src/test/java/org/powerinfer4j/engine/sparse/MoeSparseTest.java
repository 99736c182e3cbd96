package org.powerinfer4j.engine.sparse;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;
import org.powerinfer4j.engine.TestData;
import org.powerinfer4j.engine.api.GenerationParams;
import org.powerinfer4j.engine.api.Model;
import org.powerinfer4j.engine.api.ModelOptions;
import org.powerinfer4j.engine.api.Session;
import org.powerinfer4j.engine.model.FfnActivation;
import org.powerinfer4j.engine.model.ModelException;
import org.powerinfer4j.engine.sampling.SamplingParams;

/**
 * Neuron sparsity inside the routed experts ({@code --sparse exact} on a mixture-of-experts model with ReLU experts):
 * the random Mixtral and Qwen3-MoE (shared expert) of {@code archs/}, their experts run as ReGLU, must give what the
 * dense MoE FFN gives, computing only the neurons that fire.
 */
class MoeSparseTest {
    static final int[] PROMPT = {1, 15, 27, 3, 99, 41, 8, 64, 120, 7, 33, 2};

    /**
     * An F32 KV cache: these tests compare FFN paths, and with the default F16 cache a key or value that the two
     * paths give ~1e-7 apart can round to neighbouring halves, one F16 ulp that moves every later logit by ~1e-4
     * (measured at 256 and 128 bits from position 8 of the prompt; with F32 the difference stays below 4e-6 at every width).
     */
    private static ModelOptions options(SparseMode mode) {
        return ModelOptions.defaults().withThreads(2).withContextLength(128).withActivation(FfnActivation.REGLU).withSparseMode(mode)
                .withKvCacheType(org.powerinfer4j.engine.tensor.GGMLType.F32);
    }

    private static Path file(String name) {
        return TestData.file("archs/" + name);
    }

    /**
     * Token by token, exact = off within rounding: the sparse path sums the active neurons' down rows from a
     * neuron-major copy (F32 for F32 weights: same values, another order, ~1e-6; F16 for Q8_0, 2^-11 relative per
     * weight, measured ≤ 1e-3 on these logits), and greedy continuations are identical.
     */
    @ParameterizedTest
    @ValueSource(strings = {"mixtral.gguf", "mixtral-q8_0.gguf", "qwen3moe.gguf", "qwen3moe-q8_0.gguf"})
    void exactEqualsOff(String name) throws Exception {
        double tol = name.contains("q8_0") ? 5e-3 : 1e-4;
        try (Model off = Model.open(file(name), options(SparseMode.OFF)); Model exact = Model.open(file(name), options(SparseMode.EXACT));
             Session a = off.newSession(); Session b = exact.newSession()) {
            assertThat(exact.sparseMode()).isEqualTo(SparseMode.EXACT);
            double worst = 0;
            for (int id : PROMPT) worst = Math.max(worst, maxAbsDiff(a.evaluate(id), b.evaluate(id)));
            assertThat(worst).as("max |Δ logit| over the prompt").isLessThan(tol);
            SparsityStats st = exact.sparsityStats();
            assertThat(st.tokens(0)).as("one record per (token, routed expert)").isEqualTo((long) PROMPT.length * exact.config().params().expertsUsed());
            assertThat(st.meanPredictedFraction()).as("ReLU experts: only the neurons that fire are computed").isStrictlyBetween(0.05, 0.95);
        }
        assertThat(greedy(name, SparseMode.EXACT)).containsExactly(greedy(name, SparseMode.OFF));
    }

    /** A prompt in one batch (tokens grouped per expert, the union of their active rows) gives each token's own result. */
    @ParameterizedTest
    @ValueSource(strings = {"mixtral.gguf", "qwen3moe.gguf"})
    void aBatchEqualsTokenByToken(String name) throws Exception {
        try (Model m = Model.open(file(name), options(SparseMode.EXACT)); Session one = m.newSession(); Session all = m.newSession()) {
            int vocab = m.config().vocabSize();
            float[][] single = new float[PROMPT.length][];
            for (int i = 0; i < PROMPT.length; i++) single[i] = one.evaluate(PROMPT[i]);
            long computedAlone = computed(m.sparsityStats());
            m.sparsityStats().reset();
            float[] rows = all.evaluateAll(PROMPT, false);
            for (int i = 0; i < PROMPT.length; i++) {
                float[] row = java.util.Arrays.copyOfRange(rows, i * vocab, (i + 1) * vocab);
                assertThat(maxAbsDiff(single[i], row)).as("position %d", i).isLessThan(1e-4);
            }
            // each token's own active set, not the union: the same neuron count as alone (a sign flip at rounding aside)
            assertThat((double) computed(m.sparsityStats())).isCloseTo(computedAlone, org.assertj.core.data.Percentage.withPercentage(0.5));
        }
    }

    @Test
    void exactIsTheDefaultForReluExpertsAndOffForSwiglu() throws Exception {
        try (Model relu = Model.open(file("mixtral.gguf"), options(null)); Model swiglu = Model.open(file("mixtral.gguf"),
                ModelOptions.defaults().withThreads(1).withContextLength(64))) {
            assertThat(relu.sparseMode()).isEqualTo(SparseMode.EXACT);
            assertThat(swiglu.sparseMode()).isEqualTo(SparseMode.OFF);
        }
    }

    @Test
    void swigluExpertsAndPredictAreRefusedInOneLine() {
        assertThatThrownBy(() -> Model.open(file("mixtral.gguf"), ModelOptions.defaults().withThreads(1).withContextLength(64)
                .withSparseMode(SparseMode.EXACT)))
                .isInstanceOf(ModelException.class).hasMessageContaining("needs a ReLU-family model").hasMessageNotContaining("\n");
        assertThatThrownBy(() -> Model.open(file("mixtral.gguf"), options(SparseMode.PREDICT)))
                .isInstanceOf(ModelException.class)
                .hasMessage("--sparse predict on a mixture-of-experts model needs a predictor per expert (blk.N.fc1.E/fc2.E), which this "
                        + "file lacks; run train-predictors or use --sparse exact");
    }

    private static long computed(SparsityStats s) {
        long n = 0;
        for (int l = 0; l < s.layers(); l++) n += Math.round(s.predictedFraction(l) * s.tokens(l) * s.neurons());
        return n;
    }

    private static int[] greedy(String name, SparseMode mode) throws Exception {
        try (Model m = Model.open(file(name), options(mode)); Session s = m.newSession()) {
            return s.generate(PROMPT, GenerationParams.defaults().withMaxTokens(16).withSampling(SamplingParams.GREEDY)
                    .withStopAtEndOfGeneration(false), null).generatedTokens();
        }
    }

    private static double maxAbsDiff(float[] a, float[] b) {
        double m = 0;
        for (int i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
        return m;
    }
}
