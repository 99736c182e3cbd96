package org.powerinfer4j.engine.offline;

import org.powerinfer4j.engine.placement.ActivationStats;
import org.powerinfer4j.engine.placement.ExpertCounts;
import org.powerinfer4j.engine.model.LayerWeights;
import java.util.List;
import org.powerinfer4j.engine.api.Model;
import org.powerinfer4j.engine.api.Session;
import org.powerinfer4j.engine.model.ModelException;
import org.powerinfer4j.engine.sparse.SparseMode;

/**
 * Counts, per layer and per FFN neuron, how often the neuron fires over a calibration corpus. The model must run
 * its dense FFN ({@link SparseMode#OFF}) so that every activation is computed. A neuron fires when its
 * activation h ≠ 0 (ReLU-family models, whose zeros are exact) or |h| > threshold (SwiGLU models, where
 * nothing is exactly zero). In a mixture-of-experts layer each routed expert's neurons are counted over the tokens
 * routed to it, with the number of those tokens ({@link ExpertCounts}).
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
        long[][][] expertNeurons = new long[layers][][];   // [layer][expert][ff], null for dense layers
        long[][] expertTokens = new long[layers][];
        int experts = model.config().params().experts();
        for (int l = 0; l < layers; l++) {
            LayerWeights lw = model.weights().layers()[l];
            if (lw.has("ffn_gate_inp.weight")) {
                int ff = lw.expert("up", 0).rows();
                expertNeurons[l] = new long[experts][ff];
                expertTokens[l] = new long[experts];
                counts[l] = new long[ff];
            } else {
                counts[l] = new long[lw.ffnUp().rows()];
            }
        }
        float thr = relu ? 0f : Math.max(0f, threshold);
        model.setFfnObserver(new org.powerinfer4j.engine.model.FfnObserver() {
            @Override
            public void onFfn(int layer, int batch, float[] residual, int dim, float[] h, int ff) {
                count(counts[layer], batch, h, ff, relu, thr);
            }

            @Override
            public void onExpertFfn(int layer, int expert, int tokens, float[] residual, int dim, float[] h, int ff) {
                count(expertNeurons[layer][expert], tokens, h, ff, relu, thr);
                expertTokens[layer][expert] += tokens;
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
        ExpertCounts[] perLayer = new ExpertCounts[layers];
        for (int l = 0; l < layers; l++)
            if (expertNeurons[l] != null) {
                perLayer[l] = new ExpertCounts(expertNeurons[l], expertTokens[l]);
                counts[l] = perLayer[l].summedOverExperts();
            }
        return new ActivationStats(counts, done, name, relu ? ActivationStats.CRITERION_NONZERO : ActivationStats.CRITERION_ABS_GT, thr, perLayer);
    }

    private static void count(long[] c, int tokens, float[] h, int ff, boolean relu, float thr) {
        for (int b = 0; b < tokens; b++) {
            int o = b * ff;
            if (relu) {
                for (int r = 0; r < ff; r++) if (h[o + r] != 0f) c[r]++;
            } else {
                for (int r = 0; r < ff; r++) if (Math.abs(h[o + r]) > thr) c[r]++;
            }
        }
    }
}
