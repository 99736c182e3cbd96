package org.powerinfer4j.engine.backend;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.powerinfer4j.engine.TestData;
import org.powerinfer4j.engine.gguf.GGUFFile;
import org.powerinfer4j.engine.gpu.CudaBackend;
import org.powerinfer4j.engine.gpu.GpuBackend;
import org.powerinfer4j.engine.gpu.SimulatedBackend;
import org.powerinfer4j.engine.model.LayerOffload;
import org.powerinfer4j.engine.model.ModelConfig;
import org.powerinfer4j.engine.model.ModelWeights;

/**
 * Device prefill: a prompt chunk runs through the device layers as one pass per layer over all its tokens (GEMMs
 * through cuBLAS on CUDA) instead of token by token. On the simulated device, whose batch operators are its
 * one-token ones, the logits must be those of the token-by-token path bit for bit (which catches any slip in the
 * batch's buffers, KV staging or last-row bookkeeping); on CUDA (cuda-emu in CI) the greedy tokens must be
 * llama.cpp's and the logits the CPU's within the F16 rounding of the GEMM operands.
 */
class DevicePrefillTest {
    private static final int CTX = 256, CHUNK = 16;

    private record Run(int[] tokens, float[] firstLogits) {}

    /** llama.cpp's greedy continuation of stories260K, split into a 40-token prompt and the tokens that follow it. */
    private record Case(int[] prompt, int[] expected) {
        static Case of(String reference, int steps) throws Exception {
            JsonNode r = new ObjectMapper().readTree(Files.readString(TestData.file(reference))).get("results").get(0);
            int[] p = ints(r.get("prompt_ids")), g = ints(r.get("generated_ids"));
            int take = 40 - p.length;
            int[] prompt = Arrays.copyOf(p, 40);
            System.arraycopy(g, 0, prompt, p.length, take);
            return new Case(prompt, Arrays.copyOfRange(g, take, take + steps));
        }
    }

    private static int[] ints(JsonNode n) {
        int[] r = new int[n.size()];
        for (int i = 0; i < r.length; i++) r[i] = n.get(i).asInt();
        return r;
    }

