package org.powerinfer4j.engine.sparse;

import org.powerinfer4j.engine.kernels.WorkerPool;
import org.powerinfer4j.engine.model.DenseFeedForward;
import org.powerinfer4j.engine.model.FeedForward;
import org.powerinfer4j.engine.model.FfnActivation;
import org.powerinfer4j.engine.model.InferenceState;
import org.powerinfer4j.engine.model.LayerWeights;
import org.powerinfer4j.engine.tensor.Tensor;

/**
 * The FFN of ReLU-family models computed only over neurons that fire (PowerInfer's neuron-aware operators): each
 * layer's MLP through {@link SparseMlp}, with the layer's predictor ({@link SparseMode#PREDICT}) or its ReLU
 * selector ({@link SparseMode#EXACT}) choosing the active neurons, and the neuron-major down projection.
 */
public final class SparseFeedForward implements FeedForward {
    private final SparseMlp mlp;
    private final Tensor[] downT;          // neuron-major down projection per layer
    private final int maxPredictorHidden;

    public SparseFeedForward(SparseMode mode, FfnActivation activation, float threshold, Tensor[] downT, int maxPredictorHidden,
                             SparsityStats stats, boolean verify) {
        this.mlp = new SparseMlp(mode, activation, threshold, stats, verify);
        this.downT = downT;
        this.maxPredictorHidden = Math.max(1, maxPredictorHidden);
    }

    public SparseMode mode() { return mlp.mode(); }
    public float threshold() { return mlp.threshold(); }
    public SparsityStats stats() { return mlp.stats(); }

    /**
     * Sequence batches (decode steps of several sessions in one pass): with per-token products every product a
     * token's result depends on (predictor, selector, gate/up over the union's rows) runs through the fused
     * mat-vec kernels per token and the dense fallback is off, so each token's active set and output are exactly
     * its own alone; the union's rows are still read once for all tokens (and the down projection's batch path
     * rounds as the single-token one).
     */
    @Override
    public boolean supportsSequenceBatches() {
        return true;
    }

    @Override
    public void compute(WorkerPool pool, int layer, LayerWeights w, InferenceState s, int batch) {
        int ff = w.ffnUp().rows();
        // biases (OPT's MLP): part of the pre-activation, so added before the ReLU decides
        SparseMlp.Weights m = new SparseMlp.Weights(w.ffnGate(), w.ffnUp(), downT[layer], w.get("ffn_gate.bias"), w.get("ffn_up.bias"),
                w.get("ffn_down.bias"), w.predictorFc1(), w.predictorFc2());
        SparseMlp.Scratch sc = s.ffnScratch(() -> new SparseMlp.Scratch(s.maxBatch(), ff, maxPredictorHidden));
        mlp.compute(pool, layer, m, s.ffnInput(), s.residual(), batch, s.ffnGate(), s.ffnUp(), s.ffnOutput(), sc, s.perTokenProducts());
    }

    /** Dense FFN with statistics, for {@code --sparse off} on ReLU models (counts the neurons that fired). */
    public static FeedForward denseWithStats(FfnActivation a, SparsityStats stats) {
        DenseFeedForward dense = new DenseFeedForward(a);
        return (pool, layer, w, s, batch) -> {
            dense.compute(pool, layer, w, s, batch);
            if (stats != null) stats.recordDense(layer, s.ffnGate(), batch, w.ffnUp().rows());
        };
    }
}
