package org.powerinfer4j.engine.offline;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.Consumer;

/**
 * Trains PowerInfer activation predictors, one per layer (in a mixture-of-experts layer one per routed expert, over
 * the tokens the router sent to it): logits = fc2 · relu(fc1 · x), no biases, neuron r
 * predicted active iff logit_r ≥ threshold.
 *
 * <p>Loss: binary cross-entropy on the logits with positives weighted by (neg/pos)^{@code posWeightExponent}
 * (active neurons are rare, and a missed active neuron costs accuracy while a false positive only costs one row
 * dot product). Adam with a linearly decaying learning rate, mini-batches, deterministic from the seed (layers
 * train in parallel but each from its own seeded stream). The input is scaled per feature by its RMS during
 * training (conditioning; the residual stream has a few huge dimensions), and that scaling is folded into fc1.
 *
 * <p>Adaptive hidden size (PowerInfer's "adaptive predictor"): each layer takes the smallest candidate whose
 * held-out recall at threshold 0 reaches {@code targetRecall} (the largest candidate otherwise). Weights are
 * rounded to F16 (their stored type) before anything is measured. Optionally the threshold is calibrated: the
 * largest threshold keeping held-out recall ≥ {@code thresholdRecall}; the file stores one threshold, the
 * minimum over layers, so every layer keeps at least that recall.
 */
public final class PredictorTrainer {

    /** Training settings; {@link #defaults(int)} scales hidden-size candidates to the model width. */
    public record Config(int[] hiddenCandidates, double targetRecall, double thresholdRecall, int epochs, int batchSize,
                         float learningRate, double posWeightExponent, double heldOutFraction, long seed, int threads) {
        public static Config defaults(int dim) {
            int scale = Math.max(1, dim / 256);
            int[] c = {32 * scale, 48 * scale, 64 * scale, 96 * scale, 128 * scale};
            return new Config(c, 0.95, Double.NaN, 24, 64, 3e-3f, 0.75, 0.1, 42, Math.max(1, Runtime.getRuntime().availableProcessors()));
        }

        public Config withHidden(int h) { return new Config(new int[]{h}, targetRecall, thresholdRecall, epochs, batchSize, learningRate, posWeightExponent, heldOutFraction, seed, threads); }
        public Config withCandidates(int... c) { return new Config(c.clone(), targetRecall, thresholdRecall, epochs, batchSize, learningRate, posWeightExponent, heldOutFraction, seed, threads); }
        public Config withTargetRecall(double r) { return new Config(hiddenCandidates, r, thresholdRecall, epochs, batchSize, learningRate, posWeightExponent, heldOutFraction, seed, threads); }
        public Config withThresholdRecall(double r) { return new Config(hiddenCandidates, targetRecall, r, epochs, batchSize, learningRate, posWeightExponent, heldOutFraction, seed, threads); }
        public Config withEpochs(int e) { return new Config(hiddenCandidates, targetRecall, thresholdRecall, e, batchSize, learningRate, posWeightExponent, heldOutFraction, seed, threads); }
        public Config withSeed(long s) { return new Config(hiddenCandidates, targetRecall, thresholdRecall, epochs, batchSize, learningRate, posWeightExponent, heldOutFraction, s, threads); }
        public Config withThreads(int t) { return new Config(hiddenCandidates, targetRecall, thresholdRecall, epochs, batchSize, learningRate, posWeightExponent, heldOutFraction, seed, t); }
    }

    /**
     * One trained predictor. {@code fc1} is [hidden][dim] (GGUF {n_embd, H}), {@code fc2} [ff][hidden] (GGUF
     * {H, n_ff}); both hold F16-representable values. Metrics are on held-out tokens at {@code threshold}.
     */
    public record LayerPredictor(int layer, int expert, int hidden, float[] fc1, float[] fc2, float threshold, double recall, double precision,
                                 double predictedActive, double trulyActive, double recallAtZero, String tried) {
        /** A dense FFN layer's predictor ({@code expert} −1). */
        public LayerPredictor(int layer, int hidden, float[] fc1, float[] fc2, float threshold, double recall, double precision,
                              double predictedActive, double trulyActive, double recallAtZero, String tried) {
            this(layer, -1, hidden, fc1, fc2, threshold, recall, precision, predictedActive, trulyActive, recallAtZero, tried);
        }

        LayerPredictor with(float thr, double[] m) {
            return new LayerPredictor(layer, expert, hidden, fc1, fc2, thr, m[0], m[1], m[2], m[3], recallAtZero, tried);
        }
    }

