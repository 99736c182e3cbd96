package org.powerinfer4j.engine.model.generator;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.SplittableRandom;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
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
 * Generated PowerInfer ReLU models (n_embd 256, n_ff 1024, 2 layers): the planted sparsity shows up when the model
 * runs, the predictors recall what fires, and the file works in all three FFN modes.
 */
class SparseReluGeneratorTest {
    private static final ModelShape SHAPE = ModelShape.of(256, 2, 1024, 4, 4, false);

    @TempDir
    static Path dir;
    private static Path q40;

    @BeforeAll
    static void generate() throws Exception {
        q40 = dir.resolve("relu-q4_0.powerinfer.gguf");
        generator(GGMLType.Q4_0, PlantedSparsity.Spec.defaults()).write(q40);
    }

    private static RandomModelGenerator generator(GGMLType type, PlantedSparsity.Spec spec) throws Exception {
        return new RandomModelGenerator(SHAPE, type, TestData.file("models/stories260K.gguf")).seed(11).threads(2).sparseRelu(spec);
    }

    /** Runs {@code n} random tokens (deterministic) through a fresh session and returns the model's stats. */
    private static SparsityStats run(Model m, int n) {
        SplittableRandom r = new SplittableRandom(5);
        try (Session s = m.newSession()) {
            for (int i = 0; i < n; i++) s.evaluate(3 + r.nextInt(m.config().vocabSize() - 3));
        }
        return m.sparsityStats();
    }

    private static ModelOptions options(SparseMode mode) {
        return ModelOptions.defaults().withThreads(2).withContextLength(128).withSparseMode(mode).withSparseStats(true);
    }

    @Test
    void fileIsAPowerInferLlamaWithPredictors() throws Exception {
        try (GGUFFile f = GGUFFile.open(q40)) {
            assertThat(f.isPowerInfer()).isTrue();
            assertThat(f.getString("general.architecture", null)).isEqualTo("llama");
            assertThat(f.getFloat("powerinfer.sparse_threshold", Float.NaN)).isEqualTo(0f);
            assertThat(f.tensorInfo("blk.1.ffn_down_t.weight").ne()).containsExactly(256, 1024);
            assertThat(f.tensorInfo("blk.1.ffn_down_t.weight").type()).isEqualTo(GGMLType.Q4_0);
            assertThat(f.hasTensor("blk.1.ffn_down.weight")).isFalse();
            assertThat(f.tensorInfo("blk.0.fc1.weight").ne()).containsExactly(256, 64);
            assertThat(f.tensorInfo("blk.0.fc1.weight").type()).isEqualTo(GGMLType.F16);
            assertThat(f.tensorInfo("blk.0.fc2.weight").ne()).containsExactly(64, 1024);
            assertThat(f.tensorInfo("blk.0.fc2.weight").type()).isEqualTo(GGMLType.F16);
        }
    }

    @Test
    void dreluModelIsDeterministicAndSparse() throws Exception {
        PlantedSparsity.Spec spec = PlantedSparsity.Spec.defaults().withSparsity(0.8).withActivation(FfnActivation.DRELU);
        ModelShape small = ModelShape.of(128, 1, 512, 4, 4, true);
        Path a = dir.resolve("a.gguf"), b = dir.resolve("b.gguf"), c = dir.resolve("c.gguf");
        Path stories = TestData.file("models/stories260K.gguf");
        new RandomModelGenerator(small, GGMLType.F16, stories).seed(3).threads(2).sparseRelu(spec).write(a);
        new RandomModelGenerator(small, GGMLType.F16, stories).seed(3).threads(1).sparseRelu(spec).write(b);
        new RandomModelGenerator(small, GGMLType.F16, stories).seed(4).threads(2).sparseRelu(spec).write(c);
        assertThat(Files.mismatch(a, b)).isEqualTo(-1L);
        assertThat(Files.mismatch(a, c)).isNotEqualTo(-1L);
        try (GGUFFile f = GGUFFile.open(a)) {
            assertThat(f.getString("general.architecture", null)).isEqualTo("bamboo");
        }
        try (Model m = Model.open(a, options(SparseMode.EXACT))) {
            assertThat(m.config().activation()).isEqualTo(FfnActivation.DRELU);
            assertThat(1 - run(m, 64).activeFraction(0)).as("dReLU gate sparsity").isCloseTo(0.8, org.assertj.core.api.Assertions.within(0.04));
        }
    }

