package org.powerinfer4j.engine.model;

import org.powerinfer4j.engine.kernels.WorkerPool;

/**
 * A layer's FFN block. Reads the normed input from {@code s.xb} (and the residual stream {@code s.x}, which
 * activation predictors use), writes the FFN output to {@code s.xb2}, for {@code batch} tokens. The dense
 * implementation computes every neuron; sparse implementations compute only the neurons that fire.
 */
public interface FeedForward {
    void compute(WorkerPool pool, int layer, LayerWeights w, InferenceState s, int batch);

    /**
     * Whether {@link #compute} can take a sequence batch ({@link InferenceState#sequenceBatch}: each token another
     * sequence's decode step) and, for a per-token one ({@link InferenceState#perTokenProducts}), give each token
     * exactly its result alone.
     */
    default boolean supportsSequenceBatches() {
        return false;
    }
}