    /** All layers' predictors and the single threshold for the file. */
    public record Result(List<LayerPredictor> layers, float fileThreshold, int trainTokens, int heldOutTokens) {
        /** The per-layer table train-predictors prints. */
        public String table() {
            boolean moe = layers.stream().anyMatch(p -> p.expert >= 0);
            StringBuilder b = new StringBuilder(String.format(Locale.ROOT, "%-6s " + (moe ? "%6s " : "%s") + "%6s %10s %9s %10s %10s %10s  %s%n",
                    "layer", moe ? "expert" : "", "hidden", "threshold", "recall", "precision", "predicted", "active", "recall@0 by hidden"));
            for (LayerPredictor p : layers)
                b.append(String.format(Locale.ROOT, "%-6d " + (moe ? "%6s " : "%s") + "%6d %10.3f %9.4f %10.4f %10.4f %10.4f  %s%n", p.layer,
                        moe ? (p.expert < 0 ? "-" : Integer.toString(p.expert)) : "", p.hidden, p.threshold, p.recall, p.precision,
                        p.predictedActive, p.trulyActive, p.tried));
            b.append(String.format(Locale.ROOT, "file threshold %.4f; %,d training and %,d held-out tokens%n", fileThreshold, trainTokens, heldOutTokens));
            return b.toString();
        }
    }

    private PredictorTrainer() {}

    public static Result train(PredictorDataset d, Config cfg, Consumer<String> log) throws InterruptedException {
        if (d.sequences < 2) throw new IllegalArgumentException("need at least 2 calibration sequences to hold one out");
        // held-out split by whole sequences, chosen by the seed
        boolean[] held = heldOutSequences(d, cfg);
        int heldTokens = 0;
        for (int q = 0; q < d.sequences; q++) if (held[q]) heldTokens += d.sequenceLengths[q];
        int trainTokens = d.tokens - heldTokens;
        List<int[][]> splits = new ArrayList<>();
        for (PredictorDataset.Unit u : d.units) splits.add(split(u, held, log));
        ExecutorService pool = Executors.newFixedThreadPool(Math.max(1, Math.min(cfg.threads(), d.units.size())));
        try {
            List<Future<LayerPredictor>> fs = new ArrayList<>();
            for (int i = 0; i < d.units.size(); i++) {
                PredictorDataset.Unit u = d.units.get(i);
                int[][] sp = splits.get(i);
                fs.add(pool.submit(() -> trainUnit(d, u, sp[0], sp[1], cfg, log)));
            }
            List<LayerPredictor> out = new ArrayList<>();
            for (Future<LayerPredictor> f : fs) {
                try {
                    out.add(f.get());
                } catch (java.util.concurrent.ExecutionException e) {
                    throw e.getCause() instanceof RuntimeException r ? r : new RuntimeException(e.getCause());
                }
            }
            float thr = Double.isNaN(cfg.thresholdRecall()) ? 0f : (float) out.stream().mapToDouble(LayerPredictor::threshold).min().orElse(0);
            // re-measure every predictor at the one threshold the file will carry
            List<LayerPredictor> atFile = new ArrayList<>();
            for (int i = 0; i < out.size(); i++) {
                LayerPredictor p = out.get(i);
                atFile.add(p.with(thr, metrics(d, d.units.get(i), splits.get(i)[1], p.hidden, p.fc1, p.fc2, thr)));
            }
            return new Result(atFile, thr, trainTokens, heldTokens);
        } finally {
            pool.shutdownNow();
        }
    }

    /**
     * {training, held-out} sample indices of {@code u} by its samples' sequences. A dense layer needs both; an expert
     * the router sent tokens of one side only trains and is measured on all of them (said in {@code log}).
     */
    static int[][] split(PredictorDataset.Unit u, boolean[] held, Consumer<String> log) {
        int[] train = java.util.stream.IntStream.range(0, u.samples).filter(t -> !held[u.sequence[t]]).toArray();
        int[] test = java.util.stream.IntStream.range(0, u.samples).filter(t -> held[u.sequence[t]]).toArray();
        if (u.expert < 0) {
            if (train.length == 0 || test.length == 0) throw new IllegalArgumentException("calibration split left no training or held-out tokens");
        } else if (train.length == 0 || test.length == 0) {
            if (log != null) log.accept(String.format(Locale.ROOT, "layer %d expert %d: all %d routed tokens fall on one side of the held-out split; "
                    + "trained and measured on all of them", u.layer, u.expert, u.samples));
            train = test = java.util.stream.IntStream.range(0, u.samples).toArray();
        }
        return new int[][]{train, test};
    }

