package org.powerinfer4j.bindings.cuda;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;

/** A loaded module (PTX JIT-compiled by the driver, or a cubin/fatbin) and the kernels looked up in it. */
public final class CudaModule implements AutoCloseable {
    private final CudaContext context;
    private final MemorySegment handle;
    private final Map<String, Kernel> kernels = new ConcurrentHashMap<>();
    private final AtomicBoolean closed = new AtomicBoolean();

    private CudaModule(CudaContext context, MemorySegment handle) {
        this.context = context;
        this.handle = handle;
    }

    static CudaModule load(CudaContext context, byte[] image) {
        try (Arena a = Arena.ofConfined()) {
            // PTX is read as a NUL-terminated string; the extra byte is harmless for binary images
            MemorySegment img = a.allocate(image.length + 1L, 16);
            MemorySegment.copy(image, 0, img, java.lang.foreign.ValueLayout.JAVA_BYTE, 0, image.length);
            MemorySegment p = a.allocate(cuda_h.C_POINTER);
            CudaException.check(cuda_h.cuModuleLoadData(p, img), "cuModuleLoadData");
            return new CudaModule(context, p.get(cuda_h.C_POINTER, 0));
        }
    }

    public CudaContext context() {
        return context;
    }

    /** The {@code CUmodule}. */
    public MemorySegment handle() {
        if (closed.get()) throw new IllegalStateException("module is unloaded");
        return handle;
    }

    /** The kernel named {@code name} (its {@code extern "C"} name); {@link CudaException} CUDA_ERROR_NOT_FOUND if absent. */
    public Kernel kernel(String name) {
        return kernels.computeIfAbsent(name, n -> {
            context.makeCurrent();
            try (Arena a = Arena.ofConfined()) {
                MemorySegment p = a.allocate(cuda_h.C_POINTER);
                CudaException.check(cuda_h.cuModuleGetFunction(p, handle(), a.allocateFrom(n)), "cuModuleGetFunction(" + n + ")");
                return new Kernel(this, n, p.get(cuda_h.C_POINTER, 0));
            }
        });
    }

    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) return;
        context.makeCurrent();
        CudaException.check(cuda_h.cuModuleUnload(handle), "cuModuleUnload");
    }
}
