package org.powerinfer4j.engine.backend;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.powerinfer4j.engine.TestData;
import org.powerinfer4j.engine.api.Model;
import org.powerinfer4j.engine.api.ModelOptions;
import org.powerinfer4j.engine.gguf.GGUFFile;
import org.powerinfer4j.engine.gpu.CudaBackend;
import org.powerinfer4j.engine.gpu.CudaEmu;
import org.powerinfer4j.engine.gpu.GpuBackend;
import org.powerinfer4j.engine.gpu.SimulatedBackend;
import org.powerinfer4j.engine.kernels.WorkerPool;
import org.powerinfer4j.engine.model.DenseFeedForward;
import org.powerinfer4j.engine.model.GraphBuilder;
import org.powerinfer4j.engine.model.InferenceState;
import org.powerinfer4j.engine.model.ModelConfig;
import org.powerinfer4j.engine.model.ModelWeights;
import org.powerinfer4j.engine.model.Transformer;
import org.powerinfer4j.engine.placement.DeviceFootprint;
import org.powerinfer4j.engine.sparse.SparseMode;
import org.powerinfer4j.engine.tensor.GGMLType;

/**
 * One footprint: what {@link DeviceFootprint} (and so {@code plan}) lists is, allocation by allocation and byte for
 * byte, what the runtime asks the device for — whole layers ({@code -ngl}, all, partial, under a budget), the hybrid
 * FFN at two budgets, and a whole hybrid model (attention blocks plus FFN) planned with {@link HybridSetup#plan}.
 * On the simulated device always, and on CUDA (cuda-emu in CI) in the gpu-tagged variants, where the emulator's own
 * count of device memory in use must also agree.
 */
class DeviceFootprintTest {
    private static final int CTX = 256;

    /** The device for a variant: simulated, or CUDA device 0 (skipped without one). */
    private static Supplier<GpuBackend> device(boolean cuda) {
        if (!cuda) return SimulatedBackend::new;
        assumeTrue(CudaBackend.isAvailable(), CudaBackend.unavailableReason());
        return () -> CudaBackend.open(0);
    }

    private static List<Long> bytes(DeviceFootprint f) {
        List<Long> b = new ArrayList<>();
        for (DeviceFootprint.Alloc a : f.allocations()) b.add(a.bytes());
        return b;
    }

    private static long emuInUse() throws Throwable {
        return CudaEmu.loaded() ? CudaEmu.deviceBytesInUse() : -1;
    }

    /** -ngl (or a budget) on a dense model; one session's first tokens; allocations compared item by item. */
    private static void wholeLayers(String model, GpuOptions o, int expectLayers, boolean cuda) throws Throwable {
        wholeLayers(model, o, expectLayers, cuda, 1);
    }

    /** With {@code batch} > 1 the prompt (batch + 1 tokens) goes through as one batched chunk and one token. */
    private static void wholeLayers(String model, GpuOptions o, int expectLayers, boolean cuda, int batch) throws Throwable {
        try (GGUFFile f = GGUFFile.open(TestData.file(model))) {
            ModelConfig c = ModelConfig.fromGGUF(f);
            ModelWeights w = ModelWeights.load(f, c);
            Supplier<GpuBackend> open = device(cuda);
            FaultyBackend counting = new FaultyBackend(open.get(), Long.MAX_VALUE);
            long emuBefore = emuInUse();
            List<String> notes = new ArrayList<>();
            try (GpuLayers g = GpuLayers.create(o, c, w, CTX, batch, notes::add, () -> counting)) {
                assertThat(g).as("notes %s", notes).isNotNull();
                assertThat(g.deviceLayers()).isEqualTo(expectLayers);
                Transformer t = new Transformer(c, w, c.params().moe() ? new org.powerinfer4j.engine.model.MoeFeedForward(c) : new DenseFeedForward(c.activation()));
                t.setLayerOffload(g);
                try (WorkerPool pool = new WorkerPool(2); InferenceState s = new InferenceState(c, CTX, Math.max(4, batch), 2, GGMLType.F32)) {
                    int[] prompt = batch > 1 ? java.util.stream.IntStream.rangeClosed(1, batch + 1).toArray() : new int[] {1, 2, 3, 4, 5};
                    t.forward(pool, s, prompt, 0, prompt.length, 0, true);
                    t.forward(pool, s, new int[] {6}, 0, 1, prompt.length, true);
                    assertThat(g.failed()).isFalse();
                    DeviceFootprint fp = g.footprint();
                    assertThat(fp.allocations()).isNotEmpty();
                    assertThat(counting.requests()).as("allocations, in order").containsExactlyElementsOf(bytes(fp));
                    assertThat(counting.allocated()).as("padded bytes").isEqualTo(fp.allocatedBytes());
                    assertThat(g.deviceBytes()).isEqualTo(fp.totalBytes());
                    if (o.hasBudget()) assertThat(fp.totalBytes()).isLessThanOrEqualTo(o.vramBudget());
                    if (emuBefore >= 0) {
                        long raw = 0;
                        for (long b : counting.requests()) raw += b;
                        // the emulator counts requested bytes; beyond them only the backend's stream scratch (split
                        // partials, a GEMM's F16 inputs and dequantized slab: the footprint's reserve)
                        long scratch = Math.max(2L << 20, fp.totalBytes() - fp.allocatedBytes());
                        assertThat(CudaEmu.deviceBytesInUse() - emuBefore).isBetween(raw, raw + scratch);
                    }
                }
            }
        }
    }

