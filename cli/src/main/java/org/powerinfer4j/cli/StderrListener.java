package org.powerinfer4j.cli;

import java.io.PrintWriter;
import org.powerinfer4j.engine.api.ModelListener;
import org.powerinfer4j.engine.hub.TerminalProgress;

/**
 * The CLI's {@link ModelListener}: the library's notes and warnings as lines on stderr, and a long load step (the Q4
 * repack of a large model) as the progress bar on a terminal, or one summary line in a log, once it takes a second.
 */
final class StderrListener implements ModelListener {
    static final long SHOW_AFTER_NANOS = 1_000_000_000L;
    private final TerminalProgress bar;

    /** Writes to the {@code System.err} of now (tests swap it). */
    StderrListener() {
        bar = new TerminalProgress(new PrintWriter(System.err, true), isTerminal()).showingAfter(SHOW_AFTER_NANOS);
    }

    static boolean isTerminal() {
        return System.console() != null && System.console().isTerminal();
    }

    @Override
    public synchronized void message(String line) {
        bar.message(line);   // clears a drawn bar first
    }

    @Override
    public synchronized void loadStarted(String what, long totalBytes) {
        bar.start(what, 0, totalBytes);
    }

    @Override
    public synchronized void loadAdvanced(long doneBytes) {
        bar.advance(doneBytes);
    }

    @Override
    public synchronized void loadFinished() {
        bar.stop();
    }
}
