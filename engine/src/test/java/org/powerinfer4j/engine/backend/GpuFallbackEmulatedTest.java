package org.powerinfer4j.engine.backend;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.powerinfer4j.engine.TestData;
import org.powerinfer4j.engine.api.Model;
import org.powerinfer4j.engine.api.ModelOptions;
import org.powerinfer4j.engine.gpu.CudaBackend;
import org.powerinfer4j.engine.gpu.CudaEmu;
import org.powerinfer4j.engine.model.ModelException;
import org.powerinfer4j.engine.sparse.SparseMode;

/**
 * Device behaviour that needs cuda-emu to provoke or observe. A driver that cannot take the kernels (older than the PTX, as a CUDA 12 driver was for nvcc 13's PTX 9.0): --gpu
 * auto runs on the CPU after one note, --gpu cuda fails with one line. Needs cuda-emu, which can play an old driver.
 */
@Tag("gpu")
class GpuFallbackEmulatedTest {
    @Test
    void driverTooOldForThePtx() throws Throwable {
        assumeTrue(CudaEmu.loaded(), "needs the emulator to play an old driver");
        int previous = CudaEmu.setMaxPtxVersion(50); // a CUDA 10.0-era driver: PTX ISA up to 5.0
        try {
            List<String> notes = new ArrayList<>();
            assertThat(GpuMode.AUTO.open(notes::add)).isNull();
            assertThat(notes).singleElement().asString().startsWith("note: --gpu auto: the CUDA device is unusable")
                    .contains("CUDA_ERROR_UNSUPPORTED_PTX_VERSION").doesNotContain("\n");
            assertThatThrownBy(() -> GpuMode.CUDA.open(notes::add)).isInstanceOf(ModelException.class)
                    .hasMessageStartingWith("--gpu cuda: cannot use the device:");
            // the whole model: auto with a budget runs on the CPU and still answers
            ModelOptions o = ModelOptions.defaults().withSparseMode(SparseMode.PREDICT).withGpu(GpuOptions.budget(GpuMode.AUTO, 1L << 20));
            try (Model m = Model.open(TestData.file("sparse/stories260K-relu.powerinfer.gguf"), o)) {
                assertThat(m.hybridFeedForward()).isNull();
                assertThat(m.gpuLayers()).isNull();
            }
        } finally {
            CudaEmu.setMaxPtxVersion(previous);
        }
        // a current driver takes the committed PTX (its declared version is lowered as far as ptxas allows)
        try (CudaBackend b = CudaBackend.open(0)) {
            assertThat(b.name()).contains("cuda-emu");
        }
    }

    /**
     * A card too small for the placement: whatever allocation runs out (attention weights, hot rows, the workspace,
     * pinned staging, a session's KV cache), the model still loads, says so, and gives the predictor reference tokens.
     */
    @org.junit.jupiter.params.ParameterizedTest(name = "device with {0} KiB free")
    @org.junit.jupiter.params.provider.ValueSource(ints = {0, 200, 500})
    void smallDeviceStillGivesTheReferenceTokens(int freeKiB) throws Throwable {
        assumeTrue(CudaEmu.loaded(), "needs the emulator to shrink the device");
        com.fasterxml.jackson.databind.JsonNode ref = new com.fasterxml.jackson.databind.ObjectMapper()
                .readTree(java.nio.file.Files.readString(TestData.file("sparse/reference.json")));
        long previous = CudaEmu.setDeviceMemory(CudaEmu.deviceBytesInUse() + freeKiB * 1024L);
        java.util.List<String> notes = java.util.Collections.synchronizedList(new java.util.ArrayList<>());
        try {
            ModelOptions o = ModelOptions.defaults().withListener(notes::add).withKvCacheType(org.powerinfer4j.engine.tensor.GGMLType.F32).withThreads(2)
                    .withContextLength(128).withBatchSize(3).withSparseMode(SparseMode.PREDICT).withSparseThreshold(0f)
                    .withGpu(GpuOptions.budget(GpuMode.CUDA, 4L << 20));
            try (Model m = Model.open(TestData.file("sparse/stories260K-relu.powerinfer.gguf"), o)) {
                for (com.fasterxml.jackson.databind.JsonNode p : ref.get("prompts")) {
                    int[] prompt = ints(p.get("prompt_ids")), expected = ints(p.get("sparse_predictor_thr0").get("ids"));
                    try (org.powerinfer4j.engine.api.Session s = m.newSession()) {
                        int[] got = s.generate(prompt, org.powerinfer4j.engine.api.GenerationParams.defaults().withMaxTokens(expected.length)
                                .withSampling(org.powerinfer4j.engine.sampling.SamplingParams.GREEDY).withStopAtEndOfGeneration(false), null)
                                .generatedTokens();
                        assertThat(got).as("prompt %s on %d KiB", p.get("name").asText(), freeKiB).containsExactly(expected);
                    }
                }
            }
        } finally {
            CudaEmu.setDeviceMemory(previous);
        }
        String log = String.join("\n", notes);
        assertThat(log).doesNotContain("Exception").doesNotContain("\tat ");
        // each thing that did not fit is said once, however many sessions ran
        assertThat(log.lines().filter(l -> l.contains("KV cache")).count()).isLessThanOrEqualTo(1);
        assertThat(log.lines().filter(l -> l.startsWith("warning: hybrid FFN")).count()).isLessThanOrEqualTo(1);
        System.out.printf("device with %d KiB free: %s%n", freeKiB, log.strip().replace("\n", " | "));
    }

    private static int[] ints(com.fasterxml.jackson.databind.JsonNode a) {
        int[] r = new int[a.size()];
        for (int i = 0; i < r.length; i++) r[i] = a.get(i).asInt();
        return r;
    }

    /**
     * Sessions and models give back every byte of device memory they took (a server opens and closes sessions all
     * day): the hybrid model with attention on the device, and a dense model with every layer and the head there.
     */
    @Test
    void modelsAndSessionsFreeAllDeviceMemory() throws Throwable {
        assumeTrue(CudaEmu.loaded(), "needs the emulator's allocation count");
        long before = CudaEmu.deviceBytesInUse();
        record Case(String file, ModelOptions options) {}
        List<Case> cases = List.of(
                new Case("sparse/stories260K-relu.powerinfer.gguf",
                        ModelOptions.defaults().withSparseMode(SparseMode.PREDICT).withGpu(GpuOptions.budget(GpuMode.CUDA, 4L << 20))),
                new Case("models/stories260K.gguf", ModelOptions.defaults().withGpu(GpuOptions.layers(GpuMode.CUDA, 99))));
        for (Case c : cases) {
            try (Model m = Model.open(TestData.file(c.file()), c.options())) {
                assertThat(m.hybridFeedForward() != null || m.gpuLayers() != null).as(c.file()).isTrue();
                for (int i = 0; i < 2; i++) {
                    try (org.powerinfer4j.engine.api.Session s = m.newSession()) {
                        s.generate("Once upon a time", org.powerinfer4j.engine.api.GenerationParams.defaults().withMaxTokens(4), (id, t) -> true);
                        assertThat(CudaEmu.deviceBytesInUse()).as("device memory in use while generating").isGreaterThan(before);
                    }
                }
            }
            assertThat(CudaEmu.deviceBytesInUse()).as("device memory after closing " + c.file()).isEqualTo(before);
        }
    }
}
