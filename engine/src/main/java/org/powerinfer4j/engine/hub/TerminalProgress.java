package org.powerinfer4j.engine.hub;

import java.io.PrintWriter;
import java.util.Locale;
import java.util.function.LongSupplier;

/**
 * The progress bar of every long task (pull, model load, profile, train-predictors): one line redrawn in place
 * ({@code \r}) on a terminal: name, percentage, bar, amount done (bytes, or a count of {@link #counting units}),
 * rate and ETA, at most ten times a second. When not live (output is not a terminal) it draws nothing and only
 * passes on notices, so logs get no carriage-return noise; the caller prints a final summary, or
 * {@link #showingAfter} prints one for tasks that ran long.
 */
public final class TerminalProgress implements ProgressListener {
    private static final long REDRAW_NANOS = 100_000_000L;
    private static final int NAME_WIDTH = 28, BAR_WIDTH = 20;

    private final PrintWriter out;
    private final boolean live;
    private final LongSupplier nanoClock;
    private String name = "";
    private long offset, total = -1, startNanos, lastDraw, done;
    private boolean drawn, everDrawn;
    private String unit;            // null: bytes
    private long showAfterNanos;    // tasks shorter than this draw nothing

    public TerminalProgress(PrintWriter out, boolean live) {
        this(out, live, System::nanoTime);
    }

    TerminalProgress(PrintWriter out, boolean live, LongSupplier nanoClock) {
        this.out = out;
        this.live = live;
        this.nanoClock = nanoClock;
    }

    /** Amounts are counts of {@code unit} (e.g. "tok") instead of bytes. */
    public TerminalProgress counting(String unit) {
        this.unit = unit;
        return this;
    }

    /**
     * Draws only once a task has run for {@code nanos} (a fast load shows nothing); when not live, a task that ran
     * that long ends with one summary line (what, amount, time).
     */
    public TerminalProgress showingAfter(long nanos) {
        this.showAfterNanos = nanos;
        return this;
    }

    /** For callbacks of the form (done, total, elapsed): starts the task at the first call, stops it when done reaches total. */
    public void update(String name, long done, long total) {
        if (this.total < 0 || !name.equals(this.name)) start(name, 0, total);
        advance(done);
        if (done >= total) {
            stop();
            this.total = -1;
        }
    }

    @Override
    public void start(String name, long offset, long total) {
        this.name = name;
        this.offset = offset;
        this.done = offset;
        this.total = total;
        this.startNanos = nanoClock.getAsLong();
        this.lastDraw = startNanos - REDRAW_NANOS;
        this.everDrawn = false;
        advance(offset);
    }

    @Override
    public void advance(long done) {
        this.done = done;
        if (!live) return;
        long now = nanoClock.getAsLong();
        if (now - lastDraw < REDRAW_NANOS || now - startNanos < showAfterNanos) return;
        lastDraw = now;
        draw(now);
    }

    @Override
    public void stop() {
        long now = nanoClock.getAsLong();
        boolean ranLong = showAfterNanos > 0 && now - startNanos >= showAfterNanos;
        if (!live) {
            if (ranLong) {
                out.println(name + ": " + amount(done) + " in " + formatDuration(now - startNanos));
                out.flush();
            }
            return;
        }
        if (!everDrawn && !ranLong && showAfterNanos > 0) return;
        draw(now);
        out.println();
        out.flush();
        drawn = false;
    }

    @Override
    public void message(String text) {
        if (drawn) out.print("\r\033[K"); // clear the bar, print the notice, let the next advance redraw
        out.println(text);
        out.flush();
        drawn = false;
    }

    private void draw(long now) {
        out.print("\r" + render(name, offset, done, total, now - startNanos, unit) + "\033[K");
        out.flush();
        drawn = everDrawn = true;
    }

    /** The bar for {@code done} of {@code total} bytes, {@code offset} of them present before this transfer began. */
    static String render(String name, long offset, long done, long total, long elapsedNanos) {
        return render(name, offset, done, total, elapsedNanos, null);
    }

    /** The bar with amounts in {@code unit} (null: bytes, rate in MB/s). */
    static String render(String name, long offset, long done, long total, long elapsedNanos, String unit) {
        String shown = name.length() <= NAME_WIDTH ? name : "…" + name.substring(name.length() - NAME_WIDTH + 1);
        double seconds = elapsedNanos / 1e9;
        double rate = seconds > 0 ? (done - offset) / seconds : 0;
        StringBuilder sb = new StringBuilder(String.format(Locale.ROOT, "%-" + NAME_WIDTH + "s ", shown));
        if (total > 0) {
            double f = Math.min(1.0, (double) done / total);
            int filled = (int) Math.round(f * BAR_WIDTH);
            sb.append(String.format(Locale.ROOT, "%3d%% [", (int) (f * 100)))
                    .append("=".repeat(filled)).append(" ".repeat(BAR_WIDTH - filled)).append("] ")
                    .append(amount(done, unit)).append(" / ").append(amount(total, unit));
        } else {
            sb.append(amount(done, unit));
        }
        sb.append(unit == null ? String.format(Locale.ROOT, "  %.1f MB/s", rate / 1e6) : String.format(Locale.ROOT, "  %,.0f %s/s", rate, unit));
        if (total > 0 && rate > 0) sb.append("  ETA ").append(formatDuration((long) ((total - done) / rate * 1e9)));
        return sb.toString();
    }

    private String amount(long n) {
        return amount(n, unit);
    }

    private static String amount(long n, String unit) {
        return unit == null ? formatBytes(n) : String.format(Locale.ROOT, "%,d %s", n, unit);
    }

    /** {@code 950 B}, {@code 12.3 MB}, {@code 4.07 GB} (decimal units, as the hub shows sizes). */
    public static String formatBytes(long bytes) {
        if (bytes < 1000) return bytes + " B";
        String[] units = {"kB", "MB", "GB", "TB"};
        double v = bytes;
        int u = -1;
        while (v >= 1000 && u < units.length - 1) {
            v /= 1000;
            u++;
        }
        return String.format(Locale.ROOT, v >= 100 ? "%.0f %s" : v >= 10 ? "%.1f %s" : "%.2f %s", v, units[u]);
    }

    /** {@code 0:42}, {@code 12:05}, {@code 1:02:03}. */
    public static String formatDuration(long nanos) {
        long s = Math.max(0, Math.round(nanos / 1e9));
        return s >= 3600 ? String.format(Locale.ROOT, "%d:%02d:%02d", s / 3600, s / 60 % 60, s % 60)
                : String.format(Locale.ROOT, "%d:%02d", s / 60, s % 60);
    }
}
