package org.powerinfer4j.bindings.cuda;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * What cuda-emu (cuda-kernels/build-emulator.sh) promises to catch, so the GPU tests that pass on it mean something:
 * mistakes that would fault or race on a real GPU are reported by the emulator instead of passing silently. Runs
 * only when the driver loaded is the emulator (the gpu-emulated test execution).
 */
@Tag("gpu")
class CudaEmulatorTest {
    private static CudaContext ctx;

    @BeforeAll
    static void open() {
        assumeTrue(Cuda.available(), Cuda.unavailableReason());
        assumeTrue(Cuda.device(0).name().startsWith("cuda-emu"), "not the emulator");
        ctx = Cuda.device(0).retainPrimaryContext();
    }

    @AfterAll
    static void close() {
        if (ctx != null) ctx.close();
    }

    private static byte[] saxpy() throws IOException {
        try (InputStream in = CudaEmulatorTest.class.getResourceAsStream("saxpy.ptx")) {
            return in.readAllBytes();
        }
    }

    @Test
    void rejectsAKernelPointerTheDeviceCannotReach() throws IOException {
        int n = 64;
        try (CudaModule m = ctx.loadModule(saxpy()); CudaStream s = ctx.createStream(); DeviceBuffer y = ctx.allocate(4L * n);
             DeviceBuffer tag = ctx.allocate(8); Arena a = Arena.ofConfined()) {
            MemorySegment pageable = a.allocate(4L * n); // ordinary native memory: neither pinned nor registered
            assertThatThrownBy(() -> m.kernel("saxpy").launch(Dim3.of(1), Dim3.of(64), 0, s, n, 2f, pageable, y, 1L, tag))
                    .isInstanceOf(CudaException.class)
                    .satisfies(e -> assertThat(((CudaException) e).resultName()).isEqualTo("CUDA_ERROR_INVALID_VALUE"));
            // the same memory once registered is device-accessible, and the launch goes through
            try (HostRegistration r = ctx.register(pageable, false)) {
                pageable.fill((byte) 0);
                y.fill(0);
                m.kernel("saxpy").launch(Dim3.of(1), Dim3.of(64), 0, s, n, 2f, r.devicePointer(), y, 7L, tag);
                MemorySegment t = a.allocate(8);
                tag.copyToHost(0, t, s);
                s.synchronize();
                assertThat(t.get(ValueLayout.JAVA_LONG, 0)).isEqualTo(7L);
            }
        }
    }

    @Test
    void workOnAStreamRunsAsynchronouslyUntilSynchronised() throws IOException {
        // a stream is a host thread here: an event recorded behind a large fill is not complete at once, and is
        // after a synchronisation; so code that forgets to synchronise reads stale data, as on a GPU
        int n = 1 << 24;
        try (CudaStream s = ctx.createStream(); DeviceBuffer a = ctx.allocate(4L * n); CudaEvent e = ctx.createEvent(false)) {
            for (int i = 0; i < 8; i++) a.fill(i, s);
            e.record(s);
            boolean completeAtOnce = e.isComplete();
            s.synchronize();
            assertThat(e.isComplete()).isTrue();
            assertThat(completeAtOnce).as("event complete before the stream ran its work").isFalse();
        }
    }

    /** The emulator's own entry point that clears a provoked (sticky) launch failure. */
    private static void clearError() throws Throwable {
        String lib = System.getProperty("powerinfer4j.cuda", System.getenv("POWERINFER4J_CUDA"));
        java.lang.invoke.MethodHandle h = java.lang.foreign.Linker.nativeLinker().downcallHandle(
                java.lang.foreign.SymbolLookup.libraryLookup(java.nio.file.Path.of(lib), Arena.global()).find("cuemuClearError").orElseThrow(),
                java.lang.foreign.FunctionDescriptor.ofVoid());
        h.invokeExact();
    }

    private static byte[] checks() throws IOException {
        try (InputStream in = CudaEmulatorTest.class.getResourceAsStream("emulator_checks.ptx")) {
            return in.readAllBytes();
        }
    }

    /** A barrier half the block never reaches hangs a GPU; the emulator fails the launch and says why. */
    @Test
    void divergentBarrierFailsTheLaunch() throws Throwable {
        try (CudaModule m = ctx.loadModule(checks()); CudaStream s = ctx.createStream(); DeviceBuffer out = ctx.allocate(4L * 64)) {
            try {
                m.kernel("divergent_barrier").launch(Dim3.of(1), Dim3.of(64), 0, s, out);
                assertThatThrownBy(s::synchronize).isInstanceOf(CudaException.class)
                        .satisfies(e -> assertThat(((CudaException) e).resultName()).isEqualTo("CUDA_ERROR_LAUNCH_FAILED"));
            } finally {
                clearError(); // before the resources are freed: with the error set, every call fails (as with the driver)
            }
        }
    }

    /** x86 reads a misaligned float4 happily; a GPU faults, and so does the emulator's launch. */
    @Test
    void misalignedVectorLoadFailsTheLaunch() throws Throwable {
        try (CudaModule m = ctx.loadModule(checks()); CudaStream s = ctx.createStream(); DeviceBuffer in = ctx.allocate(64);
             DeviceBuffer out = ctx.allocate(4)) {
            m.kernel("vector_load").launch(Dim3.of(1), Dim3.of(32), 0, s, in.address(), out);   // aligned: fine
            s.synchronize();
            try {
                m.kernel("vector_load").launch(Dim3.of(1), Dim3.of(32), 0, s, in.address() + 4, out);
                assertThatThrownBy(s::synchronize).isInstanceOf(CudaException.class)
                        .satisfies(e -> assertThat(((CudaException) e).resultName()).isEqualTo("CUDA_ERROR_LAUNCH_FAILED"));
            } finally {
                clearError();
            }
        }
    }

    @Test
    void deviceMemoryIsLimitedAndAccounted() {
        CudaContext.MemoryInfo before = ctx.memoryInfo();
        try (DeviceBuffer b = ctx.allocate(64L << 20)) {
            assertThat(ctx.memoryInfo().free()).isEqualTo(before.free() - (64L << 20));
            assertThatThrownBy(() -> ctx.allocate(before.free())).isInstanceOf(CudaException.class)
                    .satisfies(e -> assertThat(((CudaException) e).resultName()).isEqualTo("CUDA_ERROR_OUT_OF_MEMORY"));
        }
        assertThat(ctx.memoryInfo().free()).isEqualTo(before.free());
    }
}