    private static Run greedy(ModelConfig c, ModelWeights w, LayerOffload offload, int[] prompt, int steps) {
        DeviceRuns.Run r = DeviceRuns.greedy(c, w, offload, prompt, steps, CHUNK);   // chunks of 16, 16 and 8 tokens
        return new Run(r.tokens(), r.firstLogits());
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource({"models/stories260K.gguf, reference/stories260K.llamacpp.json",
            "models/quantized/stories260K-q4_0.gguf, reference/stories260K-q4_0.llamacpp.json",
            "models/quantized/stories260K-f16.gguf, reference/stories260K-f16.llamacpp.json"})
    void batchedPrefillOnTheSimulatedDeviceIsTheTokenByTokenPathBitForBit(String model, String reference) throws Exception {
        Case k = Case.of(reference, 16);
        try (GGUFFile f = GGUFFile.open(TestData.file(model))) {
            ModelConfig c = ModelConfig.fromGGUF(f);
            ModelWeights w = ModelWeights.load(f, c);
            List<String> notes = new ArrayList<>();
            Run one, batched;
            try (GpuLayers g = GpuLayers.create(GpuOptions.layers(GpuMode.SIMULATED, 99), c, w, CTX, 1, notes::add)) {
                one = greedy(c, w, g, k.prompt(), 16);
            }
            try (GpuLayers g = GpuLayers.create(GpuOptions.layers(GpuMode.SIMULATED, 99), c, w, CTX, CHUNK, notes::add)) {
                assertThat(g.outputHeadOnDevice()).isTrue();
                batched = greedy(c, w, g, k.prompt(), 16);
                assertThat(g.failed()).as("notes %s", notes).isFalse();
            }
            assertThat(batched.firstLogits()).as("logits after the prompt").containsExactly(one.firstLogits());
            assertThat(batched.tokens()).as("llama.cpp's greedy tokens").containsExactly(k.expected());
            assertThat(one.tokens()).containsExactly(k.expected());
        }
    }

    /** PowerInfer's hybrid placement keeps attention on the device; its blocks take the chunk in one pass too. */
    @Test
    void batchedAttentionBlocksAreTheTokenByTokenPathBitForBit() throws Exception {
        Case k = Case.of("reference/stories260K.llamacpp.json", 16);
        try (GGUFFile f = GGUFFile.open(TestData.file("models/stories260K.gguf")); GpuBackend sim = new SimulatedBackend()) {
            ModelConfig c = ModelConfig.fromGGUF(f);
            ModelWeights w = ModelWeights.load(f, c);
            List<String> notes = new ArrayList<>();
            Run one, batched;
            try (GpuLayers g = GpuLayers.attention(GpuOptions.layers(GpuMode.SIMULATED, 0), c, w, CTX, 1, -1, notes::add, sim)) {
                one = greedy(c, w, g, k.prompt(), 16);
            }
            try (GpuLayers g = GpuLayers.attention(GpuOptions.layers(GpuMode.SIMULATED, 0), c, w, CTX, CHUNK, -1, notes::add, sim)) {
                assertThat(g.deviceLayers()).isEqualTo(c.layers());
                batched = greedy(c, w, g, k.prompt(), 16);
            }
            assertThat(batched.firstLogits()).containsExactly(one.firstLogits());
            assertThat(batched.tokens()).containsExactly(k.expected());
        }
    }

    /** A launch failing inside a batched chunk: the CPU redoes the chunk from its saved residuals, same tokens. */
    @Test
    void aFailureInsideABatchedChunkHandsOverToTheCpuWithTheSameTokens() throws Exception {
        Case k = Case.of("reference/stories260K.llamacpp.json", 16);
        try (GGUFFile f = GGUFFile.open(TestData.file("models/stories260K.gguf"))) {
            ModelConfig c = ModelConfig.fromGGUF(f);
            ModelWeights w = ModelWeights.load(f, c);
            List<String> notes = new ArrayList<>();
            FaultyBackend faulty = new FaultyBackend(new SimulatedBackend(), Long.MAX_VALUE);
            try (GpuLayers g = GpuLayers.create(GpuOptions.layers(GpuMode.SIMULATED, 6), c, w, CTX, CHUNK, notes::add, () -> faulty)) {
                faulty.failDenseMatVecAt(7 * CHUNK * 3 + 5);   // 7 products per token and layer: in the first chunk's fourth layer
                assertThat(greedy(c, w, g, k.prompt(), 16).tokens()).containsExactly(k.expected());
                assertThat(g.failed()).isTrue();
                assertThat(notes).filteredOn(n -> n.startsWith("warning: GPU layers failed")).hasSize(1);
            }
        }
    }

    /**
     * Through cuBLAS (the emulator's GemmEx in CI): F32 weights as a float GEMM, F16 in place, Q8_0/Q4_0 and the
     * K-quants dequantized to F16. The logits after the prompt differ from the CPU's by the F16 rounding of weights
     * and inputs (2⁻¹¹ each, through every layer's products): measured 0.5–1.5e-3 of the largest logit (2.2 on
     * rand-k, 14 on stories260K), 4e-3 allowed; a wrong dequantization is off by the logits' own size.
     */
    @Test
    @Tag("gpu")
    void onCudaThePromptGoesThroughGemmsWithTheCpusTokens() throws Exception {
        Assumptions.assumeTrue(CudaBackend.isAvailable(), CudaBackend.unavailableReason());
        String[][] cases = {{"models/stories260K.gguf", "reference/stories260K.llamacpp.json"},
                {"models/quantized/stories260K-q4_0.gguf", "reference/stories260K-q4_0.llamacpp.json"},
                {"models/quantized/stories260K-q8_0.gguf", "reference/stories260K-q8_0.llamacpp.json"},
                {"models/quantized/stories260K-f16.gguf", "reference/stories260K-f16.llamacpp.json"},
                {"models/quantized/rand-k-q4_k.gguf", null}, {"models/quantized/rand-k-q5_k.gguf", null}, {"models/quantized/rand-k-q6_k.gguf", null}};
        Case stories = Case.of("reference/stories260K.llamacpp.json", 16);
        for (String[] mr : cases) {
            Case k = mr[1] != null ? Case.of(mr[1], 16) : stories;   // rand-k shares stories260K's vocabulary
            try (GGUFFile f = GGUFFile.open(TestData.file(mr[0]))) {
                ModelConfig c = ModelConfig.fromGGUF(f);
                ModelWeights w = ModelWeights.load(f, c);
                Run cpu = greedy(c, w, null, k.prompt(), 16);
                List<String> notes = new ArrayList<>();
                try (GpuLayers g = GpuLayers.create(GpuOptions.layers(GpuMode.CUDA, 99), c, w, CTX, CHUNK, notes::add)) {
                    assertThat(g).as("notes: %s", notes).isNotNull();
                    assertThat(g.deviceLayers()).as(mr[0]).isEqualTo(c.layers());
                    Run dev = greedy(c, w, g, k.prompt(), 16);
                    assertThat(g.failed()).as("notes %s", notes).isFalse();
                    assertThat(dev.tokens()).as(mr[0]).containsExactly(cpu.tokens());
                    if (mr[1] != null) assertThat(dev.tokens()).as("llama.cpp's greedy tokens").containsExactly(k.expected());
                    double max = 0, mag = 0;
                    for (int i = 0; i < cpu.firstLogits().length; i++) {
                        max = Math.max(max, Math.abs(dev.firstLogits()[i] - cpu.firstLogits()[i]));
                        mag = Math.max(mag, Math.abs(cpu.firstLogits()[i]));
                    }
                    System.out.printf("%s: max |logit difference| %.3g (largest logit %.3g)%n", mr[0], max, mag);
                    assertThat(max).as(mr[0]).isLessThan(4e-3 * Math.max(1, mag));
                }
            }
        }
    }
}
