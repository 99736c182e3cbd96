package org.powerinfer4j.engine.backend;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.powerinfer4j.engine.TestData;
import org.powerinfer4j.engine.api.Model;
import org.powerinfer4j.engine.api.ModelOptions;
import org.powerinfer4j.engine.gguf.GGUFFile;
import org.powerinfer4j.engine.gpu.SimulatedBackend;
import org.powerinfer4j.engine.model.GraphBuilder;
import org.powerinfer4j.engine.model.ModelGraph;
import org.powerinfer4j.engine.model.LayerOffload;
import org.powerinfer4j.engine.model.ModelConfig;
import org.powerinfer4j.engine.model.ModelWeights;
import org.powerinfer4j.engine.placement.DeviceFootprint;
import org.powerinfer4j.engine.tensor.GGMLType;

/**
 * {@code -ngl}: whole layers on a simulated device (the CUDA kernels' semantics on CPU threads). The greedy
 * continuation must be llama.cpp's reference for every split, and the logits must match the CPU's with the same
 * (F32) KV cache; device allocation failures and a failing launch must fall back to the CPU without changing them.
 */
class GpuLayersTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    private record Loaded(GGUFFile file, ModelConfig config, ModelWeights weights) implements AutoCloseable {
        static Loaded open(String model) throws Exception {
            GGUFFile f = GGUFFile.open(TestData.file(model));
            ModelConfig c = ModelConfig.fromGGUF(f);
            return new Loaded(f, c, ModelWeights.load(f, c));
        }

        ModelGraph graph() {
            return GraphBuilder.build(config, weights);
        }

