package org.powerinfer4j.bindings.cuda;

import java.lang.foreign.MemorySegment;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A range of device memory: an allocation ({@link CudaContext#allocate}) or a view of part of one ({@link #slice}).
 * Closing an allocation frees it; closing a view does nothing. Host memory passed to copies must be native
 * (off-heap). Asynchronous copies return once queued: the host memory must stay valid and unmodified until the
 * stream has reached the copy (synchronise the stream or an event recorded after it); with pageable (not pinned)
 * memory the driver may stage the copy and return later.
 */
public final class DeviceBuffer implements AutoCloseable {
    private final CudaContext context;
    private final long address;
    private final long size;
    private final DeviceBuffer owner;   // the allocation this view belongs to; this for an allocation
    private final AtomicBoolean closed = new AtomicBoolean();

    /** An allocation, freed by {@link #close()}. */
    DeviceBuffer(CudaContext context, long address, long size) {
        this(context, address, size, null);
    }

    private DeviceBuffer(CudaContext context, long address, long size, DeviceBuffer owner) {
        this.context = context;
        this.address = address;
        this.size = size;
        this.owner = owner == null ? this : owner;
    }

    public CudaContext context() {
        return context;
    }

    /** The {@code CUdeviceptr} of the first byte. */
    public long address() {
        if (owner.closed.get()) throw new IllegalStateException("device buffer was freed");
        return address;
    }

    public long byteSize() {
        return size;
    }

    /** A view of {@code bytes} bytes from {@code offset}; valid while the allocation is open. */
    public DeviceBuffer slice(long offset, long bytes) {
        Objects.checkFromIndexSize(offset, bytes, size);
        return new DeviceBuffer(context, address() + offset, bytes, owner);
    }

    private static MemorySegment host(MemorySegment s) {
        if (!s.isNative()) throw new IllegalArgumentException("host memory for CUDA copies must be native (off-heap), not a heap segment");
        return s;
    }

    /** Queues a copy of all of {@code src} to this buffer at {@code dstOffset}. */
    public void copyFromHost(MemorySegment src, long dstOffset, CudaStream stream) {
        Objects.checkFromIndexSize(dstOffset, src.byteSize(), size);
        context.makeCurrent();
        CudaException.check(cuda_h.cuMemcpyHtoDAsync(address() + dstOffset, host(src), src.byteSize(), stream.handle()), "cuMemcpyHtoDAsync_v2");
    }

    /** Queues a copy of {@code dst.byteSize()} bytes from this buffer at {@code srcOffset} into {@code dst}. */
    public void copyToHost(long srcOffset, MemorySegment dst, CudaStream stream) {
        Objects.checkFromIndexSize(srcOffset, dst.byteSize(), size);
        context.makeCurrent();
        CudaException.check(cuda_h.cuMemcpyDtoHAsync(host(dst), address() + srcOffset, dst.byteSize(), stream.handle()), "cuMemcpyDtoHAsync_v2");
    }

    /**
     * Copies all of {@code src} to this buffer at {@code dstOffset} on the legacy NULL stream. Returns once
     * {@code src} may be reused (from pageable memory the device write can still be in flight); work on streams made
     * by {@link CudaContext#createStream()} (non-blocking) is not ordered after it: synchronise before relying on it
     * there.
     */
    public void copyFromHost(MemorySegment src, long dstOffset) {
        Objects.checkFromIndexSize(dstOffset, src.byteSize(), size);
        context.makeCurrent();
        CudaException.check(cuda_h.cuMemcpyHtoD(address() + dstOffset, host(src), src.byteSize()), "cuMemcpyHtoD_v2");
    }

    /**
     * Copies {@code dst.byteSize()} bytes from this buffer at {@code srcOffset} into {@code dst}; returns when done.
     * Runs on the legacy NULL stream, which does not wait for work on non-blocking streams: synchronise those first.
     */
    public void copyToHost(long srcOffset, MemorySegment dst) {
        Objects.checkFromIndexSize(srcOffset, dst.byteSize(), size);
        context.makeCurrent();
        CudaException.check(cuda_h.cuMemcpyDtoH(host(dst), address() + srcOffset, dst.byteSize()), "cuMemcpyDtoH_v2");
    }

    /** Queues a device-to-device copy of {@code bytes} bytes from {@code src} at {@code srcOffset} to this buffer. */
    public void copyFromDevice(DeviceBuffer src, long srcOffset, long dstOffset, long bytes, CudaStream stream) {
        Objects.checkFromIndexSize(srcOffset, bytes, src.size);
        Objects.checkFromIndexSize(dstOffset, bytes, size);
        context.makeCurrent();
        CudaException.check(cuda_h.cuMemcpyDtoDAsync(address() + dstOffset, src.address() + srcOffset, bytes, stream.handle()), "cuMemcpyDtoDAsync_v2");
    }

    /** Queues setting every byte to {@code value}. */
    public void fill(byte value, CudaStream stream) {
        context.makeCurrent();
        CudaException.check(cuda_h.cuMemsetD8Async(address(), value, size, stream.handle()), "cuMemsetD8Async");
    }

    /** Queues setting every 32-bit word to {@code value} (e.g. {@code Float.floatToRawIntBits(x)}); size must be a multiple of 4. */
    public void fill(int value, CudaStream stream) {
        requireWords();
        context.makeCurrent();
        CudaException.check(cuda_h.cuMemsetD32Async(address(), value, size / 4, stream.handle()), "cuMemsetD32Async");
    }

    /**
     * Sets every byte to {@code value} and waits for the device (cuMemsetD8 alone may return before it is done). Not
     * ordered after work still queued on non-blocking streams: synchronise those first.
     */
    public void fill(byte value) {
        context.makeCurrent();
        CudaException.check(cuda_h.cuMemsetD8(address(), value, size), "cuMemsetD8_v2");
        context.synchronize();
    }

    /** Sets every 32-bit word to {@code value} and waits for the device; the same ordering as {@link #fill(byte)}. */
    public void fill(int value) {
        requireWords();
        context.makeCurrent();
        CudaException.check(cuda_h.cuMemsetD32(address(), value, size / 4), "cuMemsetD32_v2");
        context.synchronize();
    }

    private void requireWords() {
        if (size % 4 != 0 || address % 4 != 0) throw new IllegalArgumentException("32-bit fill needs a 4-byte aligned range, not " + size + " bytes at " + address);
    }

    /** Frees the allocation (views: no effect). Work still queued on it must have finished. */
    @Override
    public void close() {
        if (owner != this || !closed.compareAndSet(false, true)) return;
        context.makeCurrent();
        CudaException.check(cuda_h.cuMemFree(address), "cuMemFree_v2");
    }

    @Override
    public String toString() {
        return "DeviceBuffer[0x" + Long.toHexString(address) + ", " + size + " bytes]";
    }
}
