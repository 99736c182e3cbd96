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

/** The typed layer against a real driver and GPU; skipped where {@link Cuda#available()} is false. */
@Tag("gpu")
class CudaGpuTest {
    private static CudaContext ctx;

    @BeforeAll
    static void open() {
        assumeTrue(Cuda.available(), Cuda.unavailableReason());
        ctx = Cuda.device(0).retainPrimaryContext();
    }

    @AfterAll
    static void close() {
        if (ctx != null) ctx.close();
    }

    @Test
    void deviceQueries() {
        CudaDevice d = ctx.device();
        System.out.printf("CUDA driver %d, %d device(s); device 0: %s, %d MiB, sm_%s, %d SMs%n", Cuda.driverVersion(), Cuda.deviceCount(),
                d.name(), d.totalMemory() >> 20, d.computeCapability().toString().replace(".", ""), d.multiprocessorCount());
        assertThat(d.name()).isNotBlank();
        assertThat(d.totalMemory()).isPositive();
        assertThat(d.computeCapability().major()).isGreaterThanOrEqualTo(7);
        assertThat(d.attribute(cuda_h.CU_DEVICE_ATTRIBUTE_WARP_SIZE)).isEqualTo(32);
        assertThat(d.attribute(cuda_h.CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY)).isEqualTo(1);
        CudaContext.MemoryInfo mi = ctx.memoryInfo();
        assertThat(mi.total()).isEqualTo(d.totalMemory());
        assertThat(mi.free()).isPositive().isLessThanOrEqualTo(mi.total());
        assertThat(Cuda.driverVersion()).as("the PTX is ISA 9.0 (CUDA 13): older drivers cannot JIT it").isGreaterThanOrEqualTo(13000);
    }

    @Test
    void copiesAndFillsRoundTrip() {
        int n = 1 << 16;
        try (Arena a = Arena.ofConfined(); DeviceBuffer buf = ctx.allocate(4L * n); DeviceBuffer other = ctx.allocate(4L * n);
             CudaStream s = ctx.createStream(); PinnedBuffer pin = ctx.allocatePinned(4L * n)) {
            MemorySegment src = a.allocate(4L * n), dst = a.allocate(4L * n);
            for (int i = 0; i < n; i++) src.setAtIndex(ValueLayout.JAVA_FLOAT, i, i * 0.5f);
            buf.copyFromHost(src, 0);                       // synchronous
            buf.copyToHost(0, dst);
            assertThat(dst.mismatch(src)).isEqualTo(-1);
            other.copyFromDevice(buf, 4, 0, 4L * (n - 1), s); // device to device, shifted by one float
            other.copyToHost(0, pin.segment(), s);          // async into pinned memory
            s.synchronize();
            for (int i = 0; i < n - 1; i++) assertThat(pin.segment().getAtIndex(ValueLayout.JAVA_FLOAT, i)).isEqualTo((i + 1) * 0.5f);
            buf.slice(4L * 10, 4L * 5).fill(Float.floatToRawIntBits(-3f), s);
            buf.slice(4L * 20, 8).fill((byte) 0x7f, s);
            buf.copyToHost(0, dst, s);
            s.synchronize();
            assertThat(dst.getAtIndex(ValueLayout.JAVA_FLOAT, 9)).isEqualTo(4.5f);
            for (int i = 10; i < 15; i++) assertThat(dst.getAtIndex(ValueLayout.JAVA_FLOAT, i)).isEqualTo(-3f);
            assertThat(dst.getAtIndex(ValueLayout.JAVA_INT, 20)).isEqualTo(0x7f7f7f7f);
            assertThat(dst.getAtIndex(ValueLayout.JAVA_FLOAT, 22)).isEqualTo(11f);
            buf.fill(0);
            buf.copyToHost(0, dst);
            assertThat(dst.getAtIndex(ValueLayout.JAVA_FLOAT, 12)).isZero();
            buf.fill((byte) 1);
            buf.copyToHost(0, dst);
            assertThat(dst.get(ValueLayout.JAVA_BYTE, 4L * n - 1)).isEqualTo((byte) 1);
            assertThatThrownBy(() -> buf.copyFromHost(src, 4)).isInstanceOf(IndexOutOfBoundsException.class);
        }
    }

