package org.powerinfer4j.engine.model.generator;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.powerinfer4j.engine.TestData;
import org.powerinfer4j.engine.api.GenerationParams;
import org.powerinfer4j.engine.api.Model;
import org.powerinfer4j.engine.api.ModelOptions;
import org.powerinfer4j.engine.api.Session;
import org.powerinfer4j.engine.gguf.GGUFFile;
import org.powerinfer4j.engine.model.FfnActivation;
import org.powerinfer4j.engine.sampling.SamplingParams;
import org.powerinfer4j.engine.sparse.SparseMode;
import org.powerinfer4j.engine.sparse.SparsityStats;
import org.powerinfer4j.engine.tensor.GGMLType;

/**
 * Generated Mixtral-style files (n_embd 128, n_ff 512, 4 experts, 2 per token, 2 layers): llama.cpp's MoE tensors and
 * keys, and under {@code --sparse-relu} each expert's planted sparsity, measured through the sparse experts, with
 * exact = off.
 */
class MoeGeneratorTest {
    @TempDir
    static Path dir;

    private static Path file(double sparsity) throws Exception {
        Path p = dir.resolve("moe-" + sparsity + ".gguf");
        if (!Files.exists(p))
            new RandomModelGenerator(ModelShape.of(128, 2, 512, 4, 4, false), GGMLType.Q8_0, TestData.file("models/stories260K.gguf"))
                    .seed(3).threads(2).sparseRelu(sparsity == 0 ? null : PlantedSparsity.Spec.defaults().withSparsity(sparsity))
                    .experts(4, 2).write(p);
        return p;
    }

    private static ModelOptions options(SparseMode mode) {
        return ModelOptions.defaults().withThreads(2).withContextLength(128).withSparseMode(mode).withSparseStats(true);
    }

    @Test
    void hasLlamaCppsMixtralTensorsAndKeys() throws Exception {
        try (GGUFFile f = GGUFFile.open(file(0))) {
            assertThat(f.isPowerInfer()).isFalse();
            assertThat(f.getInt("llama.expert_count", -1)).isEqualTo(4);
            assertThat(f.getInt("llama.expert_used_count", -1)).isEqualTo(2);
            assertThat(f.tensorInfo("blk.0.ffn_gate_inp.weight").ne()).containsExactly(128, 4);
            assertThat(f.tensorInfo("blk.0.ffn_gate_inp.weight").type()).isEqualTo(GGMLType.F32);
            assertThat(f.tensorInfo("blk.1.ffn_gate_exps.weight").ne()).containsExactly(128, 512, 4);
            assertThat(f.tensorInfo("blk.1.ffn_up_exps.weight").ne()).containsExactly(128, 512, 4);
            assertThat(f.tensorInfo("blk.1.ffn_down_exps.weight").ne()).containsExactly(512, 128, 4);
            assertThat(f.hasTensor("blk.0.ffn_gate.weight")).isFalse();
        }
        try (Model m = Model.open(file(0), ModelOptions.defaults().withThreads(2).withContextLength(64))) {
            assertThat(m.config().params().experts()).isEqualTo(4);
            assertThat(m.config().activation()).isEqualTo(FfnActivation.SWIGLU);
            assertThat(m.sparseMode()).isEqualTo(SparseMode.OFF);
        }
    }