    /** The calibration sequences held out for measuring, whole sequences chosen by the seed. */
    static boolean[] heldOutSequences(PredictorDataset d, Config cfg) {
        int heldSeqs = Math.max(1, (int) Math.round(d.sequences * cfg.heldOutFraction()));
        int[] perm = permutation(d.sequences, new SplittableRandom(cfg.seed()));
        boolean[] held = new boolean[d.sequences];
        for (int i = 0; i < heldSeqs; i++) held[perm[i]] = true;
        return held;
    }

    private static LayerPredictor trainUnit(PredictorDataset d, PredictorDataset.Unit u, int[] train, int[] test, Config cfg, Consumer<String> log) {
        int[] cands = cfg.hiddenCandidates().clone();
        Arrays.sort(cands);
        StringBuilder tried = new StringBuilder();
        LayerPredictor best = null;
        String name = u.expert < 0 ? "layer " + u.layer : "layer " + u.layer + " expert " + u.expert;
        for (int h : cands) {
            float[][] w = fit(d, u, train, h, cfg);
            double[] m = metrics(d, u, test, h, w[0], w[1], 0f);
            tried.append(tried.isEmpty() ? "" : ", ").append(String.format(Locale.ROOT, "%d:%.3f", h, m[0]));
            best = new LayerPredictor(u.layer, u.expert, h, w[0], w[1], 0f, m[0], m[1], m[2], m[3], m[0], "");
            if (log != null) log.accept(String.format(Locale.ROOT, "%s: hidden %d → held-out recall %.4f, precision %.4f at threshold 0", name, h, m[0], m[1]));
            if (m[0] >= cfg.targetRecall()) break;
        }
        float thr = 0f;
        if (!Double.isNaN(cfg.thresholdRecall())) thr = calibrate(d, u, test, best.hidden(), best.fc1(), best.fc2(), cfg.thresholdRecall());
        double[] m = metrics(d, u, test, best.hidden(), best.fc1(), best.fc2(), thr);
        return new LayerPredictor(u.layer, u.expert, best.hidden(), best.fc1(), best.fc2(), thr, m[0], m[1], m[2], m[3], best.recallAtZero(),
                tried.toString());
    }

    /**
     * Training pairs of one predictor: {@code inputs[t*dim..]} and the activity bits of ff neurons per sample. With
     * {@code block} (null: every sample in block 0) the predictor's output has {@code blocks × ff} neurons and sample
     * t labels only block {@code block[t]}'s (one predictor over all experts of a layer, each token labelled for the
     * experts the router chose: see {@link MoePredictorLayouts}).
     */
    record Samples(float[] inputs, long[] masks, int[] block, int blocks, int dim, int ff, int words) {
        static Samples of(PredictorDataset d, PredictorDataset.Unit u) {
            return new Samples(u.inputs, u.masks, null, 1, d.dim, d.ff, d.words);
        }

        /** First output neuron of sample t's block. */
        int lo(int t) {
            return block == null ? 0 : block[t] * ff;
        }

        boolean active(int t, int neuron) {
            return (masks[t * words + (neuron >>> 6)] >>> (neuron & 63) & 1L) != 0;
        }
    }

    /** Trains one predictor of hidden size h; returns {fc1 [h][dim], fc2 [ff][h]} with the input scaling folded in, F16-rounded. */
    static float[][] fit(PredictorDataset d, PredictorDataset.Unit u, int[] train, int h, Config cfg) {
        // the seed stream of this predictor (a dense layer's as before experts existed)
        long stream = u.expert < 0 ? u.layer : ((long) u.layer << 20) + 0x10000 + u.expert;
        return fit(Samples.of(d, u), train, h, cfg, stream);
    }

