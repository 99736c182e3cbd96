package org.powerinfer4j.engine.sparse;

import org.powerinfer4j.engine.kernels.MatrixOps;
import org.powerinfer4j.engine.kernels.SparseOps;
import org.powerinfer4j.engine.kernels.WorkerPool;
import org.powerinfer4j.engine.model.FfnActivation;
import org.powerinfer4j.engine.tensor.Tensor;

/**
 * One ReLU-family MLP computed only over the neurons that fire: a layer's FFN ({@link SparseFeedForward}) or one
 * routed expert of a mixture-of-experts layer ({@link SparseExpertFeedForward}).
 *
 * <p>Per token: choose the active set A — by the predictor, {@code fc2·relu(fc1·x) ≥ threshold} on the residual
 * stream before the FFN norm ({@link SparseMode#PREDICT}), or by the non-zero ReLU selector computed densely
 * ({@link SparseMode#EXACT}) — then compute gate/up only for rows in A, h_r = act(gate_r, up_r), and
 * y = Σ_{r∈A, h_r≠0} h_r·down_t[r,:]. For a batch the union of the tokens' active sets is computed once per weight
 * row (or the dense product above {@link #DENSE_FALLBACK_DENSITY}), and h is masked per token so the result equals
 * token-by-token evaluation.
 */
final class SparseMlp {
    /** Union density above which a batch uses the dense matrix product for gate/up (row gathering stops paying). */
    static final double DENSE_FALLBACK_DENSITY = 0.5;
    private static final java.lang.foreign.ValueLayout.OfFloat F32 =
            java.lang.foreign.ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(java.nio.ByteOrder.LITTLE_ENDIAN);

    /** The MLP's tensors; {@code gate}, the biases and the predictor may be null. */
    record Weights(Tensor gate, Tensor up, Tensor downT, Tensor gateBias, Tensor upBias, Tensor downBias, Tensor fc1, Tensor fc2) {
        /** The matrix whose ReLU decides which neurons fire. */
        Tensor selector() { return gate != null ? gate : up; }
        Tensor selectorBias() { return gate != null ? gateBias : upBias; }
    }

    /** Per-session buffers for up to {@code batch} tokens of an MLP with {@code ff} neurons. */
    static final class Scratch {
        final float[] predHidden, predLogits;
        final int[][] active;    // per token: active neuron ids
        final int[] activeCount;
        final int[] union;
        final boolean[] inUnion, mine;

        Scratch(int batch, int ff, int maxHidden) {
            predHidden = new float[batch * Math.max(1, maxHidden)];
            predLogits = new float[batch * ff];
            active = new int[batch][ff];
            activeCount = new int[batch];
            union = new int[ff];
            inUnion = new boolean[ff];
            mine = new boolean[ff];
        }
    }

    private final SparseMode mode;
    private final FfnActivation activation;
    private final float threshold;
    private final SparsityStats stats;
    private final boolean verify;          // predict mode: also compute the true active set for recall/precision

    SparseMlp(SparseMode mode, FfnActivation activation, float threshold, SparsityStats stats, boolean verify) {
        if (mode == SparseMode.OFF) throw new IllegalArgumentException("use DenseFeedForward for --sparse off");
        if (!activation.isRelu()) throw new IllegalArgumentException("sparse FFN needs a ReLU-family activation, not " + activation);
        this.mode = mode;
        this.activation = activation;
        this.threshold = threshold;
        this.stats = stats;
        this.verify = verify;
    }

    SparseMode mode() { return mode; }
    float threshold() { return threshold; }
    SparsityStats stats() { return stats; }

    /**
     * y[0..batch) = the MLP over x[0..batch) (rows of the weights' row length); {@code residual} feeds the predictor;
     * {@code g}/{@code u} are scratch of batch·ff floats. With {@code perToken} every product a token's result depends
     * on runs through the fused per-token kernels and the dense fallback is off, so each token gets exactly its result alone.
     */
    void compute(WorkerPool pool, int layer, Weights m, float[] x, float[] residual, int batch, float[] g, float[] u, float[] y,
                 Scratch sc, boolean perToken) {
        compute(pool, layer, m, x, residual, batch, g, u, y, sc, perToken, false);
    }

