package org.powerinfer4j.engine.api;

/**
 * Where a model's notes, warnings and load progress go (set with {@link ModelOptions#withListener}). The library
 * prints nothing itself: the default hands the notes to {@link System.Logger} ({@code org.powerinfer4j}), which the
 * application routes to its own logging; the CLI installs one that prints them on stderr.
 */
public interface ModelListener {
    /** One line: {@code "note: ..."} (how the model will run, e.g. a fallback to the CPU) or {@code "warning: ..."}. */
    void message(String line);

    /** A long load step begins: {@code what} (e.g. repacking), over {@code totalBytes} of weights. Called from the loading thread. */
    default void loadStarted(String what, long totalBytes) {}

    /** {@code doneBytes} of the step's total are done. */
    default void loadAdvanced(long doneBytes) {}

    /** The step ended (also when it failed). */
    default void loadFinished() {}

    /** Drops everything. */
    ModelListener SILENT = line -> {};

    /** The default: lines starting with {@code warning} at WARNING, the rest at INFO, progress at DEBUG. */
    static ModelListener systemLogger() {
        return SystemLoggerListener.INSTANCE;
    }
}
