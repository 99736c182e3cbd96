package org.powerinfer4j.engine.backend;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.powerinfer4j.engine.TestData;
import org.powerinfer4j.engine.api.Model;
import org.powerinfer4j.engine.api.ModelOptions;
import org.powerinfer4j.engine.gpu.CudaBackend;
import org.powerinfer4j.engine.sparse.SparseMode;

/** The hybrid FFN on a real CUDA device: reference tokens, fallback on exhausted memory, overlap. Skipped without CUDA. */
@Tag("gpu")
class HybridCudaTest {
    @ParameterizedTest(name = "threshold {0}, {1} of FFN bytes hot, cold mask {2}")
    @CsvSource({"0, 0.5, GPU_EVENT", "0, 1.0, GPU_EVENT", "1, 0.25, GPU_EVENT", "1, 1.0, CPU_PREDICTOR"})
    void greedyTokensMatchReference(float threshold, double fraction, ColdMaskSource mask) throws Exception {
        assumeTrue(CudaBackend.isAvailable(), CudaBackend.unavailableReason());
        try (CudaBackend cuda = CudaBackend.open(0); HybridHarness h = new HybridHarness(threshold)) {
            List<String> warnings = new ArrayList<>();
            try (HybridFeedForward ffn = h.hybrid(cuda, h.planned(fraction), mask, null, warnings)) {
                assertThat(ffn.gpuActive()).isTrue();
                List<int[]> prompts = h.prompts(), expected = h.expected();
                for (int i = 0; i < prompts.size(); i++)
                    assertThat(h.greedy(ffn, prompts.get(i), expected.get(i).length)).as("prompt %d", i).containsExactly(expected.get(i));
                assertThat(warnings).isEmpty();
                assertThat(ffn.gpuActive()).isTrue();
                OverlapStats.Snapshot o = ffn.overlapStats().snapshot();
                assertThat(o.overlap()).isBetween(0.0, 1.0);
                // the device's busy time comes from timing events: positive, and within the layer time
                assertThat(o.gpuNanos()).isPositive().isLessThanOrEqualTo(o.layerNanos());
                System.out.printf(Locale.ROOT, "CUDA threshold %s, %.0f%%, %s: %s%n", threshold, 100 * fraction, mask, o.format());
            }
        }
    }

    /** Dense batches (GEMMs over the batch, the mask on the activations) give the CPU's predict-mode output. */
    @ParameterizedTest(name = "threshold {0}, {1} of FFN bytes hot, cold mask {2}")
    @CsvSource({"0, 0.5, GPU_EVENT", "1, 1.0, CPU_PREDICTOR"})
    void denseBatchesEqualThePredictModeFeedForward(float threshold, double fraction, ColdMaskSource mask) throws Exception {
        assumeTrue(CudaBackend.isAvailable(), CudaBackend.unavailableReason());
        try (CudaBackend cuda = CudaBackend.open(0)) {
            HybridDenseBatchTest.compareWithCpu(cuda, threshold, fraction, mask, 2e-3);   // F16 GEMM operands where the weights are not F32
        }
    }

    @Test
    void greedyTokensWithDenseChunksMatchReference() throws Exception {
        assumeTrue(CudaBackend.isAvailable(), CudaBackend.unavailableReason());
        try (CudaBackend cuda = CudaBackend.open(0)) {
            HybridDenseBatchTest.greedyWithDenseChunks(cuda, 0f);
        }
    }

    /** --gpu cuda without --vram-budget or a GPU index plans for the device's free memory less the reserve. */
    @Test
    void budgetDefaultsToFreeDeviceMemory() throws Exception {
        assumeTrue(CudaBackend.isAvailable(), CudaBackend.unavailableReason());
        long[] mem = CudaBackend.deviceMemory();
        List<String> notes = new ArrayList<>();
        GpuOptions o = HybridSetup.withDefaultBudget(new GpuOptions(GpuMode.CUDA, -1, null, null, null, GpuOptions.DEFAULT_TILE), notes::add);
        assertThat(o.vramBudget()).isEqualTo(Math.max(0, mem[0] - HybridSetup.defaultReserve(mem[1])));
        assertThat(notes).singleElement().asString().startsWith("note: no --vram-budget");
        // explicit choices are kept; the simulated device has no memory to ask about
        assertThat(HybridSetup.withDefaultBudget(GpuOptions.budget(GpuMode.CUDA, 1234), notes::add).vramBudget()).isEqualTo(1234);
        assertThat(HybridSetup.withDefaultBudget(new GpuOptions(GpuMode.SIMULATED, -1, null, null, null, 32), notes::add).hasBudget()).isFalse();
        assertThat(notes).hasSize(1);
        if (o.vramBudget() < (64L << 20)) return; // a nearly full device: nothing more to check
        ModelOptions mo = ModelOptions.defaults().withSparseMode(SparseMode.PREDICT).withGpu(new GpuOptions(GpuMode.CUDA, -1, null, null, null, 32));
        try (Model m = Model.open(TestData.file("sparse/stories260K-relu.powerinfer.gguf"), mo)) {
            assertThat(m.hybridFeedForward()).isNotNull();
            assertThat(m.hybridFeedForward().placement().totalHot()).isPositive();
        }
    }

    @Test
    void exhaustedDeviceMemoryFallsBackToCpu() throws Exception {
        assumeTrue(CudaBackend.isAvailable(), CudaBackend.unavailableReason());
        try (CudaBackend cuda = CudaBackend.open(0); HybridHarness h = new HybridHarness(0f)) {
            // 40% of what the full placement allocates through the backend (the CUDA backend's own split scratch
            // is allocated past this wrapper, so the limit leaves it out)
            long needed = h.budgetFor(1.0) - HybridPlacement.streamScratch(h.config().dim());
            FaultyBackend limited = new FaultyBackend(cuda, (long) (0.4 * needed));
            List<String> warnings = new ArrayList<>();
            try (HybridFeedForward ffn = h.hybrid(limited, h.planned(1.0), ColdMaskSource.GPU_EVENT, null, warnings)) {
                assertThat(limited.refused()).isPositive();
                assertThat(warnings).hasSize(1);
                int[] prompt = h.prompts().get(1), expected = h.expected().get(1);
                assertThat(h.greedy(ffn, prompt, 24)).containsExactly(Arrays.copyOf(expected, 24));
                assertThat(warnings).hasSize(1);
            }
        }
    }
}