    /** The same; with {@code hiddenReady} the predictor's hidden layer relu(fc1·residual) is already in {@code sc.predHidden}. */
    void compute(WorkerPool pool, int layer, Weights m, float[] x, float[] residual, int batch, float[] g, float[] u, float[] y,
                 Scratch sc, boolean perToken, boolean hiddenReady) {
        int ff = m.up().rows(), dim = m.up().rowLength();
        Tensor gate = m.gate(), up = m.up();

        // 1. active sets per token
        if (mode == SparseMode.PREDICT) {
            predict(pool, m, residual, batch, ff, sc, perToken, hiddenReady);
            if (verify && stats != null) {   // true activations, for recall/precision only
                project(pool, m.selector(), x, batch, g, perToken);
                addBias(g, m.selectorBias(), null, ff, batch, ff);
                for (int b = 0; b < batch; b++) recordVerified(layer, sc, b, g, b * ff, ff);
            }
        } else {
            project(pool, m.selector(), x, batch, g, perToken);
            addBias(g, m.selectorBias(), null, ff, batch, ff);
            for (int b = 0; b < batch; b++) {
                int n = 0;
                for (int r = 0; r < ff; r++) if (g[b * ff + r] > 0f) sc.active[b][n++] = r;
                sc.activeCount[b] = n;
                if (stats != null) stats.record(layer, n, n, n);
            }
        }
        if (mode == SparseMode.PREDICT && !verify && stats != null)
            for (int b = 0; b < batch; b++) stats.record(layer, sc.activeCount[b], -1, 0);

        // 2. gate/up over the active rows (EXACT already has the selector densely)
        int[] rows;
        int count;
        if (batch == 1) {
            rows = sc.active[0];
            count = sc.activeCount[0];
        } else {
            count = union(sc, batch, ff);
            rows = sc.union;
        }
        boolean dense = batch > 1 && !perToken && count > DENSE_FALLBACK_DENSITY * ff;
        if (mode == SparseMode.PREDICT && gate != null) {
            compute(pool, gate, rows, count, x, batch, g, ff, dense, perToken);
            addBias(g, m.gateBias(), dense ? null : rows, count, batch, ff);
        }
        if (gate != null) {
            compute(pool, up, rows, count, x, batch, u, ff, dense, perToken);
            addBias(u, m.upBias(), dense ? null : rows, count, batch, ff);
        } else if (mode == SparseMode.PREDICT) {
            compute(pool, up, rows, count, x, batch, g, ff, dense, perToken);
            addBias(g, m.upBias(), dense ? null : rows, count, batch, ff);
        }

        // 3. activation, masked per token to its own active set
        for (int b = 0; b < batch; b++) {
            int o = b * ff;
            if (batch > 1) maskInactive(sc, b, g, u, o, ff);
            int[] a = sc.active[b];
            for (int i = 0; i < sc.activeCount[b]; i++) {
                int r = a[i];
                g[o + r] = gate == null ? Math.max(g[o + r], 0f) : act(g[o + r], u[o + r]);
            }
        }

        // 4. down: sparse axpy over the computed rows, zero activations skipped
        SparseOps.sparseAxpy(pool, m.downT(), rows, count, g, ff, batch, y);
        if (m.downBias() != null) addBias(y, m.downBias(), null, dim, batch, dim);
    }

    /** buf[b][r] += bias[r] for the listed rows (all {@code n} rows when {@code rows} is null) of each token. */
    private static void addBias(float[] buf, Tensor bias, int[] rows, int count, int batch, int width) {
        if (bias == null) return;
        var bd = bias.data();
        int n = rows == null ? width : count;
        for (int b = 0; b < batch; b++)
            for (int i = 0; i < n; i++) {
                int r = rows == null ? i : rows[i];
                buf[b * width + r] += bd.getAtIndex(F32, r);
            }
    }

