package org.powerinfer4j.engine.api;

import java.lang.System.Logger.Level;

/** {@link ModelListener#systemLogger()}: notes through {@link System.Logger}, so they follow the application's logging. */
final class SystemLoggerListener implements ModelListener {
    static final SystemLoggerListener INSTANCE = new SystemLoggerListener();
    private static final System.Logger LOG = System.getLogger("org.powerinfer4j");

    private long startNanos;
    private String what = "";

    private SystemLoggerListener() {}

    @Override
    public void message(String line) {
        LOG.log(line.startsWith("warning") ? Level.WARNING : Level.INFO, line);
    }

    @Override
    public synchronized void loadStarted(String what, long totalBytes) {
        this.what = what;
        startNanos = System.nanoTime();
        LOG.log(Level.DEBUG, () -> what + ": " + totalBytes + " bytes");
    }

    @Override
    public synchronized void loadFinished() {
        long ms = (System.nanoTime() - startNanos) / 1_000_000;
        String w = what;
        LOG.log(Level.DEBUG, () -> w + ": done in " + ms + " ms");
    }
}
