package org.powerinfer4j.engine.backend;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.powerinfer4j.engine.TestData;
import org.powerinfer4j.engine.api.GenerationParams;
import org.powerinfer4j.engine.api.Model;
import org.powerinfer4j.engine.api.ModelOptions;
import org.powerinfer4j.engine.api.Session;
import org.powerinfer4j.engine.gpu.SimulatedBackend;
import org.powerinfer4j.engine.sampling.SamplingParams;
import org.powerinfer4j.engine.sparse.SparseMode;
import org.powerinfer4j.engine.tensor.GGMLType;

/**
 * Hybrid greedy output on the simulated device equals the predictor-gated reference ids at thresholds 0 and 1, for
 * budgets that put none, about a quarter, about half and all of the FFN neurons on the GPU, with either source of the
 * cold mask; and through {@link Model} with {@code --gpu simulated --vram-budget}.
 */
class HybridReferenceTest {
    private static SimulatedBackend device;

    @BeforeAll
    static void open() {
        device = new SimulatedBackend();
    }

    @AfterAll
    static void close() {
        device.close();
    }

    @ParameterizedTest(name = "threshold {0}, {1} of FFN bytes hot, cold mask {2}")
    @CsvSource({
            "0, 0.00, GPU_EVENT", "0, 0.25, GPU_EVENT", "0, 0.50, GPU_EVENT", "0, 1.00, GPU_EVENT",
            "1, 0.00, GPU_EVENT", "1, 0.25, GPU_EVENT", "1, 0.50, GPU_EVENT", "1, 1.00, GPU_EVENT",
            "0, 0.50, CPU_PREDICTOR", "1, 0.25, CPU_PREDICTOR",
    })
    void greedyTokensMatchReference(float threshold, double fraction, ColdMaskSource mask) throws Exception {
        try (HybridHarness h = new HybridHarness(threshold)) {
            HybridPlacement p = h.planned(fraction);
            long all = p.totalNeurons(), hot = p.totalHot();
            if (fraction == 0) assertThat(hot).isZero();
            else if (fraction == 1) assertThat(hot).isEqualTo(all);
            else assertThat((double) hot / all).isBetween(fraction - 0.15, fraction + 0.05);   // whole tiles of 32 neurons
            List<String> warnings = new ArrayList<>();
            try (HybridFeedForward ffn = h.hybrid(device, p, mask, null, warnings)) {
                assertThat(ffn.gpuActive()).isEqualTo(hot > 0);
                List<int[]> prompts = h.prompts(), expected = h.expected();
                for (int i = 0; i < prompts.size(); i++)
                    assertThat(h.greedy(ffn, prompts.get(i), expected.get(i).length)).as("prompt %d", i).containsExactly(expected.get(i));
                OverlapStats.Snapshot o = ffn.overlapStats().snapshot();
                assertThat(o.overlap()).isBetween(0.0, 1.0);
                assertThat(o.bothNanos()).isLessThanOrEqualTo(o.layerNanos());
                long gpuServed = 0, cpuServed = 0;
                for (int l = 0; l < p.layers(); l++) {
                    gpuServed += ffn.gpuComputed(l);
                    cpuServed += ffn.cpuComputed(l);
                }
                if (hot == 0) assertThat(gpuServed).isZero();
                if (hot == all) assertThat(cpuServed).isZero();
                if (hot > 0) assertThat(o.hybridCalls()).isEqualTo(o.calls());
                System.out.printf(Locale.ROOT, "threshold %s, %.0f%% budget, %s: %s%n", threshold, 100 * fraction, mask, o.format());
                assertThat(warnings).isEmpty();
            }
        }
    }

    @Test
    void modelWithSimulatedGpuAndVramBudget() throws Exception {
        // attention blocks and their KV cache take the budget first (PowerInfer's order), then half the FFN bytes
        long budget;
        try (HybridHarness h = new HybridHarness(0f)) {
            budget = h.budgetFor(0.5);
            for (int l = 0; l < h.config().layers(); l++) budget += GpuLayers.attentionBytes(org.powerinfer4j.engine.model.GraphBuilder.build(h.config(), h.weights()), h.weights(), l, h.config(), 128);
        }
        GpuOptions gpu = GpuOptions.budget(GpuMode.SIMULATED, budget).withActivations(TestData.file("sparse/activation_counts.json"));
        ModelOptions o = ModelOptions.defaults().withThreads(2).withContextLength(128).withBatchSize(HybridHarness.BATCH).withKvCacheType(GGMLType.F32)
                .withSparseMode(SparseMode.PREDICT).withSparseThreshold(0f).withGpu(gpu);
        try (Model m = Model.open(TestData.file("sparse/stories260K-relu.powerinfer.gguf"), o); HybridHarness h = new HybridHarness(0f)) {
            assertThat(m.hybridFeedForward()).isNotNull();
            assertThat(m.hybridFeedForward().placement().totalHot()).isBetween(1L, m.hybridFeedForward().placement().totalNeurons() - 1);
            List<int[]> prompts = h.prompts(), expected = h.expected();
            for (int i = 0; i < prompts.size(); i++)
                try (Session s = m.newSession()) {
                    int[] got = s.generate(prompts.get(i), GenerationParams.defaults().withMaxTokens(expected.get(i).length)
                            .withSampling(SamplingParams.GREEDY).withStopAtEndOfGeneration(false), null).generatedTokens();
                    assertThat(got).as("prompt %d", i).containsExactly(expected.get(i));
                }
            String summary = m.placementSummary();
            System.out.print(summary);
            assertThat(summary).contains("device simulated").contains("statistics activation_counts.json").contains("overlap")
                    .contains("GPU attention: 5 of 5 layers");
            assertThat(m.gpuLayers().failed()).isFalse();
        }
    }

    @Test
    void gpuOffKeepsTheCpuFeedForward() throws Exception {
        ModelOptions o = ModelOptions.defaults().withThreads(1).withContextLength(16).withSparseMode(SparseMode.PREDICT);
        try (Model m = Model.open(TestData.file("sparse/stories260K-relu.powerinfer.gguf"), o)) {
            assertThat(m.hybridFeedForward()).isNull();
            assertThat(m.placementSummary()).isEmpty();
        }
    }
}
