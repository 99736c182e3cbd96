package org.powerinfer4j.engine.model;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.TestFactory;
import org.powerinfer4j.engine.TestData;
import org.powerinfer4j.engine.api.Model;
import org.powerinfer4j.engine.api.Session;
import org.powerinfer4j.engine.backend.GpuLayers;
import org.powerinfer4j.engine.backend.GpuMode;
import org.powerinfer4j.engine.backend.GpuOptions;
import org.powerinfer4j.engine.gpu.CudaBackend;
import org.powerinfer4j.engine.sparse.SparseMode;

/**
 * {@code -ngl} on every architecture: the device executor runs each layer's graph (the CPU's), so every {@code archs/}
 * model with all layers and the head on the device must match Hugging Face transformers' float64 pass as the CPU
 * does ({@link ArchitectureReferenceTest}: top-1 where the reference's top-2 gap exceeds 1e-3, top-5 log-probs within
 * 1e-3), token by token and as a prefill chunk (on CUDA a chunk's products are GEMMs: in split precision they keep
 * that parity; with F16 operands, the default, they are checked within {@link #F16_GEMM_TOLERANCE}). Mixture-of-experts layers run on the device too (the router there,
 * the choice of experts on the host by the CPU's rule, the chosen experts there), so the expert models (qwen3moe,
 * mixtral, gpt-oss) check that whole path, expert biases, shared-expert-free top-2 and gpt-oss's clamped SwiGLU
 * kernel included. ReLU models run dense here ({@code --sparse off}): {@code -ngl} moves dense layers.
 *
 * <p>Runs on the simulated device in every build and on CUDA (cuda-emu in CI, a real GPU where there is one).
 */
class ArchitectureOnDeviceTest {
    private static final String[] MODELS = {"qwen2", "qwen3", "qwen3moe", "mixtral", "gemma2", "gemma3", "phi3", "falcon-7b", "falcon-40b", "opt", "llama-relu", "gpt-oss"};

    @TestFactory
    List<DynamicTest> simulatedDeviceMatchesTransformersFloat64() throws IOException {
        return tests(GpuMode.SIMULATED);
    }

    @TestFactory
    @Tag("gpu")
    List<DynamicTest> cudaMatchesTransformersFloat64() throws IOException {
        Assumptions.assumeTrue(CudaBackend.isAvailable(), CudaBackend.unavailableReason());
        return tests(GpuMode.CUDA);
    }

    /**
     * The architectures to run: all, or the F32 files of a list in {@code -Dpowerinfer4j.archs=a,b,c} (the GPU
     * machine's bundle carries a few to stay within its size limit: {@code cuda-kernels/gpu-check.sh}).
     */
    private static String[] models() {
        String only = System.getProperty("powerinfer4j.archs", "");
        return only.isBlank() ? MODELS : only.split(",");
    }

    private static List<DynamicTest> tests(GpuMode mode) throws IOException {
        List<DynamicTest> tests = new ArrayList<>();
        ObjectMapper json = new ObjectMapper();
        boolean all = System.getProperty("powerinfer4j.archs", "").isBlank();
        for (String stem : models()) {
            JsonNode ref = json.readTree(TestData.file("archs/" + stem + ".ref.json").toFile());
            tests.add(DynamicTest.dynamicTest(stem + " F32 -ngl 99 " + mode, () -> check(stem, mode, ref, ref.path("files").path("f32").asText(), "hf_logits")));
            if (all && ref.path("files").has("q8_0") && !ref.path("files").path("q8_0").isNull())
                tests.add(DynamicTest.dynamicTest(stem + " Q8_0 -ngl 99 " + mode,
                        () -> check(stem, mode, ref, ref.path("files").path("q8_0").asText(), "hf_q8_0_weights_logits")));
        }
        return tests;
    }

    /**
     * F16 GEMM operands (the default, llama.cpp's cuBLAS path) round weights and inputs to 11 bits: the batched
     * chunk's top-5 log-probs stay within this of the float64 reference (measured 2e-3 to 9e-3 on the Q8_0 files, F32 files exact).
     */
    private static final double F16_GEMM_TOLERANCE = 2e-2;

    private static float[] withGemm(String precision, java.util.function.Supplier<float[]> run) {
        if (precision == null) return run.get();
        System.setProperty("powerinfer4j.gpu.gemm", precision);
        try {
            return run.get();
        } finally {
            System.clearProperty("powerinfer4j.gpu.gemm");
        }
    }

    private static double[] toDouble(float[] v) {
        double[] d = new double[v.length];
        for (int i = 0; i < v.length; i++) d[i] = v[i];
        return d;
    }

    private static void check(String stem, GpuMode mode, JsonNode ref, String file, String logitsKey) throws IOException {
        double worst = 0, f16Worst = 0;
        try (Model m = Model.open(TestData.file("archs/" + file), ArchitectureReferenceTest.options(stem).withSparseMode(SparseMode.OFF).withGpu(GpuOptions.layers(mode, 99)))) {
            GpuLayers g = m.gpuLayers();
            assertThat(g).as("%s: every layer on the device", stem).isNotNull();
            assertThat(g.deviceLayers()).isEqualTo(m.config().layers());
            assertThat(g.outputHeadOnDevice()).isTrue();
            for (JsonNode prompt : ref.path("prompts")) {
                int[] ids = ArchitectureReferenceTest.ints(prompt.path("prompt_ids"));
                JsonNode logits = prompt.path(logitsKey);
                try (Session s = m.newSession()) {
                    for (int p = 0; p < ids.length; p++)
                        worst = Math.max(worst, ArchitectureReferenceTest.compare(stem + " " + file + " pos " + p, s.evaluate(ids[p]),
                                ArchitectureReferenceTest.doubles(logits.get(p)), ArchitectureReferenceTest.TOLERANCE));
                }
                double[] last = ArchitectureReferenceTest.doubles(logits.get(ids.length - 1));
                try (Session s = m.newSession()) {
                    // on CUDA the chunk's products are GEMMs: in split precision they keep the float64 parity
                    float[] got = withGemm(mode == GpuMode.CUDA ? "split" : null, () -> s.evaluate(ids));
                    worst = Math.max(worst, ArchitectureReferenceTest.compare(stem + " " + file + " batched", got, last, ArchitectureReferenceTest.TOLERANCE));
                }
                if (mode == GpuMode.CUDA) {
                    try (Session s = m.newSession()) {
                        double[] want = ArchitectureReferenceTest.logSoftmax(last), got = ArchitectureReferenceTest.logSoftmax(toDouble(s.evaluate(ids)));
                        for (int id : ArchitectureReferenceTest.topK(want, 5)) f16Worst = Math.max(f16Worst, Math.abs(got[id] - want[id]));
                    }
                }
            }
            if (g != null) assertThat(g.failed()).as("the device never fell back to the CPU").isFalse();
        }
        assertThat(f16Worst).as("%s %s: batched chunk through F16 GEMMs, max |dlogprob| over the reference's top-5", stem, file).isLessThan(F16_GEMM_TOLERANCE);
        System.out.printf("%s %s -ngl 99 on %s: max |dlogprob| over reference top-5 = %.2e (F16 GEMMs %.2e)%n", stem, file, mode, worst, f16Worst);
    }
}
