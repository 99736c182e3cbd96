package org.powerinfer4j.bindings.cuda;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicBoolean;

/** A CUDA event: a marker recorded into a stream, for cross-stream ordering, host waits and timing. */
public final class CudaEvent implements AutoCloseable {
    private final CudaContext context;
    private final MemorySegment handle;
    private final AtomicBoolean closed = new AtomicBoolean();

    CudaEvent(CudaContext context, MemorySegment handle) {
        this.context = context;
        this.handle = handle;
    }

    /** The {@code CUevent}. */
    public MemorySegment handle() {
        if (closed.get()) throw new IllegalStateException("event is closed");
        return handle;
    }

    /** Captures the work issued to {@code stream} so far. */
    public void record(CudaStream stream) {
        context.makeCurrent();
        CudaException.check(cuda_h.cuEventRecord(handle(), stream.handle()), "cuEventRecord");
    }

    /** Blocks the calling thread until the captured work has finished. */
    public void synchronize() {
        context.makeCurrent();
        CudaException.check(cuda_h.cuEventSynchronize(handle()), "cuEventSynchronize");
    }

    /** Whether the captured work has finished (true for an event never recorded). */
    public boolean isComplete() {
        context.makeCurrent();
        int r = cuda_h.cuEventQuery(handle());
        if (r == cuda_h.CUDA_ERROR_NOT_READY) return false;
        CudaException.check(r, "cuEventQuery");
        return true;
    }

    /** Milliseconds between {@code start} and this event (both recorded, completed, and created with timing). */
    public float elapsedMillisSince(CudaEvent start) {
        context.makeCurrent();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment ms = a.allocate(cuda_h.C_FLOAT);
            CudaException.check(cuda_h.cuEventElapsedTime(ms, start.handle(), handle()), "cuEventElapsedTime");
            return ms.get(cuda_h.C_FLOAT, 0);
        }
    }

    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) return;
        context.makeCurrent();
        CudaException.check(cuda_h.cuEventDestroy(handle), "cuEventDestroy_v2");
    }
}