    /** {@link #fit} over any {@link Samples}: fc2 is [blocks·ff][h]. */
    static float[][] fit(Samples u, int[] train, int h, Config cfg, long stream) {
        int dim = u.dim(), ff = u.ff();
        float[] x = u.inputs();
        // per-feature RMS scaling (folded into fc1 at the end)
        double[] ss = new double[dim];
        for (int t : train) for (int j = 0; j < dim; j++) { double v = x[t * dim + j]; ss[j] += v * v; }
        float[] inv = new float[dim];
        for (int j = 0; j < dim; j++) {
            double rms = Math.sqrt(ss[j] / train.length);
            inv[j] = rms > 1e-12 ? (float) (1 / rms) : 1f;
        }
        // positive weight from the class balance
        long pos = 0;
        for (int t : train) for (int w = 0; w < u.words(); w++) pos += Long.bitCount(u.masks()[t * u.words() + w]);
        long neg = (long) train.length * ff - pos;
        float posWeight = pos == 0 ? 1f : (float) Math.pow(Math.max(1.0, (double) neg / pos), cfg.posWeightExponent());

        SplittableRandom rnd = new SplittableRandom(cfg.seed() * 31 + stream * 1_000_003L + h);
        float[] w1 = new float[h * dim], w2 = new float[u.blocks() * ff * h];
        double s1 = Math.sqrt(2.0 / dim), s2 = Math.sqrt(1.0 / h);
        for (int i = 0; i < w1.length; i++) w1[i] = (float) (gauss(rnd) * s1);
        for (int i = 0; i < w2.length; i++) w2[i] = (float) (gauss(rnd) * s2);
        Adam a1 = new Adam(w1.length), a2 = new Adam(w2.length);

        int B = cfg.batchSize();
        float[] xb = new float[B * dim], z1 = new float[B * h], dz2 = new float[B * ff], da = new float[B * h];
        float[] g1 = new float[w1.length], g2 = new float[w2.length];
        int[] order = train.clone();
        int steps = cfg.epochs() * ((order.length + B - 1) / B), step = 0;
        for (int epoch = 0; epoch < cfg.epochs(); epoch++) {
            shuffle(order, rnd);
            for (int from = 0; from < order.length; from += B) {
                int n = Math.min(B, order.length - from);
                for (int b = 0; b < n; b++) {
                    int t = order[from + b];
                    for (int j = 0; j < dim; j++) xb[b * dim + j] = x[t * dim + j] * inv[j];
                }
                // forward: z1 = W1 x, a = relu(z1) (kept in z1), z2 = W2 a; dz2 = dLoss/dz2
                for (int b = 0; b < n; b++)
                    for (int k = 0; k < h; k++) z1[b * h + k] = Math.max(0f, Vec.dot(w1, k * dim, xb, b * dim, dim));
                float scale = 1f / n;
                for (int b = 0; b < n; b++) {
                    int t = order[from + b], lo = u.lo(t);
                    for (int r = 0; r < ff; r++) {
                        float z = Vec.dot(w2, (lo + r) * h, z1, b * h, h);
                        float sg = sigmoid(z);
                        dz2[b * ff + r] = (u.active(t, r) ? posWeight * (sg - 1f) : sg) * scale;
                    }
                }
                // backward
                Arrays.fill(g1, 0f);
                Arrays.fill(g2, 0f);
                Arrays.fill(da, 0, n * h, 0f);
                for (int b = 0; b < n; b++) {
                    int lo = u.lo(order[from + b]);
                    for (int r = 0; r < ff; r++) {
                        float g = dz2[b * ff + r];
                        Vec.axpy(g, z1, b * h, g2, (lo + r) * h, h);
                        Vec.axpy(g, w2, (lo + r) * h, da, b * h, h);
                    }
                }
                for (int b = 0; b < n; b++)
                    for (int k = 0; k < h; k++)
                        if (z1[b * h + k] > 0f) Vec.axpy(da[b * h + k], xb, b * dim, g1, k * dim, dim);
                float lr = cfg.learningRate() * (1f - 0.9f * step / (float) steps);
                a1.step(w1, g1, lr);
                a2.step(w2, g2, lr);
                step++;
            }
        }
        for (int k = 0; k < h; k++) for (int j = 0; j < dim; j++) w1[k * dim + j] *= inv[j];
        f16(w1);
        f16(w2);
        return new float[][]{w1, w2};
    }

