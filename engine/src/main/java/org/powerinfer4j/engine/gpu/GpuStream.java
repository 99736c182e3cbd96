package org.powerinfer4j.engine.gpu;

/**
 * An in-order queue of device work. Operations issued to one stream run one after another; operations on different
 * streams may run concurrently and are ordered only through {@link GpuEvent}s ({@link GpuBackend#record},
 * {@link GpuBackend#wait}). Every operation returns once queued: results are visible to the host only after
 * {@link GpuBackend#synchronize(GpuStream)} or a synchronised event recorded after them.
 */
public interface GpuStream extends AutoCloseable {
    @Override
    void close();
}
