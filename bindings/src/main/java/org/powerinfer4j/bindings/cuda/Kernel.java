package org.powerinfer4j.bindings.cuda;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/** A kernel ({@code CUfunction}) of a loaded module. */
public final class Kernel {
    private final CudaModule module;
    private final String name;
    private final MemorySegment handle;

    Kernel(CudaModule module, String name, MemorySegment handle) {
        this.module = module;
        this.name = name;
        this.handle = handle;
    }

    public String name() {
        return name;
    }

    /** The {@code CUfunction}. */
    public MemorySegment handle() {
        return handle;
    }

    /**
     * Queues the kernel on {@code stream}. {@code args} are the kernel's parameters in order, converted by
     * {@link KernelArgs}: {@code Integer} → 32-bit int, {@code Float} → float, {@code Long} → 64-bit value (use it for
     * device pointers), {@link DeviceBuffer} → its device address, {@code null} → NULL pointer. The driver copies the
     * values during this call, so nothing needs to outlive it.
     */
    public void launch(Dim3 grid, Dim3 block, int sharedMemBytes, CudaStream stream, Object... args) {
        module.context().makeCurrent();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment params = KernelArgs.build(a, args);
            CudaException.check(cuda_h.cuLaunchKernel(handle, grid.x(), grid.y(), grid.z(), block.x(), block.y(), block.z(),
                    sharedMemBytes, stream.handle(), params, MemorySegment.NULL), "cuLaunchKernel(" + name + ")");
        }
    }

    @Override
    public String toString() {
        return "Kernel[" + name + "]";
    }
}