    /** Held-out logits of sample t's block, as the engine computes them from the stored weights. */
    private static float[] logits(Samples u, int t, int h, float[] fc1, float[] fc2, float[] hid, float[] out) {
        float[] x = u.inputs();
        int dim = u.dim(), lo = u.lo(t);
        for (int k = 0; k < h; k++) hid[k] = Math.max(0f, Vec.dot(fc1, k * dim, x, t * dim, dim));
        for (int r = 0; r < u.ff(); r++) out[r] = Vec.dot(fc2, (lo + r) * h, hid, 0, h);
        return out;
    }

    /** {recall, precision, predicted-active fraction, truly-active fraction} at {@code thr} (logit ≥ thr). */
    static double[] metrics(PredictorDataset d, PredictorDataset.Unit u, int[] test, int h, float[] fc1, float[] fc2, float thr) {
        return metrics(Samples.of(d, u), test, h, fc1, fc2, thr);
    }

    static double[] metrics(Samples u, int[] test, int h, float[] fc1, float[] fc2, float thr) {
        long tp = 0, fp = 0, fn = 0;
        int ff = u.ff();
        float[] hid = new float[h], z = new float[ff];
        for (int t : test) {
            logits(u, t, h, fc1, fc2, hid, z);
            for (int r = 0; r < ff; r++) {
                boolean p = z[r] >= thr, a = u.active(t, r);
                if (p && a) tp++;
                else if (p) fp++;
                else if (a) fn++;
            }
        }
        double n = (double) test.length * ff;
        return new double[]{tp + fn == 0 ? 1 : (double) tp / (tp + fn), tp + fp == 0 ? 1 : (double) tp / (tp + fp), (tp + fp) / n, (tp + fn) / n};
    }

    /** Largest threshold with held-out recall ≥ {@code recall}: the ⌈recall·P⌉-th largest logit of the P active neurons. */
    static float calibrate(PredictorDataset d, PredictorDataset.Unit u, int[] test, int h, float[] fc1, float[] fc2, double recall) {
        return calibrate(Samples.of(d, u), test, h, fc1, fc2, recall);
    }

    static float calibrate(Samples u, int[] test, int h, float[] fc1, float[] fc2, double recall) {
        float[] hid = new float[h], z = new float[u.ff()];
        float[] pos = new float[16];
        int n = 0;
        for (int t : test) {
            logits(u, t, h, fc1, fc2, hid, z);
            for (int r = 0; r < u.ff(); r++)
                if (u.active(t, r)) {
                    if (n == pos.length) pos = Arrays.copyOf(pos, n * 2);
                    pos[n++] = z[r];
                }
        }
        if (n == 0) return 0f;
        Arrays.sort(pos, 0, n);
        int k = (int) Math.ceil(recall * n - 1e-9);
        k = Math.max(1, Math.min(n, k));
        return pos[n - k]; // k positives have logit ≥ this value
    }

    private static final class Adam {
        final float[] m, v;
        int t;
        static final float B1 = 0.9f, B2 = 0.999f, EPS = 1e-8f;

        Adam(int n) {
            m = new float[n];
            v = new float[n];
        }

        void step(float[] w, float[] g, float lr) {
            t++;
            float c1 = 1f - (float) Math.pow(B1, t), c2 = 1f - (float) Math.pow(B2, t);
            float a = lr * (float) Math.sqrt(c2) / c1;
            for (int i = 0; i < w.length; i++) {
                float gi = g[i];
                m[i] = B1 * m[i] + (1 - B1) * gi;
                v[i] = B2 * v[i] + (1 - B2) * gi * gi;
                w[i] -= a * m[i] / ((float) Math.sqrt(v[i]) + EPS);
            }
        }
    }

    private static float sigmoid(float z) {
        return z >= 0 ? 1f / (1f + (float) Math.exp(-z)) : (float) Math.exp(z) / (1f + (float) Math.exp(z));
    }

    private static void f16(float[] w) {
        for (int i = 0; i < w.length; i++) w[i] = Float.float16ToFloat(Float.floatToFloat16(w[i]));
    }

    private static double gauss(SplittableRandom r) {
        double u = 1 - r.nextDouble(), v = r.nextDouble();
        return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
    }

    private static int[] permutation(int n, SplittableRandom r) {
        int[] p = new int[n];
        for (int i = 0; i < n; i++) p[i] = i;
        shuffle(p, r);
        return p;
    }

    private static void shuffle(int[] a, SplittableRandom r) {
        for (int i = a.length - 1; i > 0; i--) {
            int j = r.nextInt(i + 1);
            int t = a[i]; a[i] = a[j]; a[j] = t;
        }
    }
}
