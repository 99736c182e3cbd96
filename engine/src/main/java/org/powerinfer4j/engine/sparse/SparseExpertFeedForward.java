package org.powerinfer4j.engine.sparse;

import org.powerinfer4j.engine.kernels.WorkerPool;
import org.powerinfer4j.engine.model.ExpertFeedForward;
import org.powerinfer4j.engine.model.FfnActivation;
import org.powerinfer4j.engine.model.InferenceState;
import org.powerinfer4j.engine.model.LayerWeights;
import org.powerinfer4j.engine.tensor.Tensor;

/**
 * Neuron sparsity inside the routed experts of a mixture-of-experts layer with ReLU-family experts (TurboSparse-
 * Mixtral's dReLU, SmallThinker's ReLU, a Mixtral-style file run with {@code --ffn-act relu}): on top of the
 * router's choice, each expert chooses the neurons that fire for the tokens sent to it — by its ReLU selector
 * computed densely ({@link SparseMode#EXACT}) or by its own predictor {@code fc1.E}/{@code fc2.E} over the tokens'
 * residual rows ({@link SparseMode#PREDICT}) — then computes gate/up only over those rows and the down projection as a
 * sparse axpy over its neuron-major copy ({@link SparseMlp}). A prompt's tokens routed to one expert share the union
 * of their active rows, masked per token. {@code stats} counts one record per (token, expert) visit, so its fraction
 * is per expert a token runs.
 */
public final class SparseExpertFeedForward implements ExpertFeedForward {
    private final SparseMlp mlp;
    private final Tensor[][] downT;   // [layer][expert]: neuron-major down projections (null for dense layers)
    private final int maxPredictorHidden;

    /** {@code mode} exact or predict (per-expert predictors with up to {@code maxPredictorHidden} hidden units, logit ≥ {@code threshold}). */
    public SparseExpertFeedForward(SparseMode mode, FfnActivation activation, float threshold, Tensor[][] downT, int maxPredictorHidden,
                                   SparsityStats stats, boolean verify) {
        this.mlp = new SparseMlp(mode, activation, threshold, stats, verify);
        this.downT = downT;
        this.maxPredictorHidden = Math.max(1, maxPredictorHidden);
    }

    public SparseMode mode() { return mlp.mode(); }

    /** Per-session buffers: the MLP's, and a layer-wide predictor's hidden rows for all the pass's tokens. */
    private static final class Scratch {
        final SparseMlp.Scratch mlp;
        final float[] layerHidden;
        Tensor sharedFc1;   // the fc1 whose hidden rows layerHidden holds for this layer pass; null: none

        Scratch(int maxTokens, int ff, int maxHidden) {
            mlp = new SparseMlp.Scratch(maxTokens, ff, maxHidden);
            layerHidden = new float[maxTokens * maxHidden];
        }
    }

    @Override
    public Object newScratch(int maxTokens, int ff) {
        return new Scratch(maxTokens, ff, maxPredictorHidden);
    }

    @Override
    public boolean needsResidual() {
        return mlp.mode() == SparseMode.PREDICT;
    }

    /**
     * A layer-wide predictor (every expert's {@code fc1.E} is one shared tensor, {@code train-predictors
     * --moe-predictor layer}): its hidden layer relu(fc1·r) depends only on the token, so it is computed once per
     * token here, not once per routed expert; each expert then runs only its block of {@code fc2}. The products run
     * as each expert's would (per token in a sequence batch), so the result does not change.
     */
    @Override
    public void beginLayer(WorkerPool pool, int layer, LayerWeights w, float[] residual, int batch, Object scratch, InferenceState seq) {
        Scratch sc = (Scratch) scratch;
        sc.sharedFc1 = null;
        Tensor fc1 = w.expertPredictorFc1(0);
        if (fc1 == null || w.expertPredictorFc1(1) != fc1 || fc1.rows() > maxPredictorHidden) return;
        SparseMlp.hidden(pool, fc1, residual, batch, sc.layerHidden, seq != null && seq.perTokenProducts());
        sc.sharedFc1 = fc1;
    }

    @Override
    public void compute(WorkerPool pool, FfnActivation activation, int layer, int e, LayerWeights w, float[] x, float[] residual, int[] tokens,
                        int n, float[] hb, float[] hb2, float[] y, Object scratch, InferenceState seq) {
        Scratch sc = (Scratch) scratch;
        SparseMlp.Weights m = new SparseMlp.Weights(w.expert("gate", e), w.expert("up", e), downT[layer][e], w.expertBias("gate", e),
                w.expertBias("up", e), w.expertBias("down", e), w.expertPredictorFc1(e), w.expertPredictorFc2(e));
        boolean shared = mlp.mode() == SparseMode.PREDICT && sc.sharedFc1 != null && m.fc1() == sc.sharedFc1;
        if (shared) {
            int h = m.fc1().rows();
            for (int i = 0; i < n; i++) System.arraycopy(sc.layerHidden, tokens[i] * h, sc.mlp.predHidden, i * h, h);
        }
        mlp.compute(pool, layer, m, x, residual, n, hb, hb2, y, sc.mlp, seq != null && seq.perTokenProducts(), shared);
    }

    /** Dense experts with statistics, for {@code --sparse off} on ReLU experts: counts the neurons that fired per (token, expert). */
    public static ExpertFeedForward denseWithStats(SparsityStats stats) {
        return (pool, activation, layer, e, w, x, residual, tokens, n, hb, hb2, y, scratch, seq) -> {
            ExpertFeedForward.DENSE.compute(pool, activation, layer, e, w, x, residual, tokens, n, hb, hb2, y, scratch, seq);
            stats.recordDense(layer, hb, n, w.expert("up", e).rows());
        };
    }
}