    @ParameterizedTest(name = "{0} -ngl {1}")
    @CsvSource({"models/stories260K.gguf, 6, 5", "models/quantized/stories260K-q8_0.gguf, 3, 3", "archs/qwen3-q8_0.gguf, 99, -1",
            "archs/falcon-7b.gguf, 1, 1", "archs/qwen3moe-q8_0.gguf, 99, -1", "archs/gpt-oss.gguf, 1, 1"})
    void nglAllocatesItsFootprintSimulated(String model, int ngl, int expect) throws Throwable {
        wholeLayers(model, GpuOptions.layers(GpuMode.SIMULATED, ngl), expect < 0 ? layersOf(model) : expect, false);
    }

    @Tag("gpu")
    @ParameterizedTest(name = "{0} -ngl {1} on CUDA")
    @CsvSource({"models/stories260K.gguf, 6, 5", "models/quantized/stories260K-q4_0.gguf, 2, 2", "archs/qwen3-q8_0.gguf, 99, -1",
            "archs/mixtral.gguf, 99, -1"})
    void nglAllocatesItsFootprintOnCuda(String model, int ngl, int expect) throws Throwable {
        wholeLayers(model, GpuOptions.layers(GpuMode.CUDA, ngl), expect < 0 ? layersOf(model) : expect, true);
    }

    @ParameterizedTest(name = "{0} -ngl {1} -b {3}")
    @CsvSource({"models/stories260K.gguf, 6, 5, 4", "archs/qwen3moe-q8_0.gguf, 99, -1, 4", "archs/gemma2.gguf, 99, -1, 8"})
    void batchedPrefillAllocatesItsFootprintSimulated(String model, int ngl, int expect, int batch) throws Throwable {
        wholeLayers(model, GpuOptions.layers(GpuMode.SIMULATED, ngl), expect < 0 ? layersOf(model) : expect, false, batch);
    }

    @Tag("gpu")
    @ParameterizedTest(name = "{0} -ngl {1} -b {3} on CUDA")
    @CsvSource({"models/quantized/stories260K-q4_0.gguf, 6, 5, 16", "models/quantized/rand-k-q4_k.gguf, 99, 2, 12", "archs/mixtral.gguf, 99, -1, 8"})
    void batchedPrefillAllocatesItsFootprintOnCuda(String model, int ngl, int expect, int batch) throws Throwable {
        wholeLayers(model, GpuOptions.layers(GpuMode.CUDA, ngl), expect < 0 ? layersOf(model) : expect, true, batch);
    }

    private static int layersOf(String model) throws Exception {
        try (GGUFFile f = GGUFFile.open(TestData.file(model))) {
            return ModelConfig.fromGGUF(f).layers();
        }
    }

    /** A budget of exactly the footprint of the top two layers takes two; one byte less takes one. */
    @Test
    void aBudgetOfExactlyTheFootprintFits() throws Throwable {
        String model = "models/quantized/stories260K-q4_0.gguf";
        long two;
        try (GGUFFile f = GGUFFile.open(TestData.file(model))) {
            ModelConfig c = ModelConfig.fromGGUF(f);
            ModelWeights w = ModelWeights.load(f, c);
            two = DeviceFootprint.layers(c, GraphBuilder.build(c, w), w, c.layers() - 2, 2, false, false, CTX).totalBytes();
        }
        wholeLayers(model, GpuOptions.budget(GpuMode.SIMULATED, two), 2, false);
        wholeLayers(model, GpuOptions.budget(GpuMode.SIMULATED, two - 1), 1, false);
    }

    private static void hybrid(double fraction, boolean cuda) throws Throwable {
        try (HybridHarness h = new HybridHarness(0f)) {
            FaultyBackend counting = new FaultyBackend(device(cuda).get(), Long.MAX_VALUE);
            long budget = h.budgetFor(fraction);
            try (HybridFeedForward ffn = h.hybrid(counting, h.planned(fraction), ColdMaskSource.GPU_EVENT, null, null)) {
                assertThat(ffn.gpuActive()).isTrue();
                assertThat(h.greedy(ffn, h.prompts().get(1), 4)).hasSize(4);   // forward passes allocate nothing more
                DeviceFootprint fp = ffn.footprint();
                assertThat(counting.requests()).as("allocations, in order").containsExactlyElementsOf(bytes(fp));
                assertThat(counting.allocated()).isEqualTo(fp.allocatedBytes()).isEqualTo(ffn.deviceBytes());
                assertThat(fp.totalBytes()).as("within the budget planned for").isLessThanOrEqualTo(budget);
            } finally {
                counting.close();
            }
        }
    }

