package org.powerinfer4j.engine.hub;

/** Receives a download's progress; all calls come from the downloading thread. */
public interface ProgressListener {
    ProgressListener NONE = new ProgressListener() {};

    /**
     * A transfer begins.
     *
     * @param name   what is being downloaded ({@code owner/repo/file})
     * @param offset bytes already present from an earlier attempt (resume), else 0
     * @param total  expected size in bytes, or -1 when unknown
     */
    default void start(String name, long offset, long total) {}

    /** {@code done} bytes of the file are now on disk (offset included). */
    default void advance(long done) {}

    /** The transfer ended, successfully or not (a retry then calls {@link #start} again). */
    default void stop() {}

    /** A one-line notice: resuming, restarting, retrying. */
    default void message(String text) {}
}
