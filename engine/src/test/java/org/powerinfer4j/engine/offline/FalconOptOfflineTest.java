package org.powerinfer4j.engine.offline;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.io.TempDir;
import org.powerinfer4j.engine.TestData;
import org.powerinfer4j.engine.api.GenerationParams;
import org.powerinfer4j.engine.api.Model;
import org.powerinfer4j.engine.api.ModelOptions;
import org.powerinfer4j.engine.api.Session;
import org.powerinfer4j.engine.model.FfnActivation;
import org.powerinfer4j.engine.sampling.SamplingParams;
import org.powerinfer4j.engine.sparse.SparseMode;

/**
 * The offline pipeline on PowerInfer's other ReLU-family layouts (non-gated FFNs): OPT (ReLU in the file) and Falcon
 * (its GELU taken as ReLU, as ReluFalcon is): profile counts every layer, train-predictors writes a PWRI file that
 * opens in predict mode and generates.
 */
class FalconOptOfflineTest {

    @ParameterizedTest
    @CsvSource({"archs/opt.gguf,", "archs/falcon-7b.gguf,RELU"})
    void profileThenTrainPredictorsThenRunPredictMode(String file, String activation, @TempDir Path dir) throws Exception {
        ModelOptions o = ModelOptions.defaults().withThreads(1).withContextLength(128).withSparseMode(SparseMode.OFF);
        if (activation != null) o = o.withActivation(FfnActivation.parse(activation));
        try (Model m = Model.open(TestData.file(file), o)) {
            List<int[]> corpus = CalibrationCorpus.sample(m, 6, 96, 1.0f, 5);
            var stats = ActivationProfiler.profile(m, corpus, 0f, null);
            for (int l = 0; l < stats.layers(); l++) {
                assertThat(stats.ff(l)).isEqualTo(m.config().ffDim());
                assertThat(stats.meanActiveFraction(l)).as("%s layer %d: ReLU zeros and non-zeros", file, l).isStrictlyBetween(0.1, 0.9);
                assertThat(stats.experts(l)).isNull();
            }
            PredictorDataset data = PredictorDataset.collect(m, corpus, null);
            PredictorTrainer.Result r = PredictorTrainer.train(data, PredictorTrainer.Config.defaults(m.config().dim()).withThreads(1).withSeed(3), line -> {});
            assertThat(r.layers()).hasSize(m.config().layers());
            for (PredictorTrainer.LayerPredictor p : r.layers())
                assertThat(p.recall()).as("%s layer %d held-out recall", file, p.layer()).isGreaterThan(0.75);
            Path out = dir.resolve("model.powerinfer.gguf");
            PowerInferWriter.write(m.file(), r, out);
            ModelOptions predict = ModelOptions.defaults().withThreads(1).withContextLength(128);
            if (activation != null) predict = predict.withActivation(FfnActivation.parse(activation));
            try (Model p = Model.open(out, predict); Session s = p.newSession()) {
                assertThat(p.sparseMode()).isEqualTo(SparseMode.PREDICT);
                var g = s.generate(new int[] {1, 5, 9}, GenerationParams.defaults().withMaxTokens(8).withSampling(SamplingParams.GREEDY)
                        .withStopAtEndOfGeneration(false), null);
                assertThat(g.generatedTokens()).hasSize(8);
            }
        }
    }
}
