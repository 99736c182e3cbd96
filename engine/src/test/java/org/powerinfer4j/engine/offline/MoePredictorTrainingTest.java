package org.powerinfer4j.engine.offline;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.List;
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

/**
 * train-predictors on a mixture-of-experts model (the random Mixtral of {@code archs/}, its experts run as ReGLU): one
 * predictor per (layer, expert) trained on the tokens the router sent to that expert, written as {@code blk.N.fc1.E} /
 * {@code fc2.E}; the PWRI file opens in predict mode, generates, and at threshold −∞ gives the dense logits.
 */
class MoePredictorTrainingTest {

    private static ModelOptions options(SparseMode mode) {
        return ModelOptions.defaults().withThreads(2).withContextLength(128).withActivation(FfnActivation.REGLU).withSparseMode(mode);
    }

    @Test
    void trainsOnePredictorPerExpertAndThePwriFileRunsPredictMode(@TempDir Path dir) throws Exception {
        Path out = dir.resolve("mixtral.powerinfer.gguf");
        int layers, experts;
        try (Model m = Model.open(TestData.file("archs/mixtral.gguf"), options(SparseMode.OFF))) {
            layers = m.config().layers();
            experts = m.config().params().experts();
            List<int[]> corpus = CalibrationCorpus.sample(m, 8, 96, 1.0f, 7);
            PredictorDataset data = PredictorDataset.collect(m, corpus, null);
            assertThat(data.units()).as("one predictor per (layer, expert)").isEqualTo(layers * experts);
            int k = m.config().params().expertsUsed();
            assertThat(data.units.stream().mapToInt(u -> u.samples).sum()).as("each token reaches k experts per layer")
                    .isEqualTo(layers * k * data.tokens());
            PredictorTrainer.Result r = PredictorTrainer.train(data, PredictorTrainer.Config.defaults(m.config().dim()).withThreads(2).withSeed(3), line -> {});
            assertThat(r.layers()).hasSize(layers * experts);
            for (PredictorTrainer.LayerPredictor p : r.layers()) {
                assertThat(p.expert()).isBetween(0, experts - 1);
                // a random model's experts fire for half their neurons, linearly in the normed input; ~350 samples each
                // here give 0.74–0.87 at threshold 0 (the dense OPT/Falcon tests ask 0.75 with every token)
                assertThat(p.recall()).as("layer %d expert %d held-out recall", p.layer(), p.expert()).isGreaterThan(0.7);
            }
            assertThat(r.table()).contains("expert");
            PowerInferWriter.write(m.file(), r, out);
        }
        try (GGUFFile f = GGUFFile.open(out)) {
            assertThat(f.isPowerInfer()).isTrue();
            for (int l = 0; l < layers; l++)
                for (int e = 0; e < experts; e++) {
                    assertThat(f.hasTensor("blk." + l + ".fc1." + e + ".weight")).isTrue();
                    assertThat(f.hasTensor("blk." + l + ".fc2." + e + ".weight")).isTrue();
                }
            assertThat(f.hasTensor("blk.0.ffn_down_exps.weight")).as("the experts stay as they are").isTrue();
        }
        try (Model p = Model.open(out, options(null)); Session s = p.newSession()) {
            assertThat(p.sparseMode()).isEqualTo(SparseMode.PREDICT);
            var g = s.generate(new int[] {1, 5, 9}, GenerationParams.defaults().withMaxTokens(8).withSampling(SamplingParams.GREEDY)
                    .withStopAtEndOfGeneration(false), null);
            assertThat(g.generatedTokens()).hasSize(8);
            assertThat(p.sparsityStats().meanPredictedFraction()).as("predicted experts compute part of their neurons").isStrictlyBetween(0.05, 0.95);
        }
        // every neuron predicted: the dense experts' result (F32 weights, another summation order)
        int[] prompt = {1, 15, 27, 3, 99, 41, 8, 64};
        try (Model off = Model.open(out, options(SparseMode.OFF));
             Model all = Model.open(out, options(SparseMode.PREDICT).withSparseThreshold(Float.NEGATIVE_INFINITY));
             Session a = off.newSession(); Session b = all.newSession()) {
            for (int id : prompt) {
                float[] x = a.evaluate(id), y = b.evaluate(id);
                for (int v = 0; v < x.length; v++) assertThat(Math.abs(x[v] - y[v])).as("token %d logit %d", id, v).isLessThan(1e-4f);
            }
        }
    }

    /** A file where only some experts have predictors: exact by default, and predict refused in one line. */
    @Test
    void predictorsForSomeExpertsOnlyAreNotEnoughForPredict(@TempDir Path dir) throws Exception {
        Path out = dir.resolve("partial.powerinfer.gguf");
        try (GGUFFile f = GGUFFile.open(TestData.file("archs/mixtral.gguf"))) {
            int dim = (int) f.tensorInfo("blk.0.ffn_gate_inp.weight").ne()[0], ff = (int) f.tensorInfo("blk.0.ffn_up_exps.weight").ne()[1], h = 8;
            var p = new PredictorTrainer.LayerPredictor(0, 0, h, new float[h * dim], new float[ff * h], 0f, 1, 1, 0, 0, 1, "");
            PowerInferWriter.write(f, new PredictorTrainer.Result(List.of(p), 0f, 0, 0), out);
        }
        try (GGUFFile g = GGUFFile.open(out)) {
            assertThat(g.hasTensor("blk.0.fc1.0.weight")).isTrue();
            assertThat(g.hasTensor("blk.0.fc1.1.weight")).isFalse();
        }
        try (Model m = Model.open(out, options(null))) {
            assertThat(m.sparseMode()).isEqualTo(SparseMode.EXACT);
        }
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> Model.open(out, options(SparseMode.PREDICT)))
                .isInstanceOf(org.powerinfer4j.engine.model.ModelException.class)
                .hasMessage("--sparse predict on a mixture-of-experts model needs a predictor per expert (blk.N.fc1.E/fc2.E), which this file "
                        + "lacks; run train-predictors or use --sparse exact");
    }
}