    @ParameterizedTest(name = "{0} sparsity {1}")
    @CsvSource({"Q4_0, 0.9", "F16, 0.7", "Q4_0, 0.5"})
    void measuredSparsityIsNearThePlantedOne(GGMLType type, double sparsity) throws Exception {
        Path p = type == GGMLType.Q4_0 && sparsity == 0.9 ? q40 : dir.resolve("relu-" + type + "-" + sparsity + ".gguf");
        if (!Files.exists(p)) generator(type, PlantedSparsity.Spec.defaults().withSparsity(sparsity)).write(p);
        try (Model m = Model.open(p, options(SparseMode.EXACT))) {
            SparsityStats st = run(m, 64);
            for (int l = 0; l < SHAPE.layers(); l++)
                assertThat(1 - st.activeFraction(l)).as("layer %d sparsity", l).isCloseTo(sparsity, org.assertj.core.api.Assertions.within(0.03));
        }
    }

    @Test
    void predictorsRecallTheActiveNeurons() throws Exception {
        try (Model m = Model.open(q40, options(SparseMode.PREDICT))) {
            SparsityStats st = run(m, 64);
            assertThat(st.verified()).isTrue();
            for (int l = 0; l < SHAPE.layers(); l++) {
                assertThat(st.recall(l)).as("layer %d recall", l).isGreaterThanOrEqualTo(0.9);
                // the predictor must not just say "everything": it computes far fewer than all neurons
                assertThat(st.predictedFraction(l)).as("layer %d predicted", l).isLessThan(0.2);
            }
        }
    }

    @Test
    void hotNeuronsFollowAPowerLaw() throws Exception {
        PlantedSparsity plant = new PlantedSparsity(PlantedSparsity.Spec.defaults(), 256, 1024, 0.02f, 0.02f, 1);
        PlantedSparsity.Layer l = plant.layer(0);
        assertThat(l.meanRate()).isCloseTo(0.1, org.assertj.core.api.Assertions.within(1e-6));
        double[] sorted = l.rate.clone();
        java.util.Arrays.sort(sorted);
        int n = sorted.length;
        assertThat(sorted[n - 1]).isGreaterThan(0.9);        // a few fire for almost every token
        assertThat(sorted[n / 2]).isLessThan(0.05);          // the median neuron rarely fires
        double top10 = 0, all = 0;
        for (int i = 0; i < n; i++) {
            all += sorted[i];
            if (i >= n - n / 10) top10 += sorted[i];
        }
        assertThat(top10 / all).as("share of activations from the hottest 10%").isGreaterThan(0.5);
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource({"Q4_0", "F16"})
    void allModesRunAndOffEqualsExactGreedy(GGMLType type) throws Exception {
        Path p = type == GGMLType.Q4_0 ? q40 : dir.resolve("relu-F16-0.7.gguf");
        if (!Files.exists(p)) generator(type, PlantedSparsity.Spec.defaults().withSparsity(0.7)).write(p);
        int[] prompt = {1, 72, 101, 108};
        int[][] out = new int[3][];
        for (SparseMode mode : SparseMode.values()) {
            try (Model m = Model.open(p, options(mode)); Session s = m.newSession()) {
                assertThat(m.sparseMode()).isEqualTo(mode);
                out[mode.ordinal()] = s.generate(prompt, GenerationParams.defaults().withMaxTokens(24).withSampling(SamplingParams.GREEDY)
                        .withStopAtEndOfGeneration(false), null).generatedTokens();
            }
        }
        assertThat(out[SparseMode.EXACT.ordinal()]).containsExactly(out[SparseMode.OFF.ordinal()]);
        assertThat(out[SparseMode.PREDICT.ordinal()]).hasSize(24);
    }

    @Test
    void invalidSpecsAreRejected() {
        assertThatThrownBy(() -> PlantedSparsity.Spec.defaults().withSparsity(1.0)).hasMessageContaining("sparsity");
        assertThatThrownBy(() -> PlantedSparsity.Spec.defaults().withActivation(FfnActivation.SWIGLU)).hasMessageContaining("reglu");
        assertThatThrownBy(() -> PlantedSparsity.Spec.defaults().withPredictorHidden(1)).hasMessageContaining("hidden");
    }

    @Test
    void quantileIsTheInverseOfTheCdf() {
        for (double p : new double[]{1e-6, 0.001, 0.02, 0.3, 0.5, 0.9, 0.995})
            assertThat(PlantedSparsity.Normal.cdf(PlantedSparsity.Normal.quantile(p))).isCloseTo(p, org.assertj.core.api.Assertions.within(p * 1e-5 + 1e-9));
    }
}
