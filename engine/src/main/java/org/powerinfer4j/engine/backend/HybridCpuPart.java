package org.powerinfer4j.engine.backend;

import java.lang.foreign.ValueLayout;
import org.powerinfer4j.engine.kernels.MatrixOps;
import org.powerinfer4j.engine.kernels.SparseOps;
import org.powerinfer4j.engine.kernels.WorkerPool;
import org.powerinfer4j.engine.model.FfnActivation;
import org.powerinfer4j.engine.model.LayerWeights;
import org.powerinfer4j.engine.sparse.SparseFeedForward;
import org.powerinfer4j.engine.tensor.Tensor;

/**
 * The CPU's half of {@link HybridFeedForward}: the predictor on the CPU, the cold predicted-active neurons (with
 * the FFN's biases, as {@link SparseFeedForward} computes them) and the down bias added once after the merge, with
 * their scratch. Not thread-safe: the hybrid FFN calls it under its lock.
 */
final class HybridCpuPart {
    private final FfnActivation activation;
    private final float threshold;
    private final Tensor[] downT;
    private final int dim;
    final byte[] mask;          // [batch][ffMax]: the mask the CPU computes with
    private final float[] predHidden, predLogits;
    private final int[][] active;
    final int[] activeCount;
    private final int[] union;
    private int[] allNeurons;

    HybridCpuPart(FfnActivation activation, float threshold, Tensor[] downT, int dim, int maxBatch, int ffMax, int hMax) {
        this.activation = activation;
        this.threshold = threshold;
        this.downT = downT;
        this.dim = dim;
        this.mask = new byte[maxBatch * ffMax];
        this.predHidden = new float[maxBatch * hMax];
        this.predLogits = new float[maxBatch * ffMax];
        this.active = new int[maxBatch][ffMax];
        this.activeCount = new int[maxBatch];
        this.union = new int[ffMax];
    }

    /**
     * The predictor on the CPU into {@link #mask}: all neurons ({@code rows} null), or only the listed (cold) rows
     * of fc2 — fc1 is needed whole either way.
     */
    void predict(WorkerPool pool, LayerWeights w, float[] residual, int batch, int ff, int[] rows) {
        Tensor fc1 = w.predictorFc1(), fc2 = w.predictorFc2();
        int hidden = fc1.rows();
        if (batch == 1) MatrixOps.matVec(pool, fc1, residual, 0, predHidden, 0);
        else MatrixOps.matMul(pool, fc1, residual, batch, predHidden);
        for (int i = 0; i < batch * hidden; i++) if (predHidden[i] < 0f) predHidden[i] = 0f;
        if (rows == null) {
            if (batch == 1) MatrixOps.matVec(pool, fc2, predHidden, 0, predLogits, 0);
            else MatrixOps.matMul(pool, fc2, predHidden, batch, predLogits);
            for (int i = 0; i < batch * ff; i++) mask[i] = (byte) (predLogits[i] >= threshold ? 1 : 0);
        } else {
            if (batch == 1) SparseOps.rowSparseMatVec(pool, fc2, rows, rows.length, predHidden, 0, predLogits, 0);
            else SparseOps.rowSparseMatMul(pool, fc2, rows, rows.length, predHidden, batch, predLogits, ff);
            for (int b = 0; b < batch; b++)
                for (int r : rows) mask[b * ff + r] = (byte) (predLogits[b * ff + r] >= threshold ? 1 : 0);
        }
    }

    /**
     * The cold predicted-active neurons into {@code out} (overwritten): gate/up rows, activation, down_t axpy, as
     * {@link SparseFeedForward} computes them, restricted to {@code cold}, over rows of {@code x}, with {@code g}/{@code u}
     * as batch·ff scratch. Returns the neurons computed.
     */
    int computeCold(WorkerPool pool, int layer, LayerWeights w, int batch, int ff, int[] cold, float[] x, float[] g, float[] u, float[] out) {
        int total = 0;
        for (int b = 0; b < batch; b++) {
            int n = 0;
            int[] a = active[b];
            for (int r : cold) if (mask[b * ff + r] != 0) a[n++] = r;
            activeCount[b] = n;
            total += n;
        }
        int[] rows;
        int count;
        if (batch == 1) {
            rows = active[0];
            count = activeCount[0];
        } else {
            count = 0;
            for (int r : cold)
                for (int b = 0; b < batch; b++)
                    if (mask[b * ff + r] != 0) {
                        union[count++] = r;
                        break;
                    }
            rows = union;
        }
        Tensor gate = w.ffnGate(), up = w.ffnUp();
        if (gate != null) {
            rowSparse(pool, gate, rows, count, x, batch, g, ff);
            rowSparse(pool, up, rows, count, x, batch, u, ff);
            addBias(w.get("ffn_gate.bias"), rows, count, batch, g, ff);
            addBias(w.get("ffn_up.bias"), rows, count, batch, u, ff);
        } else {
            rowSparse(pool, up, rows, count, x, batch, g, ff);
            addBias(w.get("ffn_up.bias"), rows, count, batch, g, ff);
        }
        for (int b = 0; b < batch; b++) {
            int o = b * ff;
            for (int i = 0; i < count; i++) {
                int r = rows[i];
                g[o + r] = mask[o + r] == 0 ? 0f : gate == null ? Math.max(g[o + r], 0f) : act(g[o + r], u[o + r]);
            }
        }
        SparseOps.sparseAxpy(pool, downT[layer], rows, count, g, ff, batch, out);
        return total;
    }

    /** out[b·ff + r] += bias[r] for the computed rows (masked-out entries are zeroed after, by the activation step). */
    private static void addBias(Tensor bias, int[] rows, int count, int batch, float[] out, int ff) {
        if (bias == null) return;
        for (int i = 0; i < count; i++) {
            int r = rows[i];
            float v = bias.data().getAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, r);
            for (int b = 0; b < batch; b++) out[b * ff + r] += v;
        }
    }

    private static void rowSparse(WorkerPool pool, Tensor w, int[] rows, int count, float[] x, int batch, float[] out, int ff) {
        if (batch == 1) SparseOps.rowSparseMatVec(pool, w, rows, count, x, 0, out, 0);
        else SparseOps.rowSparseMatMul(pool, w, rows, count, x, batch, out, ff);
    }

    private float act(float gate, float up) {
        if (gate <= 0f) return 0f;
        return activation == FfnActivation.DRELU ? (up > 0f ? gate * up : 0f) : gate * up;
    }

    /** y += ffn_down.bias per token (OPT), once, after the hot and cold parts are merged. */
    void addDownBias(LayerWeights w, float[] y, int batch) {
        Tensor b = w.get("ffn_down.bias");
        if (b == null) return;
        for (int t = 0; t < batch; t++)
            for (int d = 0; d < dim; d++) y[t * dim + d] += b.data().getAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, d);
    }

    int[] allNeurons(int ff) {
        if (allNeurons == null || allNeurons.length != ff) {
            allNeurons = new int[ff];
            for (int r = 0; r < ff; r++) allNeurons[r] = r;
        }
        return allNeurons;
    }
}
