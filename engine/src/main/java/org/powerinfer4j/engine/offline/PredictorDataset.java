package org.powerinfer4j.engine.offline;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.powerinfer4j.engine.api.Model;
import org.powerinfer4j.engine.api.Session;
import org.powerinfer4j.engine.model.FfnObserver;
import org.powerinfer4j.engine.model.LayerWeights;
import org.powerinfer4j.engine.model.ModelException;
import org.powerinfer4j.engine.sparse.SparseMode;

/**
 * Predictor training pairs collected from a dense ReLU-family model, one {@link Unit} per predictor: a dense FFN
 * layer's (every token), or in a mixture-of-experts layer one per routed expert (the tokens the router sent to it).
 * A pair is the predictor input (the residual stream after attention, before the FFN norm) and the active mask
 * (h ≠ 0; for ReGLU h = relu(gate)·up, so this is the gate firing). Inputs are primitive float arrays [samples][dim],
 * masks bit-packed [samples][⌈n_ff/64⌉] longs; each sample remembers its sequence so that the held-out split never
 * cuts through a sequence.
 */
public final class PredictorDataset {
    /** One predictor's training data: layer {@code layer}'s dense FFN ({@code expert} −1) or its routed expert {@code expert}. */
    static final class Unit {
        final int layer, expert;
        int samples;
        float[] inputs;   // [sample * dim + j]
        long[] masks;     // [sample * words + w]
        int[] sequence;   // sample → sequence index

        Unit(int layer, int expert, int capacity, int dim, int words) {
            this.layer = layer;
            this.expert = expert;
            inputs = new float[Math.multiplyExact(capacity, dim)];
            masks = new long[Math.multiplyExact(capacity, words)];
            sequence = new int[capacity];
        }

        /** Appends {@code n} samples: residual rows and activations [n][ff] from the model's buffers. */
        void add(int n, float[] residual, int dim, float[] h, int ff, int words, int seq) {
            if (samples + n > sequence.length) {   // experts grow as the router sends them tokens
                int cap = Math.max(samples + n, sequence.length * 2);
                inputs = Arrays.copyOf(inputs, Math.multiplyExact(cap, dim));
                masks = Arrays.copyOf(masks, Math.multiplyExact(cap, words));
                sequence = Arrays.copyOf(sequence, cap);
            }
            for (int b = 0; b < n; b++) {
                int t = samples + b;
                System.arraycopy(residual, b * dim, inputs, t * dim, dim);
                int mo = t * words, ho = b * ff;
                for (int r = 0; r < ff; r++) if (h[ho + r] != 0f) masks[mo + (r >>> 6)] |= 1L << (r & 63);
                sequence[t] = seq;
            }
            samples += n;
        }
    }

    final int layers, dim, ff, words;
    final int tokens;
    final int sequences;
    final int[] sequenceLengths;   // tokens per calibration sequence
    final List<Unit> units;

    private PredictorDataset(int layers, int dim, int ff, int tokens, int[] sequenceLengths, List<Unit> units) {
        this.layers = layers;
        this.dim = dim;
        this.ff = ff;
        this.words = (ff + 63) / 64;
        this.tokens = tokens;
        this.sequences = sequenceLengths.length;
        this.sequenceLengths = sequenceLengths;
        this.units = units;
    }

    /** The same calibration pairs with only {@code keep}'s predictors to train. */
    PredictorDataset withUnits(List<Unit> keep) {
        return new PredictorDataset(layers, dim, ff, tokens, sequenceLengths, keep);
    }

    /** Tokens evaluated. */
    public int tokens() { return tokens; }
    public int layers() { return layers; }
    /** Predictors to train: one per dense layer plus one per expert of each mixture-of-experts layer. */
    public int units() { return units.size(); }

    /** Runs the chunks through the model's dense FFN and records every layer's (and routed expert's) pairs. */
    public static PredictorDataset collect(Model model, List<int[]> chunks, ActivationProfiler.Progress progress) {
        if (model.sparseMode() != SparseMode.OFF)
            throw new ModelException("collecting predictor data needs the dense FFN (--sparse off), not " + model.sparseMode());
        if (!model.config().activation().isRelu())
            throw new ModelException("predictors need a ReLU-family FFN; this model uses " + model.config().activation()
                    + " (pass --ffn-act relu if its FFN is ReLU)");
        long total = CalibrationCorpus.tokenCount(chunks);
        int dim = model.config().dim(), ff = model.config().ffDim(), layers = model.config().layers();
        int experts = model.config().params().experts(), used = model.config().params().expertsUsed();
        int words = (ff + 63) / 64;
        LayerWeights[] lw = model.weights().layers();
        long samples = 0;
        for (LayerWeights l : lw) samples += l.has("ffn_gate_inp.weight") ? total * used : total;
        long bytes = samples * (4L * dim + 8L * words);
        long free = Runtime.getRuntime().maxMemory() - (Runtime.getRuntime().totalMemory() - Runtime.getRuntime().freeMemory());
        if (total * Math.max(1, used) > Integer.MAX_VALUE / Math.max(dim, 1) || bytes > free * 0.7)
            throw new ModelException(String.format("%,d tokens need %,d MiB for training pairs but only %,d MiB of heap are free; "
                    + "lower --tokens or raise -Xmx", total, bytes >> 20, free >> 20));
        int tokens = (int) total;
        List<Unit> units = new ArrayList<>();
        Unit[] dense = new Unit[layers];
        Unit[][] routed = new Unit[layers][];
        for (int l = 0; l < layers; l++) {
            if (lw[l].has("ffn_gate_inp.weight")) {
                routed[l] = new Unit[experts];
                // an expert's expected share of the tokens; it grows past that when the router favours it
                int cap = (int) Math.min(tokens, Math.max(16, (long) tokens * used / experts + tokens / 8));
                for (int e = 0; e < experts; e++) units.add(routed[l][e] = new Unit(l, e, cap, dim, words));
            } else units.add(dense[l] = new Unit(l, -1, tokens, dim, words));
        }
        PredictorDataset d = new PredictorDataset(layers, dim, ff, tokens, chunks.stream().mapToInt(c -> c.length).toArray(), units);
        int[] seq = {0};
        model.setFfnObserver(new FfnObserver() {
            @Override
            public void onFfn(int layer, int batch, float[] residual, int dm, float[] h, int f) {
                dense[layer].add(batch, residual, dm, h, f, words, seq[0]);
            }

            @Override
            public void onExpertFfn(int layer, int expert, int n, float[] residual, int dm, float[] h, int f) {
                routed[layer][expert].add(n, residual, dm, h, f, words, seq[0]);
            }
        });
        long t0 = System.nanoTime();
        try {
            int at = 0;
            for (int[] c : chunks) {
                if (c.length > model.contextLength())
                    throw new ModelException("chunk of " + c.length + " tokens exceeds the context of " + model.contextLength());
                try (Session s = model.newSession()) {
                    s.evaluate(c);
                }
                seq[0]++;
                at += c.length;
                if (progress != null) progress.update(at, total, System.nanoTime() - t0);
            }
        } finally {
            model.setFfnObserver(null);
        }
        for (int l = 0; l < layers; l++)
            if (routed[l] != null)
                for (int e = 0; e < experts; e++)
                    if (routed[l][e].samples == 0)
                        throw new ModelException("expert " + e + " of layer " + l + " received none of the " + total
                                + " calibration tokens, so its predictor cannot be trained; give a larger or more varied corpus (--tokens, -f)");
        return d;
    }
}
