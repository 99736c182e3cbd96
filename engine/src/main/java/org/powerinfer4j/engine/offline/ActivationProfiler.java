package org.powerinfer4j.engine.offline;

import org.powerinfer4j.engine.placement.ActivationStats;
import java.util.List;
import org.powerinfer4j.engine.api.Model;
import org.powerinfer4j.engine.api.Session;
import org.powerinfer4j.engine.model.ModelException;
import org.powerinfer4j.engine.sparse.SparseMode;

/**
 * Counts, per layer and per FFN neuron, how often the neuron fires over a calibration corpus. The model must run
 * its dense FFN ({@link SparseMode#OFF}) so that every activation is computed. A neuron fires when its
 * activation h ≠ 0 (ReLU-family models, whose zeros are exact) or |h| > threshold (SwiGLU models, where
 * nothing is exactly zero).
 */
public final class ActivationProfiler {
    private ActivationProfiler() {}

    /** Receives progress after each chunk: tokens done of the total, and elapsed nanoseconds. */
    @FunctionalInterface
    public interface Progress {
        void update(long tokensDone, long tokensTotal, long elapsedNanos);
    }

    public static ActivationStats profile(Model model, List<int[]> chunks, float threshold, Progress progress) {
        if (model.sparseMode() != SparseMode.OFF)
            throw new ModelException("profiling needs the dense FFN (open the model with --sparse off), not " + model.sparseMode());
        boolean relu = model.config().activation().isRelu();
        int layers = model.config().layers();
        long[][] counts = new long[layers][];
        for (int l = 0; l < layers; l++) counts[l] = new long[model.weights().layers()[l].ffnUp().rows()];
        float thr = relu ? 0f : Math.max(0f, threshold);
        model.setFfnObserver((layer, batch, residual, dim, h, ff) -> {
            long[] c = counts[layer];
            for (int b = 0; b < batch; b++) {
                int o = b * ff;
                if (relu) {
                    for (int r = 0; r < ff; r++) if (h[o + r] != 0f) c[r]++;
                } else {
                    for (int r = 0; r < ff; r++) if (Math.abs(h[o + r]) > thr) c[r]++;
                }
            }
        });
        long total = CalibrationCorpus.tokenCount(chunks), done = 0, t0 = System.nanoTime();
        try {
            for (int[] chunk : chunks) {
                if (chunk.length > model.contextLength())
                    throw new ModelException("chunk of " + chunk.length + " tokens exceeds the context of " + model.contextLength());
                try (Session s = model.newSession()) {
                    s.evaluate(chunk);
                }
                done += chunk.length;
                if (progress != null) progress.update(done, total, System.nanoTime() - t0);
            }
        } finally {
            model.setFfnObserver(null);
        }
        String name = model.file().getString("general.name", model.file().path().getFileName().toString());
        return new ActivationStats(counts, done, name, relu ? ActivationStats.CRITERION_NONZERO : ActivationStats.CRITERION_ABS_GT, thr);
    }
}