    @ParameterizedTest(name = "hybrid FFN, {0} of FFN bytes hot")
    @CsvSource({"0.25", "1.0"})
    void hybridFfnAllocatesItsFootprintSimulated(double fraction) throws Throwable {
        hybrid(fraction, false);
    }

    @Tag("gpu")
    @ParameterizedTest(name = "hybrid FFN on CUDA, {0} of FFN bytes hot")
    @CsvSource({"0.25", "1.0"})
    void hybridFfnAllocatesItsFootprintOnCuda(double fraction) throws Throwable {
        hybrid(fraction, true);
    }

    /**
     * A hybrid FFN whose calls of {@link HybridDenseBatchTest#ROWS} rows run as GEMMs: its workspace holds every
     * token's predictor and hot-row values, exactly as the footprint lists them, and on CUDA a dense call's scratch
     * stays within the stream reserve the footprint charges.
     */
    private static void denseHybrid(boolean cuda) throws Throwable {
        try (HybridHarness h = new HybridHarness(0f)) {
            FaultyBackend counting = new FaultyBackend(device(cuda).get(), Long.MAX_VALUE);
            long emuBefore = emuInUse();
            HybridPlacement p = h.planned(0.5);
            try (HybridFeedForward ffn = new HybridFeedForward(counting, false, p, h.weights(), h.config().activation(), 0f, h.downT(),
                    HybridDenseBatchTest.ROWS, ColdMaskSource.GPU_EVENT, null, null)) {
                assertThat(ffn.gpuActive()).isTrue();
                HybridDenseBatchTest.call(h, ffn, 0, new float[HybridDenseBatchTest.ROWS * h.config().dim()], new float[HybridDenseBatchTest.ROWS * h.config().dim()]);
                DeviceFootprint fp = ffn.footprint();
                int kMax = java.util.Arrays.stream(p.hotCounts()).max().orElseThrow();
                assertThat(fp.allocations()).as("dense calls' hot activations").anyMatch(a -> a.label().equals("hot activation") && a.bytes() == 4L * kMax * HybridDenseBatchTest.ROWS);
                assertThat(counting.requests()).as("allocations, in order").containsExactlyElementsOf(bytes(fp));
                assertThat(counting.allocated()).isEqualTo(fp.allocatedBytes()).isEqualTo(ffn.deviceBytes());
                if (emuBefore >= 0) {
                    long raw = 0;
                    for (long b : counting.requests()) raw += b;
                    assertThat(CudaEmu.deviceBytesInUse() - emuBefore).isBetween(raw, raw + fp.totalBytes() - fp.allocatedBytes());
                }
            } finally {
                counting.close();
            }
        }
    }

    @Test
    void denseHybridBatchesAllocateTheirFootprintSimulated() throws Throwable {
        denseHybrid(false);
    }

    @Tag("gpu")
    @Test
    void denseHybridBatchesAllocateTheirFootprintOnCuda() throws Throwable {
        denseHybrid(true);
    }

    /** The whole hybrid model under two budgets: plan's footprint is the model's, and what the device holds. */
    @ParameterizedTest(name = "hybrid model, budget {0} bytes")
    @CsvSource({"150000", "900000", "4000000"})
    void hybridModelAllocatesWhatThePlanSays(long budget) throws Throwable {
        ModelOptions o = ModelOptions.defaults().withThreads(2).withContextLength(128).withBatchSize(3).withKvCacheType(GGMLType.F32)
                .withSparseMode(SparseMode.PREDICT).withGpu(GpuOptions.budget(GpuMode.SIMULATED, budget));
        try (Model m = Model.open(TestData.file("sparse/stories260K-relu.powerinfer.gguf"), o)) {
            HybridSetup.DevicePlan plan = HybridSetup.plan(m.config(), m.weights(), 128, 3, budget, null, GpuOptions.DEFAULT_TILE, "test");
            DeviceFootprint fp = m.deviceFootprint();
            assertThat(fp.allocations()).as("plan and model list the same allocations").containsExactlyElementsOf(plan.footprint().allocations());
            assertThat(fp.totalBytes()).isLessThanOrEqualTo(budget);
            int attention = m.gpuLayers() == null ? 0 : m.gpuLayers().deviceLayers();
            assertThat(attention).isEqualTo(plan.attentionLayers());
            try (org.powerinfer4j.engine.api.Session s = m.newSession()) {
                s.generate(new int[] {1, 2, 3, 4}, org.powerinfer4j.engine.api.GenerationParams.defaults().withMaxTokens(2)
                        .withSampling(org.powerinfer4j.engine.sampling.SamplingParams.GREEDY).withStopAtEndOfGeneration(false), null);
                assertThat(m.deviceBytesInUse()).as("device bytes with one session").isEqualTo(fp.allocatedBytes());
            }
        }
    }
}
