package org.powerinfer4j.engine.offline;

import java.util.List;
import org.powerinfer4j.engine.api.Model;
import org.powerinfer4j.engine.api.Session;
import org.powerinfer4j.engine.model.ModelException;
import org.powerinfer4j.engine.sparse.SparseMode;

/**
 * Predictor training pairs collected from a dense ReLU-family model: per layer and token, the predictor input
 * (the residual stream after attention, before the FFN norm) and the active mask (h ≠ 0; for ReGLU h =
 * relu(gate)·up, so this is the gate firing). Inputs are primitive float arrays [tokens][dim] per layer, masks
 * bit-packed [tokens][⌈n_ff/64⌉] longs; each token remembers its sequence so that the held-out split never
 * cuts through a sequence.
 */
public final class PredictorDataset {
    final int layers, dim, ff, words;
    final int tokens;
    final float[][] inputs;  // [layer][token * dim + j]
    final long[][] masks;    // [layer][token * words + w]
    final int[] sequence;    // token → sequence index
    final int sequences;

    private PredictorDataset(int layers, int dim, int ff, int tokens, int sequences) {
        this.layers = layers;
        this.dim = dim;
        this.ff = ff;
        this.words = (ff + 63) / 64;
        this.tokens = tokens;
        this.sequences = sequences;
        this.inputs = new float[layers][Math.multiplyExact(tokens, dim)];
        this.masks = new long[layers][Math.multiplyExact(tokens, words)];
        this.sequence = new int[tokens];
    }

    public int tokens() { return tokens; }
    public int layers() { return layers; }

    boolean active(int layer, int token, int neuron) {
        return (masks[layer][token * words + (neuron >>> 6)] >>> (neuron & 63) & 1L) != 0;
    }

    /** Runs the chunks through the model's dense FFN and records every layer's pairs. */
    public static PredictorDataset collect(Model model, List<int[]> chunks, ActivationProfiler.Progress progress) {
        if (model.sparseMode() != SparseMode.OFF)
            throw new ModelException("collecting predictor data needs the dense FFN (--sparse off), not " + model.sparseMode());
        if (!model.config().activation().isRelu())
            throw new ModelException("predictors need a ReLU-family FFN; this model uses " + model.config().activation()
                    + " (pass --ffn-act relu if its FFN is ReLU)");
        for (int l = 0; l < model.config().layers(); l++)
            if (model.weights().layers()[l].has("ffn_gate_inp.weight"))
                throw new ModelException("layer " + l + " is a mixture-of-experts layer: predictors are trained for dense FFN layers only "
                        + "(profile counts MoE layers per expert)");
        long total = CalibrationCorpus.tokenCount(chunks);
        int dim = model.config().dim(), ff = model.config().ffDim(), layers = model.config().layers();
        long bytes = total * layers * (4L * dim + 8L * ((ff + 63) / 64));
        long free = Runtime.getRuntime().maxMemory() - (Runtime.getRuntime().totalMemory() - Runtime.getRuntime().freeMemory());
        if (total > Integer.MAX_VALUE / Math.max(dim, 1) || bytes > free * 0.7)
            throw new ModelException(String.format("%,d tokens need %,d MiB for training pairs but only %,d MiB of heap are free; "
                    + "lower --tokens or raise -Xmx", total, bytes >> 20, free >> 20));
        PredictorDataset d = new PredictorDataset(layers, dim, ff, (int) total, chunks.size());
        int[] base = {0};
        model.setFfnObserver((layer, batch, residual, dm, h, f) -> {
            float[] x = d.inputs[layer];
            long[] m = d.masks[layer];
            for (int b = 0; b < batch; b++) {
                int t = base[0] + b;
                System.arraycopy(residual, b * dim, x, t * dim, dim);
                int mo = t * d.words, ho = b * f;
                for (int r = 0; r < f; r++) if (h[ho + r] != 0f) m[mo + (r >>> 6)] |= 1L << (r & 63);
            }
            if (layer == layers - 1) base[0] += batch;
        });
        long t0 = System.nanoTime();
        try {
            int seq = 0, at = 0;
            for (int[] c : chunks) {
                if (c.length > model.contextLength())
                    throw new ModelException("chunk of " + c.length + " tokens exceeds the context of " + model.contextLength());
                try (Session s = model.newSession()) {
                    s.evaluate(c);
                }
                java.util.Arrays.fill(d.sequence, at, at + c.length, seq++);
                at += c.length;
                if (progress != null) progress.update(at, total, System.nanoTime() - t0);
            }
        } finally {
            model.setFfnObserver(null);
        }
        return d;
    }
}
