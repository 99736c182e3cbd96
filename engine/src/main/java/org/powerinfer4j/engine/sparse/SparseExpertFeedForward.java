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

    @Override
    public Object newScratch(int maxTokens, int ff) {
        return new SparseMlp.Scratch(maxTokens, ff, maxPredictorHidden);
    }

    @Override
    public boolean needsResidual() {
        return mlp.mode() == SparseMode.PREDICT;
    }

    @Override
    public void compute(WorkerPool pool, FfnActivation activation, int layer, int e, LayerWeights w, float[] x, float[] residual, int n,
                        float[] hb, float[] hb2, float[] y, Object scratch, InferenceState seq) {
        SparseMlp.Weights m = new SparseMlp.Weights(w.expert("gate", e), w.expert("up", e), downT[layer][e], w.expertBias("gate", e),
                w.expertBias("up", e), w.expertBias("down", e), w.expertPredictorFc1(e), w.expertPredictorFc2(e));
        mlp.compute(pool, layer, m, x, residual, n, hb, hb2, y, (SparseMlp.Scratch) scratch, seq != null && seq.perTokenProducts());
    }

    /** Dense experts with statistics, for {@code --sparse off} on ReLU experts: counts the neurons that fired per (token, expert). */
    public static ExpertFeedForward denseWithStats(SparsityStats stats) {
        return (pool, activation, layer, e, w, x, residual, n, hb, hb2, y, scratch, seq) -> {
            ExpertFeedForward.DENSE.compute(pool, activation, layer, e, w, x, residual, n, hb, hb2, y, scratch, seq);
            stats.recordDense(layer, hb, n, w.expert("up", e).rows());
        };
    }
}
