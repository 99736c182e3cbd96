package org.powerinfer4j.engine.backend;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import org.powerinfer4j.bindings.cuda.PinnedBuffer;
import org.powerinfer4j.engine.gpu.CudaBackend;
import org.powerinfer4j.engine.gpu.GpuBackend;

/**
 * Host memory for the per-token copies to and from the device. On CUDA it is page-locked, so that the asynchronous
 * copies really are asynchronous DMA transfers (with pageable memory the driver stages them through its own pinned
 * buffer and may return only after the copy). If pinning fails, ordinary native memory still gives correct results.
 */
final class HostStaging implements AutoCloseable {
    private final MemorySegment segment;
    private final boolean pinned;
    private final AutoCloseable owner;

    private HostStaging(MemorySegment segment, boolean pinned, AutoCloseable owner) {
        this.segment = segment;
        this.pinned = pinned;
        this.owner = owner;
    }

    static HostStaging allocate(GpuBackend gpu, long bytes) {
        long n = Math.max(1, bytes);
        if (gpu instanceof CudaBackend cuda) {
            try {
                PinnedBuffer p = cuda.context().allocatePinned(n);
                return new HostStaging(p.segment().asSlice(0, n), true, p);
            } catch (RuntimeException pinningFailed) {
                // fall through to pageable memory: slower copies, same results
            }
        }
        Arena a = Arena.ofShared();
        return new HostStaging(a.allocate(n, 256), false, a);
    }

    MemorySegment segment() {
        return segment;
    }

    boolean pinned() {
        return pinned;
    }

    @Override
    public void close() {
        try {
            owner.close();
        } catch (Exception e) {
            throw new IllegalStateException("freeing host staging memory failed: " + e.getMessage(), e);
        }
    }
}
