package org.powerinfer4j.engine.sparse;

import org.powerinfer4j.engine.kernels.WorkerPool;
import org.powerinfer4j.engine.model.ExpertFeedForward;
import org.powerinfer4j.engine.model.FfnActivation;
import org.powerinfer4j.engine.model.LayerWeights;
import org.powerinfer4j.engine.tensor.Tensor;

/**
 * Neuron sparsity inside the routed experts of a mixture-of-experts layer with ReLU-family experts (TurboSparse-
 * Mixtral's dReLU, SmallThinker's ReLU, a Mixtral-style file run with {@code --ffn-act relu}): on top of the
 * router's choice, each expert computes its ReLU selector for the tokens sent to it, then gate/up only over the rows
 * that fire and the down projection as a sparse axpy over its neuron-major copy ({@link SparseMlp},
 * {@link SparseMode#EXACT}). A prompt's tokens routed to one expert share the union of their active rows.
 * {@code stats} counts one record per (token, expert) visit, so its fraction is per expert a token runs.
 */
public final class SparseExpertFeedForward implements ExpertFeedForward {
    private final SparseMlp mlp;
    private final Tensor[][] downT;   // [layer][expert]: neuron-major down projections (null for dense layers)

    public SparseExpertFeedForward(FfnActivation activation, Tensor[][] downT, SparsityStats stats) {
        this.mlp = new SparseMlp(SparseMode.EXACT, activation, 0f, stats, false);
        this.downT = downT;
    }

    @Override
    public Object newScratch(int maxTokens, int ff) {
        return new SparseMlp.Scratch(maxTokens, ff, 1);
    }

    @Override
    public void compute(WorkerPool pool, FfnActivation activation, int layer, int e, LayerWeights w, float[] x, int n, float[] hb, float[] hb2,
                        float[] y, Object scratch) {
        SparseMlp.Weights m = new SparseMlp.Weights(w.expert("gate", e), w.expert("up", e), downT[layer][e], w.expertBias("gate", e),
                w.expertBias("up", e), w.expertBias("down", e), null, null);
        mlp.compute(pool, layer, m, x, null, n, hb, hb2, y, (SparseMlp.Scratch) scratch, false);
    }

    /** Dense experts with statistics, for {@code --sparse off} on ReLU experts: counts the neurons that fired per (token, expert). */
    public static ExpertFeedForward denseWithStats(SparsityStats stats) {
        return (pool, activation, layer, e, w, x, n, hb, hb2, y, scratch) -> {
            ExpertFeedForward.DENSE.compute(pool, activation, layer, e, w, x, n, hb, hb2, y, scratch);
            stats.recordDense(layer, hb, n, w.expert("up", e).rows());
        };
    }
}
