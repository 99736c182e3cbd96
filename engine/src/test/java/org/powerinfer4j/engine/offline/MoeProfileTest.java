package org.powerinfer4j.engine.offline;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.powerinfer4j.engine.TestData;
import org.powerinfer4j.engine.api.Model;
import org.powerinfer4j.engine.api.ModelOptions;
import org.powerinfer4j.engine.model.FfnActivation;
import org.powerinfer4j.engine.placement.ActivationStats;
import org.powerinfer4j.engine.placement.ExpertCounts;
import org.powerinfer4j.engine.sparse.SparseMode;

/**
 * Profiling a mixture-of-experts model (the random Mixtral of {@code archs/}, its experts' activation taken as ReLU):
 * counts per (layer, expert, neuron) and tokens per expert, stored in the side file and read back.
 */
class MoeProfileTest {

    private static Model open(Path file) throws java.io.IOException {
        return Model.open(file, ModelOptions.defaults().withThreads(1).withContextLength(128).withActivation(FfnActivation.REGLU)
                .withSparseMode(SparseMode.OFF));
    }

    @Test
    void everyRoutedTokenIsCountedOncePerChosenExpert(@TempDir Path dir) throws Exception {
        try (Model m = open(TestData.file("archs/mixtral.gguf"))) {
            List<int[]> corpus = CalibrationCorpus.sample(m, 3, 64, 1.0f, 11);
            ActivationStats s = ActivationProfiler.profile(m, corpus, 0f, null);
            int k = m.config().params().expertsUsed(), experts = m.config().params().experts();
            assertThat(s.tokens()).isEqualTo(3 * 64);
            for (int l = 0; l < s.layers(); l++) {
                ExpertCounts e = s.experts(l);
                assertThat(e).as("layer %d is a MoE layer", l).isNotNull();
                assertThat(e.experts()).isEqualTo(experts);
                assertThat(Arrays.stream(e.tokens()).sum()).as("layer %d: each token goes to %d experts", l, k).isEqualTo(k * s.tokens());
                for (int x = 0; x < experts; x++) {
                    long routed = e.tokens()[x];
                    assertThat(Arrays.stream(e.neurons()[x]).max().orElse(0)).as("a neuron fires at most once per token its expert receives")
                            .isLessThanOrEqualTo(routed);
                }
                assertThat(s.counts(l)).isEqualTo(e.summedOverExperts());
                assertThat(e.meanActiveFraction()).as("ReLU experts: some neurons zero, some not").isStrictlyBetween(0.05, 0.95);
            }
            assertThat(s.summary().get(0)).startsWith("layer 0: " + experts + " experts: the top " + k + " take ");

            Path file = dir.resolve("mixtral.activations.gguf");
            s.write(file);
            ActivationStats back = ActivationStats.read(file);
            for (int l = 0; l < s.layers(); l++) {
                assertThat(back.experts(l)).isEqualTo(s.experts(l));
                assertThat(back.counts(l)).isEqualTo(s.counts(l));
            }
        }
    }

    @Test
    void aDenseModelsStatsHaveNoExpertCounts(@TempDir Path dir) throws Exception {
        ActivationStats dense = new ActivationStats(new long[][] {{1, 2, 3}}, 5, "m", ActivationStats.CRITERION_NONZERO, 0f);
        dense.write(dir.resolve("d.gguf"));
        assertThat(ActivationStats.read(dir.resolve("d.gguf")).experts(0)).isNull();
    }
}
