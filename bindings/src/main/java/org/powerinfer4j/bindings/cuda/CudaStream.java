package org.powerinfer4j.bindings.cuda;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicBoolean;

/** A CUDA stream: work issued to it runs in order; different streams may overlap. */
public final class CudaStream implements AutoCloseable {
    private final CudaContext context;
    private final MemorySegment handle;
    private final boolean owned;
    private final AtomicBoolean closed = new AtomicBoolean();

    CudaStream(CudaContext context, MemorySegment handle, boolean owned) {
        this.context = context;
        this.handle = handle;
        this.owned = owned;
    }

    public CudaContext context() {
        return context;
    }

    /** The {@code CUstream} (NULL for the default stream). */
    public MemorySegment handle() {
        if (closed.get()) throw new IllegalStateException("stream is closed");
        return handle;
    }

    /** Blocks until all work issued so far has finished. */
    public void synchronize() {
        context.makeCurrent();
        CudaException.check(cuda_h.cuStreamSynchronize(handle()), "cuStreamSynchronize");
    }

    /** Makes later work on this stream wait for the event's last recorded work (asynchronously: the host does not block). */
    public void waitEvent(CudaEvent event) {
        context.makeCurrent();
        CudaException.check(cuda_h.cuStreamWaitEvent(handle(), event.handle(), 0), "cuStreamWaitEvent");
    }

    /** Records {@code event} at this point of the stream and returns it. */
    public CudaEvent record(CudaEvent event) {
        event.record(this);
        return event;
    }

    @Override
    public void close() {
        if (!owned || !closed.compareAndSet(false, true)) return;
        context.makeCurrent();
        CudaException.check(cuda_h.cuStreamDestroy(handle), "cuStreamDestroy_v2");
    }
}
