package org.powerinfer4j.engine.backend;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.powerinfer4j.bindings.cuda.Cuda;
import org.powerinfer4j.engine.TestData;
import org.powerinfer4j.engine.api.Model;
import org.powerinfer4j.engine.api.ModelOptions;
import org.powerinfer4j.engine.gpu.CudaBackend;
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
        assumeTrue(CudaBackend.isAvailable(), CudaBackend.unavailableReason());
        assumeTrue(Cuda.device(0).name().startsWith("cuda-emu"), "needs the emulator to play an old driver");
        String lib = System.getProperty("powerinfer4j.cuda", System.getenv("POWERINFER4J_CUDA"));
        MethodHandle setMaxPtx = Linker.nativeLinker().downcallHandle(
                SymbolLookup.libraryLookup(Path.of(lib), Arena.global()).find("cuemuSetMaxPtxVersion").orElseThrow(),
                FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
        int previous = (int) setMaxPtx.invokeExact(50); // a CUDA 10.0-era driver: PTX ISA up to 5.0
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
            int ignored = (int) setMaxPtx.invokeExact(previous);
        }
        // a current driver takes the committed PTX (its declared version is lowered as far as ptxas allows)
        try (CudaBackend b = CudaBackend.open(0)) {
            assertThat(b.name()).contains("cuda-emu");
        }
    }

    /**
     * Sessions and models give back every byte of device memory they took (a server opens and closes sessions all
     * day): the hybrid model with attention on the device, and a dense model with every layer and the head there.
     */
    @Test
    void modelsAndSessionsFreeAllDeviceMemory() throws Throwable {
        assumeTrue(CudaBackend.isAvailable(), CudaBackend.unavailableReason());
        assumeTrue(Cuda.device(0).name().startsWith("cuda-emu"), "needs the emulator's allocation count");
        String lib = System.getProperty("powerinfer4j.cuda", System.getenv("POWERINFER4J_CUDA"));
        MethodHandle inUse = Linker.nativeLinker().downcallHandle(
                SymbolLookup.libraryLookup(Path.of(lib), Arena.global()).find("cuemuDeviceBytesInUse").orElseThrow(),
                FunctionDescriptor.of(ValueLayout.JAVA_LONG));
        long before = (long) inUse.invokeExact();
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
                        assertThat((long) inUse.invokeExact()).as("device memory in use while generating").isGreaterThan(before);
                    }
                }
            }
            assertThat((long) inUse.invokeExact()).as("device memory after closing " + c.file()).isEqualTo(before);
        }
    }
}
