package org.powerinfer4j.engine.gpu;

/** A point in a stream's work, recorded by {@link GpuBackend#record}; completes when the stream reaches it. */
public interface GpuEvent extends AutoCloseable {
    /** Whether the stream has passed this point. */
    boolean isComplete();

    @Override
    void close();
}
