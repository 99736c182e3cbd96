package org.powerinfer4j.engine.offline;

import java.io.PrintStream;
import java.util.Locale;
import org.powerinfer4j.engine.hub.TerminalProgress;

/** A one-line progress bar for stderr: done/total, rate, ETA; redrawn at most every 100 ms. */
public final class ProgressBar {
    private final PrintStream out;
    private final String label;
    private final String unit;
    private long lastDraw;

    public ProgressBar(PrintStream out, String label, String unit) {
        this.out = out;
        this.label = label;
        this.unit = unit;
    }

    public void update(long done, long total, long elapsedNanos) {
        long now = System.nanoTime();
        if (done < total && now - lastDraw < 100_000_000L) return;
        lastDraw = now;
        out.print('\r' + line(label, unit, done, total, elapsedNanos));
        if (done >= total) out.println();
        out.flush();
    }

    static String line(String label, String unit, long done, long total, long elapsedNanos) {
        double frac = total <= 0 ? 1 : Math.min(1, (double) done / total);
        int width = 30, fill = (int) Math.round(frac * width);
        double secs = elapsedNanos / 1e9;
        double rate = secs > 0 ? done / secs : 0;
        String eta = rate > 0 ? TerminalProgress.formatDuration((long) ((total - done) / rate * 1e9)) : "--:--";
        return String.format(Locale.ROOT, "%s [%s%s] %3.0f%% %,d/%,d %s  %,.0f %s/s  ETA %s  ", label, "#".repeat(fill),
                " ".repeat(width - fill), 100 * frac, done, total, unit, rate, unit, eta);
    }
}