    private float act(float gate, float up) {
        if (gate <= 0f) return 0f;
        return activation == FfnActivation.DRELU ? (up > 0f ? gate * up : 0f) : gate * up;
    }

    /** Predictor logits per token, then the active list {r : logit_r ≥ threshold}. */
    private void predict(WorkerPool pool, Weights m, float[] residual, int batch, int ff, Scratch sc, boolean perToken, boolean hiddenReady) {
        if (!hiddenReady) hidden(pool, m.fc1(), residual, batch, sc.predHidden, perToken);
        project(pool, m.fc2(), sc.predHidden, batch, sc.predLogits, perToken);
        for (int b = 0; b < batch; b++) {
            int n = 0;
            for (int r = 0; r < ff; r++) if (sc.predLogits[b * ff + r] >= threshold) sc.active[b][n++] = r;
            sc.activeCount[b] = n;
        }
    }

    /** out[0..batch·H) = relu(fc1 · residual) per token: the predictor's hidden layer. */
    static void hidden(WorkerPool pool, Tensor fc1, float[] residual, int batch, float[] out, boolean perToken) {
        int hidden = fc1.rows();
        project(pool, fc1, residual, batch, out, perToken);
        for (int i = 0; i < batch * hidden; i++) if (out[i] < 0f) out[i] = 0f;
    }

    private void recordVerified(int layer, Scratch sc, int b, float[] g, int off, int ff) {
        int truly = 0, both = 0;
        int[] a = sc.active[b];
        int ai = 0, n = sc.activeCount[b];
        for (int r = 0; r < ff; r++) {
            boolean predicted = ai < n && a[ai] == r;
            if (predicted) ai++;
            if (g[off + r] > 0f) {
                truly++;
                if (predicted) both++;
            }
        }
        stats.record(layer, n, truly, both);
    }

    private static int union(Scratch sc, int batch, int ff) {
        java.util.Arrays.fill(sc.inUnion, false);
        for (int b = 0; b < batch; b++)
            for (int i = 0; i < sc.activeCount[b]; i++) sc.inUnion[sc.active[b][i]] = true;
        int n = 0;
        for (int r = 0; r < ff; r++) if (sc.inUnion[r]) sc.union[n++] = r;
        return n;
    }

    /** Zeroes the computed values of neurons in the batch union that token b did not select. */
    private static void maskInactive(Scratch sc, int b, float[] g, float[] u, int off, int ff) {
        boolean[] mine = sc.mine;   // reused: no allocation per token and layer
        java.util.Arrays.fill(mine, false);
        for (int i = 0; i < sc.activeCount[b]; i++) mine[sc.active[b][i]] = true;
        for (int r = 0; r < ff; r++)
            if (!mine[r]) {
                g[off + r] = 0f;
                u[off + r] = 0f;
            }
    }

    private static void compute(WorkerPool pool, Tensor w, int[] rows, int count, float[] x, int batch, float[] out, int ff, boolean dense,
                                boolean perToken) {
        if (dense) MatrixOps.matMul(pool, w, x, batch, out);
        else if (batch == 1) SparseOps.rowSparseMatVec(pool, w, rows, count, x, 0, out, 0);
        else if (perToken) SparseOps.rowSparseMatVecBatch(pool, w, rows, count, x, batch, out, ff);
        else SparseOps.rowSparseMatMul(pool, w, rows, count, x, batch, out, ff);
    }

    private static void project(WorkerPool pool, Tensor w, float[] in, int batch, float[] out, boolean perToken) {
        if (batch == 1) MatrixOps.matVec(pool, w, in, 0, out, 0);
        else if (perToken) MatrixOps.matVecBatch(pool, w, in, batch, out);
        else MatrixOps.matMul(pool, w, in, batch, out);
    }
}
