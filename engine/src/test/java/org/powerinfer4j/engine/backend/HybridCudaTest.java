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
import org.powerinfer4j.engine.gpu.CudaBackend;

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
                System.out.printf(Locale.ROOT, "CUDA threshold %s, %.0f%%, %s: %s%n", threshold, 100 * fraction, mask, o.format());
            }
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
