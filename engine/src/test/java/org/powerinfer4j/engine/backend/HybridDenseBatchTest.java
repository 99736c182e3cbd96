package org.powerinfer4j.engine.backend;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.powerinfer4j.engine.gpu.GpuBackend;
import org.powerinfer4j.engine.gpu.SimulatedBackend;
import org.powerinfer4j.engine.model.FeedForward;
import org.powerinfer4j.engine.model.InferenceState;
import org.powerinfer4j.engine.sparse.SparseFeedForward;
import org.powerinfer4j.engine.tensor.GGMLType;

/**
 * The hybrid FFN's dense batches ({@link HybridDevicePass}: from {@link GpuBackend#hybridDenseFrom()} tokens the
 * predictor and the hot rows run as GEMMs over the batch, the mask applied to the activations) give the CPU's
 * predict-mode output, as the per-token row-sparse path does, on the simulated device; {@link HybridCudaTest} runs
 * the same on CUDA.
 */
class HybridDenseBatchTest {
    static final int ROWS = 40;
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
    @CsvSource({"0, 0.5, GPU_EVENT", "1, 1.0, GPU_EVENT", "0, 0.25, CPU_PREDICTOR"})
    void denseBatchesEqualThePredictModeFeedForward(float threshold, double fraction, ColdMaskSource mask) throws Exception {
        compareWithCpu(device, threshold, fraction, mask, 1e-5);
    }

    /** Greedy tokens with every prompt chunk dense (chunks of 3 from a threshold of 2) are the reference's. */
    @ParameterizedTest(name = "threshold {0}")
    @CsvSource({"0", "1"})
    void greedyTokensWithDenseChunksMatchReference(float threshold) throws Exception {
        greedyWithDenseChunks(device, threshold);
    }

    static void greedyWithDenseChunks(GpuBackend gpu, float threshold) throws Exception {
        try (HybridHarness h = new HybridHarness(threshold);
             HybridFeedForward ffn = withDenseFrom(2, () -> h.hybrid(gpu, h.planned(0.5), ColdMaskSource.GPU_EVENT, null, null))) {
            List<int[]> prompts = h.prompts(), expected = h.expected();
            for (int i = 0; i < prompts.size(); i++)
                assertThat(h.greedy(ffn, prompts.get(i), expected.get(i).length)).as("prompt %d", i).containsExactly(expected.get(i));
            assertThat(ffn.gpuActive()).isTrue();
        }
    }

    /**
     * One FFN call over {@link #ROWS} random rows per layer: dense, per token and the CPU's predict mode agree within
     * {@code relTolerance} of each output's scale, the dense placement serving neurons from the device.
     */
    static void compareWithCpu(GpuBackend gpu, float threshold, double fraction, ColdMaskSource mask, double relTolerance) throws Exception {
        try (HybridHarness h = new HybridHarness(threshold)) {
            HybridPlacement p = h.planned(fraction);
            List<String> warnings = new ArrayList<>();
            SparseFeedForward cpu = h.cpuOnly(null);
            try (HybridFeedForward dense = withDenseFrom(ROWS, () -> hybrid(h, gpu, p, mask, warnings));
                 HybridFeedForward perToken = withDenseFrom(ROWS + 1, () -> hybrid(h, gpu, p, mask, warnings))) {
                Random rnd = new Random(61);
                for (int l = 0; l < h.config().layers(); l++) {
                    float[] x = randoms(rnd, ROWS * h.config().dim()), res = randoms(rnd, ROWS * h.config().dim());
                    float[] want = call(h, cpu, l, x, res), got = call(h, dense, l, x, res), token = call(h, perToken, l, x, res);
                    double scale = 0;
                    for (float v : want) scale = Math.max(scale, Math.abs(v));
                    for (int i = 0; i < want.length; i++) {
                        assertThat((double) got[i]).as("layer %d dense [%d]", l, i).isCloseTo(want[i], org.assertj.core.data.Offset.offset(relTolerance * scale + 1e-6));
                        assertThat((double) token[i]).as("layer %d per token [%d]", l, i).isCloseTo(want[i], org.assertj.core.data.Offset.offset(relTolerance * scale + 1e-6));
                    }
                }
                long served = 0;
                for (int l = 0; l < p.layers(); l++) served += dense.gpuComputed(l);
                assertThat(served).isPositive();
                assertThat(dense.overlapStats().snapshot().hybridCalls()).isEqualTo(h.config().layers());
                assertThat(warnings).isEmpty();
            }
        }
    }

    private static HybridFeedForward hybrid(HybridHarness h, GpuBackend gpu, HybridPlacement p, ColdMaskSource mask, List<String> warnings) {
        return new HybridFeedForward(gpu, false, p, h.weights(), h.config().activation(), h.threshold, h.downT(), ROWS, mask, null, warnings::add);
    }

    static float[] call(HybridHarness h, FeedForward ffn, int layer, float[] x, float[] residual) {
        try (InferenceState s = new InferenceState(h.config(), HybridHarness.CONTEXT, ROWS, HybridHarness.THREADS, GGMLType.F32)) {
            System.arraycopy(x, 0, s.ffnInput(), 0, x.length);
            System.arraycopy(residual, 0, s.residual(), 0, residual.length);
            ffn.compute(h.pool, layer, h.weights().layers()[layer], s, ROWS);
            return java.util.Arrays.copyOf(s.ffnOutput(), x.length);
        }
    }

    private static float[] randoms(Random rnd, int n) {
        float[] v = new float[n];
        for (int i = 0; i < n; i++) v[i] = (float) rnd.nextGaussian();
        return v;
    }

    /** Builds with {@code -Dpowerinfer4j.gpu.hybridDenseFrom=n} (read at construction), restoring it after. */
    static <T> T withDenseFrom(int n, Supplier<T> build) {
        String key = "powerinfer4j.gpu.hybridDenseFrom", before = System.getProperty(key);
        System.setProperty(key, String.valueOf(n));
        try {
            return build.get();
        } finally {
            if (before == null) System.clearProperty(key);
            else System.setProperty(key, before);
        }
    }
}