    @Test
    void launchesAKernelWithEveryArgumentKindAndReadsMappedMemory() throws IOException {
        byte[] ptx;
        try (InputStream in = CudaGpuTest.class.getResourceAsStream("saxpy.ptx")) {
            ptx = in.readAllBytes();
        }
        int n = 1000;
        try (CudaModule m = ctx.loadModule(ptx); CudaStream s = ctx.createStream(); PinnedBuffer x = ctx.allocatePinned(4L * n);
             DeviceBuffer y = ctx.allocate(4L * n); DeviceBuffer tag = ctx.allocate(8); Arena a = Arena.ofConfined()) {
            MemorySegment host = a.allocate(4L * n);
            for (int i = 0; i < n; i++) {
                x.segment().setAtIndex(ValueLayout.JAVA_FLOAT, i, i);
                host.setAtIndex(ValueLayout.JAVA_FLOAT, i, 1f);
            }
            y.copyFromHost(host, 0, s);
            // 3 blocks of 128 threads for 1000 elements: the grid-stride loop covers the rest; x is read over the bus
            m.kernel("saxpy").launch(Dim3.of(3), Dim3.of(128), 0, s, n, 2f, x.devicePointer(), y, 0x0123456789abcdefL, tag);
            MemorySegment t = a.allocate(8);
            y.copyToHost(0, host, s);
            tag.copyToHost(0, t, s);
            s.synchronize();
            for (int i = 0; i < n; i++) assertThat(host.getAtIndex(ValueLayout.JAVA_FLOAT, i)).isEqualTo(2f * i + 1f);
            assertThat(t.get(ValueLayout.JAVA_LONG, 0)).isEqualTo(0x0123456789abcdefL);
            assertThatThrownBy(() -> m.kernel("no_such_kernel")).isInstanceOf(CudaException.class)
                    .satisfies(e -> assertThat(((CudaException) e).resultName()).isEqualTo("CUDA_ERROR_NOT_FOUND"));
        }
    }

    @Test
    void streamsOrderedByEventsAndTimed() {
        int n = 1 << 20;
        try (CudaStream s1 = ctx.createStream(); CudaStream s2 = ctx.createStream(); CudaEvent start = ctx.createEvent(true);
             CudaEvent done = ctx.createEvent(true); DeviceBuffer a = ctx.allocate(4L * n); DeviceBuffer b = ctx.allocate(4L * n);
             Arena arena = Arena.ofConfined()) {
            start.record(s1);
            a.fill(Float.floatToRawIntBits(7f), s1);
            done.record(s1);
            s2.waitEvent(done);                // s2 copies only after s1's fill
            b.copyFromDevice(a, 0, 0, 4L * n, s2);
            MemorySegment h = arena.allocate(4L * n);
            b.copyToHost(0, h, s2);
            s2.synchronize();
            assertThat(done.isComplete()).isTrue();
            assertThat(h.getAtIndex(ValueLayout.JAVA_FLOAT, n - 1)).isEqualTo(7f);
            assertThat(done.elapsedMillisSince(start)).isGreaterThanOrEqualTo(0f);
        }
    }

    @Test
    void registersHostMemoryAndNamesErrors() {
        try (Arena a = Arena.ofShared()) {
            MemorySegment mem = a.allocate(1 << 16, 4096);
            try (HostRegistration r = ctx.register(mem, false)) {
                assertThat(r.devicePointer()).isNotZero();
            }
        }
        assertThatThrownBy(() -> ctx.allocate(1L << 50)).isInstanceOf(CudaException.class)
                .satisfies(e -> assertThat(((CudaException) e).resultName()).isEqualTo("CUDA_ERROR_OUT_OF_MEMORY"));
        assertThat(CudaResult.name(100)).isEqualTo("CUDA_ERROR_NO_DEVICE"); // from cuGetErrorName
        assertThat(CudaResult.description(2)).isNotBlank();
    }
}