    @Test
    void everyExpertShowsThePlantedSparsityAndExactEqualsOff() throws Exception {
        Path p = file(0.9);
        try (GGUFFile f = GGUFFile.open(p)) {
            assertThat(f.isPowerInfer()).isTrue();
            assertThat(f.hasTensor("blk.0.fc1.weight")).as("no layer-wide predictor").isFalse();
            assertThat(f.tensorInfo("blk.1.fc1.3.weight").ne()).as("expert 3's predictor").containsExactly(128, 64);
            assertThat(f.tensorInfo("blk.1.fc2.3.weight").ne()).containsExactly(64, 512);
        }
        try (Model m = Model.open(p, options(SparseMode.EXACT))) {
            assertThat(m.config().activation()).isEqualTo(FfnActivation.REGLU);
            SparsityStats st = run(m, 64);
            for (int l = 0; l < 2; l++)
                assertThat(1 - st.activeFraction(l)).as("layer %d sparsity per (token, expert)", l).isCloseTo(0.9, within(0.04));
        }
        // Q8_0 down read from its F16 neuron-major copy: 2^-11 relative per weight
        GeneratedLogits.assertClose(GeneratedLogits.evaluate(p, options(SparseMode.OFF), 24), GeneratedLogits.evaluate(p, options(SparseMode.EXACT), 24), 2e-3f);
    }

    /**
     * Per-expert predictors: the default on a file that has them; each expert's planted predictor finds its neurons
     * (recall ≈ 0.95 by construction, measured per (token, expert)); at threshold −∞ every neuron is computed, so
     * predict equals off within the neuron-major copy's rounding; and a prompt batch (tokens grouped per expert,
     * per-token masks over the union) equals token by token.
     */
    @Test
    void perExpertPredictorsPredictThePlantedNeurons() throws Exception {
        Path p = file(0.9);
        try (Model m = Model.open(p, options(null))) {
            assertThat(m.sparseMode()).as("per-expert predictors make predict the default").isEqualTo(SparseMode.PREDICT);
            SparsityStats st = run(m, 64);
            for (int l = 0; l < 2; l++) {
                assertThat(st.tokens(l)).as("one record per (token, routed expert)").isEqualTo(64 * 2);
                assertThat(st.recall(l)).as("layer %d recall", l).isGreaterThan(0.85);
                assertThat(st.predictedFraction(l)).as("layer %d computed fraction", l).isBetween(0.08, 0.25);
            }
        }
        ModelOptions all = options(SparseMode.PREDICT).withSparseThreshold(Float.NEGATIVE_INFINITY);
        GeneratedLogits.assertClose(GeneratedLogits.evaluate(p, options(SparseMode.OFF), 24), GeneratedLogits.evaluate(p, all, 24), 2e-3f);

        int[] prompt = new SplittableRandom(4).ints(12, 3, 512).toArray();
        try (Model m = Model.open(p, options(SparseMode.PREDICT)); Session one = m.newSession(); Session batch = m.newSession()) {
            int vocab = m.config().vocabSize();
            float[][] alone = new float[prompt.length][];
            for (int i = 0; i < prompt.length; i++) alone[i] = one.evaluate(prompt[i]).clone();
            float[] rows = batch.evaluateAll(prompt, false);
            float[][] batched = new float[prompt.length][];
            for (int i = 0; i < prompt.length; i++) batched[i] = java.util.Arrays.copyOfRange(rows, i * vocab, (i + 1) * vocab);
            GeneratedLogits.assertClose(alone, batched, 1e-4f);
        }
    }

    @Test
    void expertsNeedLlamaAndAValidCount() {
        assertThatThrownBy(() -> new RandomModelGenerator(ModelShape.of(128, 2, 512, 4, 4, false), GGMLType.Q8_0,
                TestData.file("models/stories260K.gguf")).experts(4, 5))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("experts-used must be between 1 and the expert count 4, not 5");
        assertThatThrownBy(() -> new RandomModelGenerator(ModelShape.of(128, 2, 512, 4, 1, false), GGMLType.Q8_0,
                TestData.file("models/stories260K.gguf")).architecture(ModelArch.FALCON).experts(4, 2))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("experts are written for llama only, not falcon");
    }

    private static SparsityStats run(Model m, int n) {
        SplittableRandom r = new SplittableRandom(5);
        try (Session s = m.newSession()) {
            for (int i = 0; i < n; i++) s.evaluate(3 + r.nextInt(m.config().vocabSize() - 3));
        }
        return m.sparsityStats();
    }

}
