package org.powerinfer4j.engine.sparse;

import java.util.concurrent.atomic.AtomicLongArray;

/**
 * Per-layer activation counters, summed over tokens: neurons predicted active, neurons truly active
 * (activation ≠ 0 when computed densely — known only in {@code exact} mode or when verification is on), and
 * the overlap. Recall = both / truly active; precision = both / predicted.
 */
public final class SparsityStats {
    private final int layers, neurons;
    private final AtomicLongArray tokens, predicted, active, both;
    private volatile boolean verified = true;

    public SparsityStats(int layers, int neurons) {
        this.layers = layers;
        this.neurons = neurons;
        tokens = new AtomicLongArray(layers);
        predicted = new AtomicLongArray(layers);
        active = new AtomicLongArray(layers);
        both = new AtomicLongArray(layers);
    }

    /** Records one token of one layer; pass {@code trulyActive = -1} when it was not measured. */
    public void record(int layer, int predictedActive, int trulyActive, int overlap) {
        tokens.incrementAndGet(layer);
        predicted.addAndGet(layer, predictedActive);
        if (trulyActive < 0) verified = false;
        else {
            active.addAndGet(layer, trulyActive);
            both.addAndGet(layer, overlap);
        }
    }

    /** Records {@code tokens} tokens of a dense FFN (every neuron computed) whose activations are h[b·ff + r]: counts those that fired. */
    public void recordDense(int layer, float[] h, int tokens, int ff) {
        for (int b = 0; b < tokens; b++) {
            int fired = 0;
            for (int r = 0; r < ff; r++) if (h[b * ff + r] != 0f) fired++;
            record(layer, ff, fired, fired);
        }
    }

    public int layers() { return layers; }
    public int neurons() { return neurons; }
    public long tokens(int layer) { return tokens.get(layer); }
    /** True when every record measured the true activations (recall/precision are meaningful). */
    public boolean verified() { return verified; }

    public double predictedFraction(int layer) {
        long t = tokens.get(layer);
        return t == 0 ? 0 : predicted.get(layer) / ((double) t * neurons);
    }

    public double activeFraction(int layer) {
        long t = tokens.get(layer);
        return t == 0 || !verified ? Double.NaN : active.get(layer) / ((double) t * neurons);
    }

    public double recall(int layer) {
        return !verified || active.get(layer) == 0 ? Double.NaN : both.get(layer) / (double) active.get(layer);
    }

    public double precision(int layer) {
        return !verified || predicted.get(layer) == 0 ? Double.NaN : both.get(layer) / (double) predicted.get(layer);
    }

    /** Mean fraction of neurons computed per token over all layers. */
    public double meanPredictedFraction() {
        double s = 0;
        for (int l = 0; l < layers; l++) s += predictedFraction(l);
        return layers == 0 ? 0 : s / layers;
    }

    public void reset() {
        for (int l = 0; l < layers; l++) {
            tokens.set(l, 0);
            predicted.set(l, 0);
            active.set(l, 0);
            both.set(l, 0);
        }
        verified = true;
    }

    /** A table, one line per layer. */
    public String format() {
        StringBuilder sb = new StringBuilder(String.format("%-6s %10s %10s %8s %9s%n", "layer", "predicted", "active", "recall", "precision"));
        for (int l = 0; l < layers; l++)
            sb.append(String.format("%-6d %9.1f%% %9s %8s %9s%n", l, 100 * predictedFraction(l),
                    verified ? String.format("%.1f%%", 100 * activeFraction(l)) : "-",
                    verified ? String.format("%.3f", recall(l)) : "-", verified ? String.format("%.3f", precision(l)) : "-"));
        return sb.toString();
    }
}
