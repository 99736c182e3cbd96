package org.powerinfer4j.engine.offline;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Which predictor layout suits a mixture-of-experts layer, measured — one predictor per expert (the default:
 * {@code blk.N.fc1.E}/{@code fc2.E}) or one per layer over all experts' neurons — and the second trained for files
 * ({@link #trainLayerWide}). The per-layer one is a shared
 * {@code fc1} [H][n_embd] and an {@code fc2} of {@code n_expert × n_ff} rows, of which a token computes only its
 * routed experts' blocks. Both are trained by {@link PredictorTrainer}'s loss and optimiser on the same calibration
 * pairs (the shared one on every routed (token, expert) pair of the layer, each labelling only its expert's block)
 * and measured on the same held-out sequences, per expert. The shared one gets the hidden size that makes its cost
 * per token equal the per-expert layout's: {@code H_s·(n_embd + k·n_ff) = k·H·(n_embd + n_ff)}.
 */
public final class MoePredictorLayouts {
    private MoePredictorLayouts() {}

    /** One expert's held-out figures under both layouts: recall and precision at threshold 0, and the predicted fraction at the target recall. */
    public record Row(int layer, int expert, int trainSamples, int testSamples, double trulyActive,
                      double ownRecall, double ownPrecision, double ownPredictedAtTarget,
                      double sharedRecall, double sharedPrecision, double sharedPredictedAtTarget) {}

    /** The comparison: rows per (layer, expert), the two hidden sizes and the multiply-adds per token of each layout. */
    public record Comparison(List<Row> rows, int ownHidden, int sharedHidden, long ownMacs, long sharedMacs, double targetRecall) {
        public String table() {
            StringBuilder b = new StringBuilder(String.format(Locale.ROOT,
                    "per expert: hidden %d, %,d multiply-adds per token; per layer: hidden %d, %,d; predicted = fraction of neurons computed at held-out recall %.2f%n",
                    ownHidden, ownMacs, sharedHidden, sharedMacs, targetRecall));
            b.append(String.format(Locale.ROOT, "%-5s %6s %6s %5s %7s | %7s %9s %9s | %7s %9s %9s%n", "layer", "expert", "train", "test", "active",
                    "recall", "precision", "predicted", "recall", "precision", "predicted"));
            for (Row r : rows)
                b.append(String.format(Locale.ROOT, "%-5d %6d %6d %5d %7.4f | %7.4f %9.4f %9.4f | %7.4f %9.4f %9.4f%n", r.layer, r.expert,
                        r.trainSamples, r.testSamples, r.trulyActive, r.ownRecall, r.ownPrecision, r.ownPredictedAtTarget,
                        r.sharedRecall, r.sharedPrecision, r.sharedPredictedAtTarget));
            b.append(String.format(Locale.ROOT, "mean  %28s | %7.4f %9.4f %9.4f | %7.4f %9.4f %9.4f  (columns: per expert | per layer)%n", "",
                    mean(rows, Row::ownRecall), mean(rows, Row::ownPrecision), mean(rows, Row::ownPredictedAtTarget),
                    mean(rows, Row::sharedRecall), mean(rows, Row::sharedPrecision), mean(rows, Row::sharedPredictedAtTarget)));
            return b.toString();
        }
    }

    private static float[][] get(java.util.concurrent.Future<float[][]> f) throws InterruptedException {
        try {
            return f.get();
        } catch (java.util.concurrent.ExecutionException e) {
            throw e.getCause() instanceof RuntimeException r ? r : new RuntimeException(e.getCause());
        }
    }

    static double mean(List<Row> rows, java.util.function.ToDoubleFunction<Row> f) {
        return rows.stream().mapToDouble(f).average().orElse(Double.NaN);
    }

    /**
     * Every routed pair of one layer, expert after expert, as one predictor's samples (sample t labels block
     * expert(t)), with each expert's training and held-out indices (its own, and offset into the layer's).
     */
    private record LayerPairs(PredictorTrainer.Samples samples, int[] offset, int[][] trainOf, int[][] testOf, int[] train, int[] test) {
        static LayerPairs of(PredictorDataset d, List<PredictorDataset.Unit> experts, boolean[] held) {
            int total = experts.stream().mapToInt(u -> u.samples).sum();
            float[] inputs = new float[Math.multiplyExact(total, d.dim)];
            long[] masks = new long[Math.multiplyExact(total, d.words)];
            int[] block = new int[total], offset = new int[experts.size()];
            int[][] trainOf = new int[experts.size()][], testOf = new int[experts.size()][];
            java.util.stream.IntStream.Builder train = java.util.stream.IntStream.builder(), test = java.util.stream.IntStream.builder();
            int at = 0;
            for (int e = 0; e < experts.size(); e++) {
                PredictorDataset.Unit u = experts.get(e);
                System.arraycopy(u.inputs, 0, inputs, at * d.dim, u.samples * d.dim);
                System.arraycopy(u.masks, 0, masks, at * d.words, u.samples * d.words);
                java.util.Arrays.fill(block, at, at + u.samples, u.expert);
                int[][] sp = PredictorTrainer.split(u, held, null);
                int[] tr = sp[0], te = sp[1];
                trainOf[e] = tr;
                testOf[e] = te;
                offset[e] = at;
                for (int t : tr) train.add(at + t);
                for (int t : te) test.add(at + t);
                at += u.samples;
            }
            int blocks = experts.stream().mapToInt(u -> u.expert).max().orElse(0) + 1;
            return new LayerPairs(new PredictorTrainer.Samples(inputs, masks, block, blocks, d.dim, d.ff, d.words), offset, trainOf, testOf,
                    train.build().toArray(), test.build().toArray());
        }
    }

    /** The experts of layer l in {@code d} (empty for a dense layer). */
    private static List<PredictorDataset.Unit> expertsOf(PredictorDataset d, int l) {
        List<PredictorDataset.Unit> experts = new ArrayList<>();
        for (PredictorDataset.Unit u : d.units) if (u.layer == l && u.expert >= 0) experts.add(u);
        return experts;
    }

    /**
     * {@link PredictorTrainer#train} with one predictor per mixture-of-experts layer over all its experts' neurons
     * (fc2 of n_expert·n_ff rows, {@code expert} −1 in the result; {@link PowerInferWriter} stores it as that
     * layer's {@code fc1}/{@code fc2}): the smallest hidden candidate whose held-out recall over the layer's routed
     * pairs reaches the target, the threshold calibrated as for the other layouts (the file keeps the minimum over
     * layers, each row's metrics at its layer's own threshold). Dense layers train as in {@link PredictorTrainer#train}.
     */
    public static PredictorTrainer.Result trainLayerWide(PredictorDataset d, PredictorTrainer.Config cfg, java.util.function.Consumer<String> log)
            throws InterruptedException {
        PredictorTrainer.Result dense = null;
        if (d.units.stream().anyMatch(u -> u.expert < 0)) {
            PredictorDataset denseOnly = d.withUnits(d.units.stream().filter(u -> u.expert < 0).toList());
            dense = PredictorTrainer.train(denseOnly, cfg, log);
        }
        boolean[] held = PredictorTrainer.heldOutSequences(d, cfg);
        int[] cands = cfg.hiddenCandidates().clone();
        java.util.Arrays.sort(cands);
        List<PredictorTrainer.LayerPredictor> out = new ArrayList<>(dense == null ? List.of() : dense.layers());
        for (int l = 0; l < d.layers; l++) {
            List<PredictorDataset.Unit> experts = expertsOf(d, l);
            if (experts.isEmpty()) continue;
            LayerPairs lp = LayerPairs.of(d, experts, held);
            StringBuilder tried = new StringBuilder();
            float[][] best = null;
            int h = cands[0];
            double[] m = null;
            for (int c : cands) {
                h = c;
                best = PredictorTrainer.fit(lp.samples, lp.train, h, cfg, ((long) l << 20) + 0x20000);
                m = PredictorTrainer.metrics(lp.samples, lp.test, h, best[0], best[1], 0f);
                tried.append(tried.isEmpty() ? "" : ", ").append(String.format(Locale.ROOT, "%d:%.3f", h, m[0]));
                if (log != null) log.accept(String.format(Locale.ROOT, "layer %d (all %d experts): hidden %d → held-out recall %.4f, precision %.4f at threshold 0",
                        l, experts.size(), h, m[0], m[1]));
                if (m[0] >= cfg.targetRecall()) break;
            }
            double recallAtZero = m[0];
            float thr = Double.isNaN(cfg.thresholdRecall()) ? 0f : PredictorTrainer.calibrate(lp.samples, lp.test, h, best[0], best[1], cfg.thresholdRecall());
            m = PredictorTrainer.metrics(lp.samples, lp.test, h, best[0], best[1], thr);
            out.add(new PredictorTrainer.LayerPredictor(l, -1, h, best[0], best[1], thr, m[0], m[1], m[2], m[3], recallAtZero, tried.toString()));
        }
        out.sort(java.util.Comparator.comparingInt(PredictorTrainer.LayerPredictor::layer));
        float fileThr = Double.isNaN(cfg.thresholdRecall()) ? 0f : (float) out.stream().mapToDouble(PredictorTrainer.LayerPredictor::threshold).min().orElse(0);
        int heldTokens = 0;
        for (int q = 0; q < d.sequences; q++) if (held[q]) heldTokens += d.sequenceLengths[q];
        return new PredictorTrainer.Result(out, fileThr, d.tokens - heldTokens, heldTokens);
    }

    /** The shared layout's hidden size at the per-expert layout's cost per token (at least 1). */
    public static int matchedHidden(int hidden, int dim, int ff, int used) {
        return (int) Math.max(1, Math.round((double) used * hidden * (dim + ff) / (dim + (double) used * ff)));
    }

    /**
     * Trains and measures both layouts on every mixture-of-experts layer of {@code d} (experts used per token:
     * {@code used}), the per-expert predictors at {@code hidden}.
     */
    public static Comparison compare(PredictorDataset d, PredictorTrainer.Config cfg, int hidden, int used, double targetRecall,
                                     java.util.function.Consumer<String> log) throws InterruptedException {
        java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(Math.max(1, cfg.threads()));
        try {
            return compare(d, cfg, hidden, used, targetRecall, log, pool);
        } finally {
            pool.shutdownNow();
        }
    }

    private static Comparison compare(PredictorDataset d, PredictorTrainer.Config cfg, int hidden, int used, double targetRecall,
                                      java.util.function.Consumer<String> log, java.util.concurrent.ExecutorService pool) throws InterruptedException {
        boolean[] held = PredictorTrainer.heldOutSequences(d, cfg);
        int sharedHidden = matchedHidden(hidden, d.dim, d.ff, used);
        List<Row> rows = new ArrayList<>();
        for (int l = 0; l < d.layers; l++) {
            List<PredictorDataset.Unit> experts = expertsOf(d, l);
            if (experts.isEmpty()) continue;
            LayerPairs lp = LayerPairs.of(d, experts, held);
            PredictorTrainer.Samples shared = lp.samples;
            int[][] trainOf = lp.trainOf, testOf = lp.testOf;
            int[] sharedTrainArr = lp.train;
            // the layer's fits in parallel, each from its own seeded stream (so the same whatever the thread count)
            long layerStream = (long) l << 20;
            java.util.concurrent.Future<float[][]> sharedFit = pool.submit(() -> PredictorTrainer.fit(shared, sharedTrainArr, sharedHidden, cfg, layerStream + 0x20000));
            List<java.util.concurrent.Future<float[][]>> ownFits = new ArrayList<>();
            for (int e = 0; e < experts.size(); e++) {
                PredictorDataset.Unit u = experts.get(e);
                int[] train = trainOf[e];
                ownFits.add(pool.submit(() -> PredictorTrainer.fit(PredictorTrainer.Samples.of(d, u), train, hidden, cfg, layerStream + 0x10000 + u.expert)));
            }
            float[][] sw = get(sharedFit);
            if (log != null) log.accept(String.format(Locale.ROOT, "layer %d: per-layer predictor (hidden %d) trained on %,d routed pairs", l, sharedHidden, sharedTrainArr.length));
            for (int e = 0; e < experts.size(); e++) {
                PredictorDataset.Unit u = experts.get(e);
                PredictorTrainer.Samples own = PredictorTrainer.Samples.of(d, u);
                float[][] ow = get(ownFits.get(e));
                int[] test = testOf[e], sharedTest = new int[test.length];
                for (int i = 0; i < test.length; i++) sharedTest[i] = lp.offset[e] + test[i];
                double[] o = PredictorTrainer.metrics(own, test, hidden, ow[0], ow[1], 0f);
                double[] oc = PredictorTrainer.metrics(own, test, hidden, ow[0], ow[1],
                        PredictorTrainer.calibrate(own, test, hidden, ow[0], ow[1], targetRecall));
                double[] s = PredictorTrainer.metrics(shared, sharedTest, sharedHidden, sw[0], sw[1], 0f);
                double[] sc = PredictorTrainer.metrics(shared, sharedTest, sharedHidden, sw[0], sw[1],
                        PredictorTrainer.calibrate(shared, sharedTest, sharedHidden, sw[0], sw[1], targetRecall));
                rows.add(new Row(l, u.expert, trainOf[e].length, test.length, o[3], o[0], o[1], oc[2], s[0], s[1], sc[2]));
            }
        }
        long ownMacs = (long) used * hidden * (d.dim + d.ff), sharedMacs = (long) sharedHidden * (d.dim + (long) used * d.ff);
        return new Comparison(rows, hidden, sharedHidden, ownMacs, sharedMacs, targetRecall);
    }
}
