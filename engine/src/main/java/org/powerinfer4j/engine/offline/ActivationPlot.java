package org.powerinfer4j.engine.offline;

import org.powerinfer4j.engine.placement.ActivationStats;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;

/**
 * A hand-written SVG of activation skew: left, each layer's firing frequency against neuron rank on log–log axes
 * (a power law is a straight line); right, the cumulative share of activations covered by the top k% of neurons
 * (the dashed diagonal is a perfectly uniform layer). One {@code <g class="layer">} per layer holds both of its
 * curves, in the colour of its legend entry. Files ending in {@code .html} get the SVG inside a page.
 */
public final class ActivationPlot {
    private ActivationPlot() {}

    private static final int W = 1000, PANEL_W = 400, PANEL_H = 300, TOP = 60, LEFT1 = 80, LEFT2 = 570;
    private static final int LEGEND_COLS = 8, LEGEND_ROW = 18;
    private static final String[] PALETTE = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
            "#7f7f7f", "#bcbd22", "#17becf"};

    public static void write(ActivationStats stats, Path out) throws IOException {
        String svg = svg(stats);
        String name = out.getFileName().toString().toLowerCase(Locale.ROOT);
        if (name.endsWith(".html") || name.endsWith(".htm"))
            svg = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" + esc(title(stats)) + "</title></head>\n<body>\n" + svg + "</body></html>\n";
        Files.writeString(out, svg, StandardCharsets.UTF_8);
    }

    /** Colour of a layer: a fixed palette for few layers, a blue→red ramp for many (neighbouring layers look alike). */
    static String color(int layer, int layers) {
        if (layers <= PALETTE.length) return PALETTE[layer];
        double t = layers == 1 ? 0 : (double) layer / (layers - 1);
        // perceptually ordered ramp: dark blue → teal → yellow → red
        double[][] stops = {{0.17, 0.11, 0.45}, {0.13, 0.55, 0.55}, {0.85, 0.75, 0.15}, {0.80, 0.15, 0.12}};
        double x = t * (stops.length - 1);
        int i = Math.min(stops.length - 2, (int) x);
        double f = x - i;
        int[] rgb = new int[3];
        for (int k = 0; k < 3; k++) rgb[k] = (int) Math.round(255 * (stops[i][k] + f * (stops[i + 1][k] - stops[i][k])));
        return String.format("#%02x%02x%02x", rgb[0], rgb[1], rgb[2]);
    }

    private static String title(ActivationStats s) {
        String m = s.modelName().isEmpty() ? "" : s.modelName() + ": ";
        String crit = ActivationStats.CRITERION_ABS_GT.equals(s.criterion()) ? ", fires when |h| > " + s.threshold() : ", fires when h ≠ 0";
        return m + "FFN activation frequency" + (s.tokens() > 0 ? String.format(Locale.ROOT, " over %,d tokens", s.tokens()) : "") + crit;
    }

    public static String svg(ActivationStats s) {
        int layers = s.layers();
        int legendRows = (layers + LEGEND_COLS - 1) / LEGEND_COLS;
        int legendTop = TOP + PANEL_H + 60;
        int H = legendTop + legendRows * LEGEND_ROW + 20;
        StringBuilder b = new StringBuilder();
        b.append(String.format(Locale.ROOT, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
                + "font-family=\"Helvetica, Arial, sans-serif\" font-size=\"12\">\n", W, H, W, H));
        b.append(String.format(Locale.ROOT, "<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n", W, H));
        b.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"28\" font-size=\"16\" text-anchor=\"middle\">%s</text>\n", W / 2, esc(title(s))));

        // left panel: frequency vs rank, log-log
        boolean freq = s.tokens() > 0;
        double yMax = 0, yMin = Double.MAX_VALUE;
        int nMax = 1;
        for (int l = 0; l < layers; l++) {
            nMax = Math.max(nMax, s.ff(l));
            for (long c : s.counts(l)) {
                if (c <= 0) continue;
                double v = freq ? (double) c / s.tokens() : c;
                yMax = Math.max(yMax, v);
                yMin = Math.min(yMin, v);
            }
        }
        if (yMax == 0) { yMax = 1; yMin = 0.1; }
        double ly0 = Math.floor(Math.log10(yMin)), ly1 = Math.ceil(Math.log10(yMax));
        if (ly1 - ly0 < 1) ly0 = ly1 - 1;
        double lx1 = Math.max(1, Math.ceil(Math.log10(nMax)));
        Axes left = new Axes(LEFT1, TOP, 0, lx1, ly0, ly1, true);
        Axes right = new Axes(LEFT2, TOP, 0, 100, 0, 100, false);
        panel(b, left, "neuron rank (most frequent first)", freq ? "firing frequency" : "firing count",
                "Firing frequency by rank (log–log)");
        panel(b, right, "top k% of neurons", "share of activations covered (%)", "Cumulative share of activations");
        b.append(String.format(Locale.ROOT, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#999\" stroke-dasharray=\"4 4\"/>\n",
                right.x(0), right.y(0), right.x(100), right.y(100)));

        for (int l = 0; l < layers; l++) {
            String col = color(l, layers);
            long[] sorted = s.sortedDescending(l);
            b.append(String.format(Locale.ROOT, "<g class=\"layer\" data-layer=\"%d\" stroke=\"%s\" fill=\"none\" stroke-width=\"1.5\">\n", l, col));
            b.append("<title>layer ").append(l).append("</title>\n");
            b.append("<path class=\"rank-frequency\" d=\"").append(rankPath(left, sorted, freq ? s.tokens() : 0)).append("\"/>\n");
            b.append("<path class=\"cumulative\" d=\"").append(cumulativePath(right, sorted)).append("\"/>\n");
            b.append("</g>\n");
        }

        b.append(String.format(Locale.ROOT, "<g class=\"legend\" transform=\"translate(%d,%d)\">\n", LEFT1, legendTop));
        int colW = (W - LEFT1 - 40) / LEGEND_COLS;
        for (int l = 0; l < layers; l++) {
            int x = (l % LEGEND_COLS) * colW, y = (l / LEGEND_COLS) * LEGEND_ROW;
            b.append(String.format(Locale.ROOT, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"3\"/>"
                    + "<text x=\"%d\" y=\"%d\">layer %d</text>\n", x, y, x + 22, y, color(l, layers), x + 28, y + 4, l));
        }
        b.append("</g>\n</svg>\n");
        return b.toString();
    }

    /** Maps data to pixels; log axes take log10 values as bounds. */
    private record Axes(double left, double top, double x0, double x1, double y0, double y1, boolean log) {
        double x(double v) { return left + (v - x0) / (x1 - x0) * PANEL_W; }
        double y(double v) { return top + PANEL_H - (v - y0) / (y1 - y0) * PANEL_H; }
    }

    private static void panel(StringBuilder b, Axes a, String xLabel, String yLabel, String title) {
        double l = a.left, t = a.top, r = l + PANEL_W, bot = t + PANEL_H;
        b.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"13\" text-anchor=\"middle\">%s</text>\n", l + PANEL_W / 2.0, t - 10, esc(title)));
        b.append(String.format(Locale.ROOT, "<g class=\"axes\" stroke=\"#333\" fill=\"none\"><rect x=\"%.1f\" y=\"%.1f\" width=\"%d\" height=\"%d\"/></g>\n", l, t, PANEL_W, PANEL_H));
        b.append("<g class=\"ticks\" stroke=\"#ccc\" stroke-width=\"0.5\">\n");
        StringBuilder labels = new StringBuilder("<g class=\"tick-labels\" fill=\"#333\">\n");
        if (a.log) {
            for (double e = a.x0; e <= a.x1 + 1e-9; e++) {
                grid(b, labels, a, a.x(e), true, pow10(e));
                if (e < a.x1) for (int m = 2; m <= 9; m++) minor(b, a.x(e + Math.log10(m)), bot, true);
            }
            for (double e = a.y0; e <= a.y1 + 1e-9; e++) {
                grid(b, labels, a, a.y(e), false, pow10(e));
                if (e < a.y1) for (int m = 2; m <= 9; m++) minor(b, l, a.y(e + Math.log10(m)), false);
            }
        } else {
            for (int v = 0; v <= 100; v += 20) {
                grid(b, labels, a, a.x(v), true, Integer.toString(v));
                grid(b, labels, a, a.y(v), false, Integer.toString(v));
            }
        }
        b.append("</g>\n").append(labels).append("</g>\n");
        b.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n", l + PANEL_W / 2.0, bot + 38, esc(xLabel)));
        b.append(String.format(Locale.ROOT, "<text transform=\"translate(%.1f,%.1f) rotate(-90)\" text-anchor=\"middle\">%s</text>\n", l - 55, t + PANEL_H / 2.0, esc(yLabel)));
    }

    private static void grid(StringBuilder lines, StringBuilder labels, Axes a, double pos, boolean vertical, String label) {
        double l = a.left, t = a.top, r = l + PANEL_W, bot = t + PANEL_H;
        if (vertical) {
            lines.append(String.format(Locale.ROOT, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\" stroke-width=\"1\"/>\n",
                    pos, t, pos, bot, pos, bot, pos, bot + 5));
            labels.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n", pos, bot + 18, label));
        } else {
            lines.append(String.format(Locale.ROOT, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\" stroke-width=\"1\"/>\n",
                    l, pos, r, pos, l - 5, pos, l, pos));
            labels.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", l - 8, pos + 4, label));
        }
    }

    private static void minor(StringBuilder b, double x, double y, boolean vertical) {
        if (vertical) b.append(String.format(Locale.ROOT, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\" stroke-width=\"0.8\"/>\n", x, y, x, y + 3));
        else b.append(String.format(Locale.ROOT, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\" stroke-width=\"0.8\"/>\n", x - 3, y, x, y));
    }

    private static String pow10(double e) {
        int k = (int) Math.round(e);
        if (k >= 0 && k <= 4) return Long.toString((long) Math.pow(10, k));
        if (k < 0 && k >= -3) return new java.math.BigDecimal(Math.pow(10, k)).round(new java.math.MathContext(1)).toPlainString();
        return "1e" + k;
    }

    /** Rank-frequency curve; ranks sampled log-uniformly (≤ ~400 points), zero counts end the line (log 0 = −∞). */
    private static String rankPath(Axes a, long[] sorted, long tokens) {
        StringBuilder p = new StringBuilder();
        int n = sorted.length, last = -1;
        double step = Math.max(1e-9, Math.log10(Math.max(n, 2)) / 400);
        for (double lr = 0; ; lr += step) {
            int rank = Math.min(n, (int) Math.round(Math.pow(10, lr)));
            if (rank != last) {
                last = rank;
                long c = sorted[rank - 1];
                if (c <= 0) break;
                double v = tokens > 0 ? (double) c / tokens : c;
                p.append(p.isEmpty() ? "M" : " L").append(String.format(Locale.ROOT, "%.1f %.1f", a.x(Math.log10(rank)), a.y(Math.log10(v))));
            }
            if (rank >= n) break;
        }
        return p.isEmpty() ? "M0 0" : p.toString();
    }

    /** Cumulative share (%) against the fraction of neurons (%), starting at (0, 0); ≤ ~400 points. */
    private static String cumulativePath(Axes a, long[] sorted) {
        long total = 0;
        for (long c : sorted) total += c;
        StringBuilder p = new StringBuilder(String.format(Locale.ROOT, "M%.1f %.1f", a.x(0), a.y(0)));
        int n = sorted.length, every = Math.max(1, n / 400);
        long sum = 0;
        for (int i = 0; i < n; i++) {
            sum += sorted[i];
            if ((i + 1) % every == 0 || i == n - 1)
                p.append(String.format(Locale.ROOT, " L%.1f %.1f", a.x(100.0 * (i + 1) / n), a.y(total == 0 ? 0 : 100.0 * sum / total)));
        }
        return p.toString();
    }

    static String esc(String s) {
        StringBuilder b = new StringBuilder(s.length());
        for (char c : s.toCharArray()) {
            switch (c) {
                case '<' -> b.append("&lt;");
                case '>' -> b.append("&gt;");
                case '&' -> b.append("&amp;");
                case '"' -> b.append("&quot;");
                default -> { if (c >= 0x20 || c == '\t' || c == '\n') b.append(c); }
            }
        }
        return b.toString();
    }
}