        @Override
        public void close() {
            file.close();
        }
    }

    private record Run(int[] tokens, float[] firstLogits) {}

    /** Greedy decoding of {@code steps} tokens after {@code prompt}, the last layers through {@code offload}. */
    private static Run greedy(Loaded m, LayerOffload offload, int[] prompt, int steps) {
        DeviceRuns.Run r = DeviceRuns.greedy(m.config(), m.weights(), offload, prompt, steps, 4);   // chunks of 4: prefill through the device too
        return new Run(r.tokens(), r.firstLogits());
    }

    private static int[] ints(JsonNode n) {
        int[] r = new int[n.size()];
        for (int i = 0; i < r.length; i++) r[i] = n.get(i).asInt();
        return r;
    }

    private static JsonNode reference(String file) throws Exception {
        return JSON.readTree(Files.readString(TestData.file(file))).get("results").get(0);
    }

    @ParameterizedTest(name = "{0} -ngl {2}")
    @CsvSource({
            "models/stories260K.gguf, reference/stories260K.llamacpp.json, 1",
            "models/stories260K.gguf, reference/stories260K.llamacpp.json, 3",
            "models/stories260K.gguf, reference/stories260K.llamacpp.json, 5",
            "models/stories260K.gguf, reference/stories260K.llamacpp.json, 6",
            "models/quantized/stories260K-q8_0.gguf, reference/stories260K-q8_0.llamacpp.json, 6",
            "models/quantized/stories260K-q4_0.gguf, reference/stories260K-q4_0.llamacpp.json, 6",
            "models/quantized/stories260K-f16.gguf, reference/stories260K-f16.llamacpp.json, 4"})
    void greedyTokensAreLlamaCppsAndLogitsTheCpus(String model, String reference, int ngl) throws Exception {
        JsonNode ref = reference(reference);
        int[] prompt = ints(ref.get("prompt_ids")), expected = ints(ref.get("generated_ids"));
        int steps = Math.min(48, expected.length);
        try (Loaded m = Loaded.open(model)) {
            List<String> notes = new ArrayList<>();
            Run cpu = greedy(m, null, prompt, steps);
            try (GpuLayers g = GpuLayers.create(GpuOptions.layers(GpuMode.SIMULATED, ngl), m.config(), m.weights(), 256, notes::add)) {
                assertThat(g).as("notes: %s", notes).isNotNull();
                assertThat(g.deviceLayers()).isEqualTo(Math.min(ngl, m.config().layers()));
                assertThat(g.firstLayer()).isEqualTo(m.config().layers() - g.deviceLayers());
                assertThat(g.outputHeadOnDevice()).isEqualTo(ngl > m.config().layers());
                Run dev = greedy(m, g, prompt, steps);
                assertThat(dev.tokens()).as("llama.cpp's greedy tokens").containsExactly(java.util.Arrays.copyOf(expected, steps));
                assertThat(dev.tokens()).containsExactly(cpu.tokens());
                for (int i = 0; i < cpu.firstLogits().length; i++)
                    assertThat(dev.firstLogits()[i]).as("logit %d", i).isCloseTo(cpu.firstLogits()[i], within(2e-4f));
                assertThat(g.failed()).isFalse();
                assertThat(g.summary()).contains("GPU layers: " + g.deviceLayers() + " of " + m.config().layers());
            }
        }
    }

    @Test
    @org.junit.jupiter.api.Tag("gpu")
    void onCudaTheTokensAreLlamaCppsAndLogitsTheCpus() throws Exception {
        org.junit.jupiter.api.Assumptions.assumeTrue(org.powerinfer4j.engine.gpu.CudaBackend.isAvailable(),
                org.powerinfer4j.engine.gpu.CudaBackend.unavailableReason());
        for (String[] mr : new String[][] {{"models/stories260K.gguf", "reference/stories260K.llamacpp.json"},
                {"models/quantized/stories260K-q4_0.gguf", "reference/stories260K-q4_0.llamacpp.json"}}) {
            JsonNode ref = reference(mr[1]);
            int[] prompt = ints(ref.get("prompt_ids")), expected = java.util.Arrays.copyOf(ints(ref.get("generated_ids")), 48);
            try (Loaded m = Loaded.open(mr[0])) {
                Run cpu = greedy(m, null, prompt, 48);
                List<String> notes = new ArrayList<>();
                try (GpuLayers g = GpuLayers.create(GpuOptions.layers(GpuMode.CUDA, 6), m.config(), m.weights(), 256, notes::add)) {
                    assertThat(g).as("notes: %s", notes).isNotNull();
                    Run dev = greedy(m, g, prompt, 48);
                    assertThat(dev.tokens()).as(mr[0]).containsExactly(expected);
                    for (int i = 0; i < cpu.firstLogits().length; i++)
                        assertThat(dev.firstLogits()[i]).as("logit %d", i).isCloseTo(cpu.firstLogits()[i], within(1e-3f));
                    assertThat(g.failed()).isFalse();
                }
            }
        }
    }

    /**
     * {@code -ctk f16} (the default) puts an F16 KV cache on the device too: keys and values rounded as the CPU's
     * F16 cache rounds them, read widened. All layers and the head on the device give llama.cpp's greedy tokens and
     * the logits of the CPU with its F16 cache; the footprint's KV cache is F16 and half the F32 one.
     */
    @Test
    void anF16CacheOnTheDeviceGivesTheCpusF16Results() throws Exception {
        f16Cache(GpuMode.SIMULATED);
    }

    @Test
    @org.junit.jupiter.api.Tag("gpu")
    void onCudaAnF16CacheGivesTheCpusF16Results() throws Exception {
        org.junit.jupiter.api.Assumptions.assumeTrue(org.powerinfer4j.engine.gpu.CudaBackend.isAvailable(),
                org.powerinfer4j.engine.gpu.CudaBackend.unavailableReason());
        f16Cache(GpuMode.CUDA);
    }

    private static void f16Cache(GpuMode mode) throws Exception {
        JsonNode ref = reference("reference/stories260K-q8_0.llamacpp.json");
        int[] prompt = ints(ref.get("prompt_ids")), expected = java.util.Arrays.copyOf(ints(ref.get("generated_ids")), 32);
        try (Loaded m = Loaded.open("models/quantized/stories260K-q8_0.gguf")) {
            Run cpu = greedy16(m, null, prompt, 32);
            List<String> notes = new ArrayList<>();
            try (GpuLayers g = GpuLayers.create(GpuOptions.layers(mode, 99), m.config(), m.weights(), 256, 4, GGMLType.F16, notes::add);
                 GpuLayers f32 = GpuLayers.create(GpuOptions.layers(GpuMode.SIMULATED, 99), m.config(), m.weights(), 256, 4, GGMLType.F32, notes::add)) {
                assertThat(g).as("notes: %s", notes).isNotNull();
                Run dev = greedy16(m, g, prompt, 32);
                assertThat(dev.tokens()).as("llama.cpp's greedy tokens").containsExactly(expected).containsExactly(cpu.tokens());
                for (int i = 0; i < cpu.firstLogits().length; i++)
                    assertThat(dev.firstLogits()[i]).as("logit %d", i).isCloseTo(cpu.firstLogits()[i], within(mode == GpuMode.CUDA ? 1e-3f : 2e-4f));
                assertThat(g.failed()).isFalse();
                assertThat(g.summary()).contains("KV cache per session").contains("F16");
                long kv16 = kvBytes(g), kv32 = kvBytes(f32);
                assertThat(kv16).isPositive();
                assertThat(2 * kv16).as("F16 cache: half the F32 one").isBetween(kv32 - 2L * 256 * 2 * m.config().layers(), kv32);
                assertThat(g.footprint().allocations()).filteredOn(a -> a.category().equals("KV cache")).allMatch(a -> a.label().contains(" F16)"));
            }
        }
    }

    private static Run greedy16(Loaded m, LayerOffload offload, int[] prompt, int steps) {
        DeviceRuns.Run r = DeviceRuns.greedy(m.config(), m.weights(), offload, prompt, steps, 4, GGMLType.F16);
        return new Run(r.tokens(), r.firstLogits());
    }

    private static long kvBytes(GpuLayers g) {
        return g.footprint().allocations().stream().filter(a -> a.category().equals("KV cache")).mapToLong(DeviceFootprint.Alloc::padded).sum();
    }

    @Test
    void aBudgetTakesTheLayersThatFitFromTheTop() throws Exception {
        try (Loaded m = Loaded.open("models/stories260K.gguf")) {
            long oneLayer = GpuLayers.layerBytes(m.graph(), m.weights(), 4, m.config(), 256);
            List<String> notes = new ArrayList<>();
            GpuOptions o = GpuOptions.budget(GpuMode.SIMULATED, 2 * oneLayer + oneLayer / 2);
            try (GpuLayers g = GpuLayers.create(o, m.config(), m.weights(), 256, notes::add)) {
                assertThat(g.deviceLayers()).isEqualTo(2);
                assertThat(g.firstLayer()).isEqualTo(3);
                assertThat(g.outputHeadOnDevice()).isFalse();
            }
            assertThat(notes).anyMatch(n -> n.contains("holds 2 of the"));
            assertThat(GpuLayers.create(GpuOptions.budget(GpuMode.SIMULATED, oneLayer / 2), m.config(), m.weights(), 256, notes::add)).isNull();
        }
    }

    /** K-quant layers (and a Q6_K head) run on the device with the CPU's tokens and logits: what Q4_K_M files hold. */
    @ParameterizedTest(name = "{0}")
    @org.junit.jupiter.params.provider.ValueSource(strings = {"rand-k-q4_k", "rand-k-q5_k", "rand-k-q6_k", "rand-k-q4_k_m"})
    void kQuantLayersRunOnTheDevice(String name) throws Exception {
        assertKQuantLayersOnTheDevice(name, GpuMode.SIMULATED);
    }

    @Test
    @org.junit.jupiter.api.Tag("gpu")
    void onCudaKQuantLayersGiveTheCpusTokens() throws Exception {
        org.junit.jupiter.api.Assumptions.assumeTrue(org.powerinfer4j.engine.gpu.CudaBackend.isAvailable(),
                org.powerinfer4j.engine.gpu.CudaBackend.unavailableReason());
        assertKQuantLayersOnTheDevice("rand-k-q4_k_m", GpuMode.CUDA);
        assertKQuantLayersOnTheDevice("rand-k-q5_k", GpuMode.CUDA);
    }

    private static void assertKQuantLayersOnTheDevice(String name, GpuMode mode) throws Exception {
        try (Loaded m = Loaded.open("models/quantized/" + name + ".gguf")) {
            int[] prompt = {1, 45, 300, 7, 128, 90};
            Run cpu = greedy(m, null, prompt, 16);
            List<String> notes = new ArrayList<>();
            try (GpuLayers g = GpuLayers.create(GpuOptions.layers(mode, 99), m.config(), m.weights(), 256, notes::add)) {
                assertThat(g).as("notes: %s", notes).isNotNull();
                assertThat(g.deviceLayers()).isEqualTo(m.config().layers());
                assertThat(g.outputHeadOnDevice()).isTrue();
                Run dev = greedy(m, g, prompt, 16);
                assertThat(dev.tokens()).as(name).containsExactly(cpu.tokens());
                for (int i = 0; i < cpu.firstLogits().length; i++)
                    assertThat(dev.firstLogits()[i]).as("%s logit %d", name, i).isCloseTo(cpu.firstLogits()[i], within(1e-3f));
                assertThat(g.failed()).isFalse();
            }
        }
    }

    @Test
    void layersOfTypesTheKernelsLackStayOnTheCpuWithANote() throws Exception {
        try (Loaded m = Loaded.open("models/quantized/rand-k-q3_k.gguf")) {
            List<String> notes = new ArrayList<>();
            assertThat(GpuLayers.create(GpuOptions.layers(GpuMode.SIMULATED, 99), m.config(), m.weights(), 64, notes::add)).isNull();
            assertThat(notes).anyMatch(n -> n.contains("do not take") && n.contains("Q3_K"));
        }
    }

    @Test
    void noMemoryForTheWeightsOrASessionsCacheDegradesToTheCpu() throws Exception {
        JsonNode ref = reference("reference/stories260K.llamacpp.json");
        int[] prompt = ints(ref.get("prompt_ids")), expected = java.util.Arrays.copyOf(ints(ref.get("generated_ids")), 24);
        try (Loaded m = Loaded.open("models/stories260K.gguf")) {
            List<String> notes = new ArrayList<>();
            // weights do not fit: no offload at all
            assertThat(GpuLayers.create(GpuOptions.layers(GpuMode.SIMULATED, 6), m.config(), m.weights(), 256, notes::add,
                    () -> new FaultyBackend(new SimulatedBackend(), 100_000))).isNull();
            assertThat(notes).anyMatch(n -> n.startsWith("warning: -ngl: the GPU could not take the layers"));
            // weights fit, the session's KV cache does not: that session runs on the CPU, correctly
            notes.clear();
            long weights = 0;
            for (int l = 0; l < 5; l++) weights += GpuLayers.layerBytes(m.graph(), m.weights(), l, m.config(), 256) - 2 * 256L * 4 * m.config().kvDim();
            long limit = weights + GpuLayers.headBytes(m.graph(), m.config()) + 64 * 1024;
            try (GpuLayers g = GpuLayers.create(GpuOptions.layers(GpuMode.SIMULATED, 6), m.config(), m.weights(), 256, notes::add,
                    () -> new FaultyBackend(new SimulatedBackend(), limit))) {
                assertThat(g).as("notes: %s", notes).isNotNull();
                assertThat(greedy(m, g, prompt, 24).tokens()).containsExactly(expected);
                assertThat(greedy(m, g, prompt, 24).tokens()).as("a second session").containsExactly(expected);
                // one warning for the model, not one per session
                assertThat(notes).filteredOn(n -> n.contains("no device memory for a session's KV cache")).hasSize(1)
                        .allMatch(n -> n.startsWith("warning: -ngl:"));
            }
        }
    }

    @Test
    void aFailingLaunchMidGenerationHandsOverToTheCpuWithTheSameTokens() throws Exception {
        JsonNode ref = reference("reference/stories260K.llamacpp.json");
        int[] prompt = ints(ref.get("prompt_ids")), expected = java.util.Arrays.copyOf(ints(ref.get("generated_ids")), 32);
        try (Loaded m = Loaded.open("models/stories260K.gguf")) {
            List<String> notes = new ArrayList<>();
            FaultyBackend faulty = new FaultyBackend(new SimulatedBackend(), Long.MAX_VALUE);
            try (GpuLayers g = GpuLayers.create(GpuOptions.layers(GpuMode.SIMULATED, 6), m.config(), m.weights(), 256, notes::add, () -> faulty)) {
                faulty.failDenseMatVecAt(7 * 10 * 3 + 5);   // a few tokens in, in the middle of a layer
                assertThat(greedy(m, g, prompt, 32).tokens()).containsExactly(expected);
                assertThat(g.failed()).isTrue();
                assertThat(g.firstLayer()).isEqualTo(m.config().layers());
                assertThat(notes).filteredOn(n -> n.startsWith("warning: GPU layers failed")).hasSize(1);
            }
        }
    }

    /**
     * Decode steps of three sessions in one device pass, the device failing in the middle of the third: that pass
     * and the rest run on the CPU from the saved residuals, and every step's logits are the CPU's alone (the
     * device rounds differently only by float summation order) with the same greedy tokens.
     */
    @Test
    void aSequenceBatchFailingMidPassHandsOverToTheCpu() throws Exception {
        try (Loaded m = Loaded.open("models/stories260K.gguf"); org.powerinfer4j.engine.kernels.WorkerPool pool = new org.powerinfer4j.engine.kernels.WorkerPool(2)) {
            ModelConfig c = m.config();
            List<String> notes = new ArrayList<>();
            FaultyBackend faulty = new FaultyBackend(new SimulatedBackend(), Long.MAX_VALUE);
            try (GpuLayers g = GpuLayers.create(GpuOptions.layers(GpuMode.SIMULATED, c.layers()), c, m.weights(), 256, 4, notes::add, () -> faulty)) {
                var dev = new org.powerinfer4j.engine.model.Transformer(c, m.weights(), new org.powerinfer4j.engine.model.DenseFeedForward(c.activation()));
                var cpu = new org.powerinfer4j.engine.model.Transformer(c, m.weights(), new org.powerinfer4j.engine.model.DenseFeedForward(c.activation()));
                dev.setLayerOffload(g);
                assertThat(dev.supportsSequenceBatches()).isTrue();
                int[][] prompts = {{1, 5, 9}, {1, 7}, {1, 20, 30, 40, 50}};
                int n = prompts.length;
                var ds = new org.powerinfer4j.engine.model.InferenceState[n];
                var cs = new org.powerinfer4j.engine.model.InferenceState[n];
                int[] pos = new int[n], tokens = new int[n];
                try (var scratch = org.powerinfer4j.engine.model.InferenceState.forSequenceBatch(c, 256, n, 2, false)) {
                    for (int i = 0; i < n; i++) {
                        ds[i] = new org.powerinfer4j.engine.model.InferenceState(c, 256, 4, 2, GGMLType.F32);
                        cs[i] = new org.powerinfer4j.engine.model.InferenceState(c, 256, 4, 2, GGMLType.F32);
                        dev.forward(pool, ds[i], prompts[i], 0, prompts[i].length, 0, true);
                        cpu.forward(pool, cs[i], prompts[i], 0, prompts[i].length, 0, true);
                        pos[i] = prompts[i].length;
                    }
                    int perPass = 7 * c.layers() * n;   // q, k, v, o, gate, up, down per layer and row
                    faulty.failDenseMatVecAt(2 * perPass + perPass / 2);
                    for (int step = 0; step < 5; step++) {
                        for (int i = 0; i < n; i++) tokens[i] = DeviceRuns.argmax(cs[i].logits());
                        dev.forwardSequences(pool, scratch, ds, tokens, pos, n);
                        for (int i = 0; i < n; i++) {
                            cpu.forward(pool, cs[i], new int[] {tokens[i]}, 0, 1, pos[i], true);
                            pos[i]++;
                            float[] want = cs[i].logits(), got = ds[i].logits();
                            for (int v = 0; v < want.length; v++) assertThat(got[v]).as("step %d row %d logit %d", step, i, v).isCloseTo(want[v], within(2e-4f));
                            assertThat(DeviceRuns.argmax(got)).isEqualTo(DeviceRuns.argmax(want));
                        }
                    }
                    assertThat(g.failed()).isTrue();
                    assertThat(g.sequenceRowsRun()).as("two whole passes on the device").isEqualTo(2L * n);
                    assertThat(notes).filteredOn(x -> x.startsWith("warning: GPU layers failed")).hasSize(1);
                } finally {
                    for (int i = 0; i < n; i++) {
                        if (ds[i] != null) ds[i].close();
                        if (cs[i] != null) cs[i].close();
                    }
                }
            }
        }
    }

    @ParameterizedTest(name = "{0} -ngl {1}")
    @CsvSource({"stories260K-relu.powerinfer.gguf, 3", "stories260K-relu.powerinfer.gguf, 6", "stories260K-relu.gguf, 6"})
    void reluModelsIncludingNeuronMajorDownMatchTheDenseReference(String file, int ngl) throws Exception {
        JsonNode ref = JSON.readTree(Files.readString(TestData.file("sparse/reference.json")));
        ModelOptions o = ModelOptions.defaults().withKvCacheType(GGMLType.F32).withThreads(2).withContextLength(256)
                .withSparseMode(org.powerinfer4j.engine.sparse.SparseMode.OFF).withActivation(org.powerinfer4j.engine.model.FfnActivation.REGLU)
                .withBatchSize(3).withGpu(GpuOptions.layers(GpuMode.SIMULATED, ngl));
        try (Model m = Model.open(TestData.file("sparse/" + file), o)) {
            assertThat(m.gpuLayers()).isNotNull();
            assertThat(m.gpuLayers().deviceLayers()).isEqualTo(Math.min(ngl, m.config().layers()));
            for (JsonNode p : ref.get("prompts")) {
                int[] prompt = ints(p.get("prompt_ids")), expected = ints(p.get("dense_relu").get("ids"));
                try (org.powerinfer4j.engine.api.Session s = m.newSession()) {
                    int[] got = s.generate(prompt, org.powerinfer4j.engine.api.GenerationParams.defaults().withMaxTokens(expected.length)
                            .withSampling(org.powerinfer4j.engine.sampling.SamplingParams.GREEDY).withStopAtEndOfGeneration(false), null).generatedTokens();
                    assertThat(got).as("prompt %s", p.get("name").asText()).containsExactly(expected);
                }
            }
            assertThat(m.gpuLayers().failed()).isFalse();
        }
    }

    @Test
    void attentionBlocksOnTheDeviceUnderABudgetAndAfterAFailureKeepTheTokens() throws Exception {
        JsonNode ref = reference("reference/stories260K.llamacpp.json");
        int[] prompt = ints(ref.get("prompt_ids")), expected = java.util.Arrays.copyOf(ints(ref.get("generated_ids")), 32);
        try (Loaded m = Loaded.open("models/stories260K.gguf")) {
            List<String> notes = new ArrayList<>();
            // the whole footprint of two attention blocks (weights, KV, rotary tables, session buffers) and a little
            long two = org.powerinfer4j.engine.placement.DeviceFootprint.layers(m.config(), m.graph(), m.weights(), 0, 2, true, false, 256).totalBytes() + 100;
            try (GpuLayers g = GpuLayers.attention(GpuOptions.layers(GpuMode.SIMULATED, 0), m.config(), m.weights(), 256, two, notes::add)) {
                assertThat(g.deviceLayers()).isEqualTo(2);
                assertThat(g.firstLayer()).isEqualTo(m.config().layers());     // no whole layer moves
                assertThat(g.summary()).startsWith("GPU attention: 2 of 5 layers (blk.0-1)");
                assertThat(greedy(m, g, prompt, 32).tokens()).containsExactly(expected);
            }
            FaultyBackend faulty = new FaultyBackend(new SimulatedBackend(), Long.MAX_VALUE);
            try (GpuLayers g = GpuLayers.attention(GpuOptions.layers(GpuMode.SIMULATED, 0), m.config(), m.weights(), 256, -1, notes::add, () -> faulty)) {
                assertThat(g.deviceLayers()).isEqualTo(5);
                faulty.failDenseMatVecAt(4 * 5 * 12 + 2);
                assertThat(greedy(m, g, prompt, 32).tokens()).containsExactly(expected);
                assertThat(g.failed()).isTrue();
            }
        }
    }

    @Test
    void modelOpenWithNglRunsTheLayersOnTheDevice() throws Exception {
        ModelOptions o = ModelOptions.defaults().withThreads(2).withContextLength(128).withGpu(GpuOptions.layers(GpuMode.SIMULATED, 999));
        try (Model m = Model.open(TestData.file("models/stories260K.gguf"), o)) {
            assertThat(m.gpuLayers()).isNotNull();
            assertThat(m.placementSummary()).contains("GPU layers: 5 of 5 (blk.0-4) + output head on simulated");
        }
    }
}
