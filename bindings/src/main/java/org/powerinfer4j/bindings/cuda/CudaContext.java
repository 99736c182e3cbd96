package org.powerinfer4j.bindings.cuda;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A retained primary context of one device, and the factory of everything allocated in it. CUDA contexts are current
 * per thread; every operation of the typed layer first makes its context current on the calling thread
 * ({@link #makeCurrent()}, a thread-local check when it already is), so objects can be used from any thread.
 */
public final class CudaContext implements AutoCloseable {
    private static final ThreadLocal<CudaContext> CURRENT = new ThreadLocal<>();

    private final CudaDevice device;
    private final MemorySegment handle;
    private final AtomicBoolean closed = new AtomicBoolean();

    CudaContext(CudaDevice device, MemorySegment handle) {
        this.device = device;
        this.handle = handle;
    }

    public CudaDevice device() {
        return device;
    }

    /** The {@code CUcontext}. */
    public MemorySegment handle() {
        return handle;
    }

    /** Binds this context to the calling thread (skipped when this thread's current context already is this one). */
    public void makeCurrent() {
        if (closed.get()) throw new IllegalStateException("context of " + device + " is closed");
        if (CURRENT.get() == this) return;
        CudaException.check(cuda_h.cuCtxSetCurrent(handle), "cuCtxSetCurrent");
        CURRENT.set(this);
    }

    /** Waits for all work in the context to finish. */
    public void synchronize() {
        makeCurrent();
        CudaException.check(cuda_h.cuCtxSynchronize(), "cuCtxSynchronize");
    }

    /** Free and total device memory, in bytes. */
    public record MemoryInfo(long free, long total) {}

    public MemoryInfo memoryInfo() {
        makeCurrent();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment f = a.allocate(cuda_h.size_t), t = a.allocate(cuda_h.size_t);
            CudaException.check(cuda_h.cuMemGetInfo(f, t), "cuMemGetInfo_v2");
            return new MemoryInfo(f.get(cuda_h.size_t, 0), t.get(cuda_h.size_t, 0));
        }
    }

    /** A stream that does not synchronise with the legacy default stream ({@code CU_STREAM_NON_BLOCKING}). */
    public CudaStream createStream() {
        makeCurrent();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment p = a.allocate(cuda_h.C_POINTER);
            CudaException.check(cuda_h.cuStreamCreate(p, cuda_h.CU_STREAM_NON_BLOCKING), "cuStreamCreate");
            return new CudaStream(this, p.get(cuda_h.C_POINTER, 0), true);
        }
    }

    /** The legacy default stream (handle NULL); closing it does nothing. */
    public CudaStream defaultStream() {
        return new CudaStream(this, MemorySegment.NULL, false);
    }

    /** An event; {@code timing} false creates it with {@code CU_EVENT_DISABLE_TIMING} (cheaper to record and wait on). */
    public CudaEvent createEvent(boolean timing) {
        makeCurrent();
        int flags = timing ? cuda_h.CU_EVENT_DEFAULT : cuda_h.CU_EVENT_DISABLE_TIMING;
        try (Arena a = Arena.ofConfined()) {
            MemorySegment p = a.allocate(cuda_h.C_POINTER);
            CudaException.check(cuda_h.cuEventCreate(p, flags), "cuEventCreate");
            return new CudaEvent(this, p.get(cuda_h.C_POINTER, 0));
        }
    }

    /** {@code bytes} of device memory (at least 1 byte is allocated; CUDA aligns allocations to 256 bytes). */
    public DeviceBuffer allocate(long bytes) {
        if (bytes < 0) throw new IllegalArgumentException("negative size " + bytes);
        makeCurrent();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment p = a.allocate(cuda_h.CUdeviceptr);
            CudaException.check(cuda_h.cuMemAlloc(p, Math.max(1, bytes)), "cuMemAlloc_v2(" + bytes + " bytes)");
            return new DeviceBuffer(this, p.get(cuda_h.CUdeviceptr, 0), bytes);
        }
    }

    /** Page-locked host memory mapped into the device address space ({@code CU_MEMHOSTALLOC_DEVICEMAP | PORTABLE}). */
    public PinnedBuffer allocatePinned(long bytes) {
        if (bytes <= 0) throw new IllegalArgumentException("pinned size must be positive: " + bytes);
        makeCurrent();
        return PinnedBuffer.allocate(this, bytes);
    }

    /** Page-locks and maps existing native memory (e.g. a mapped weight file) until the registration is closed. */
    public HostRegistration register(MemorySegment memory, boolean readOnly) {
        makeCurrent();
        return HostRegistration.register(this, memory, readOnly);
    }

    /** Loads a module from PTX text (JIT-compiled by the driver for this device) or a cubin/fatbin image. */
    public CudaModule loadModule(byte[] image) {
        makeCurrent();
        return CudaModule.load(this, image);
    }

    /** Releases the primary context (it is destroyed when its last retainer releases it). */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) return;
        if (CURRENT.get() == this) CURRENT.remove();
        CudaException.check(cuda_h.cuDevicePrimaryCtxRelease(device.handle()), "cuDevicePrimaryCtxRelease");
    }
}
