package org.powerinfer4j.bindings.cuda;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Page-locked host memory allocated by {@code cuMemHostAlloc} with {@code CU_MEMHOSTALLOC_DEVICEMAP |
 * CU_MEMHOSTALLOC_PORTABLE}: the fastest source and target of asynchronous copies, and directly readable by kernels
 * through {@link #devicePointer()} (zero-copy over the bus). {@link #segment()} is bound to this buffer's lifetime:
 * after {@link #close()} touching it throws instead of reading freed memory.
 */
public final class PinnedBuffer implements AutoCloseable {
    private final CudaContext context;
    private final Arena scope;
    private final MemorySegment hostPointer;
    private final MemorySegment segment;
    private final long devicePointer;

    private PinnedBuffer(CudaContext context, Arena scope, MemorySegment hostPointer, MemorySegment segment, long devicePointer) {
        this.context = context;
        this.scope = scope;
        this.hostPointer = hostPointer;
        this.segment = segment;
        this.devicePointer = devicePointer;
    }

    static PinnedBuffer allocate(CudaContext context, long bytes) {
        MemorySegment p;
        long dptr;
        try (Arena a = Arena.ofConfined()) {
            MemorySegment pp = a.allocate(cuda_h.C_POINTER);
            CudaException.check(cuda_h.cuMemHostAlloc(pp, bytes, cuda_h.CU_MEMHOSTALLOC_DEVICEMAP | cuda_h.CU_MEMHOSTALLOC_PORTABLE),
                    "cuMemHostAlloc(" + bytes + " bytes)");
            p = pp.get(cuda_h.C_POINTER, 0);
            MemorySegment dp = a.allocate(cuda_h.CUdeviceptr);
            int r = cuda_h.cuMemHostGetDevicePointer(dp, p, 0);
            if (r != cuda_h.CUDA_SUCCESS) {
                cuda_h.cuMemFreeHost(p);
                throw new CudaException("cuMemHostGetDevicePointer_v2", r);
            }
            dptr = dp.get(cuda_h.CUdeviceptr, 0);
        }
        Arena scope = Arena.ofShared();
        return new PinnedBuffer(context, scope, p, p.reinterpret(bytes, scope, null), dptr);
    }

    /** The host memory, exactly {@link #byteSize()} bytes, valid until {@link #close()}. */
    public MemorySegment segment() {
        return segment;
    }

    /** Address of the same memory in the device's address space, for kernels. */
    public long devicePointer() {
        return devicePointer;
    }

    public long byteSize() {
        return segment.byteSize();
    }

    /** Frees the memory; no queued work may still use it. */
    @Override
    public void close() {
        if (!scope.scope().isAlive()) return;
        scope.close();
        context.makeCurrent();
        CudaException.check(cuda_h.cuMemFreeHost(hostPointer), "cuMemFreeHost");
    }
}
