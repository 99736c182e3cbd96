package org.powerinfer4j.bindings.cuda;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Existing native memory page-locked and mapped for the device by {@code cuMemHostRegister}
 * ({@code CU_MEMHOSTREGISTER_DEVICEMAP | PORTABLE}, optionally {@code READ_ONLY}); closing unregisters it.
 */
public final class HostRegistration implements AutoCloseable {
    private final CudaContext context;
    private final MemorySegment memory;
    private final long devicePointer;
    private final AtomicBoolean closed = new AtomicBoolean();

    private HostRegistration(CudaContext context, MemorySegment memory, long devicePointer) {
        this.context = context;
        this.memory = memory;
        this.devicePointer = devicePointer;
    }

    static HostRegistration register(CudaContext context, MemorySegment memory, boolean readOnly) {
        if (!memory.isNative() || memory.byteSize() == 0) throw new IllegalArgumentException("only non-empty native memory can be registered");
        int flags = cuda_h.CU_MEMHOSTREGISTER_DEVICEMAP | cuda_h.CU_MEMHOSTREGISTER_PORTABLE | (readOnly ? cuda_h.CU_MEMHOSTREGISTER_READ_ONLY : 0);
        CudaException.check(cuda_h.cuMemHostRegister(memory, memory.byteSize(), flags), "cuMemHostRegister_v2");
        try (Arena a = Arena.ofConfined()) {
            MemorySegment dp = a.allocate(cuda_h.CUdeviceptr);
            int r = cuda_h.cuMemHostGetDevicePointer(dp, memory, 0);
            if (r != cuda_h.CUDA_SUCCESS) {
                cuda_h.cuMemHostUnregister(memory);
                throw new CudaException("cuMemHostGetDevicePointer_v2", r);
            }
            return new HostRegistration(context, memory, dp.get(cuda_h.CUdeviceptr, 0));
        }
    }

    public MemorySegment memory() {
        return memory;
    }

    /** Address of the registered memory in the device's address space. */
    public long devicePointer() {
        return devicePointer;
    }

    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) return;
        context.makeCurrent();
        CudaException.check(cuda_h.cuMemHostUnregister(memory), "cuMemHostUnregister");
    }
}
