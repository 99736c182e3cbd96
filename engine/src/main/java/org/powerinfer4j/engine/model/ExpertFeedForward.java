package org.powerinfer4j.engine.model;

import org.powerinfer4j.engine.kernels.WorkerPool;

/**
 * How a mixture-of-experts layer ({@link MoeFeedForward}) computes one routed expert over the tokens the router sent
 * to it: densely ({@link #DENSE}), or over the neurons that fire (the sparse package's expert FFN, ReLU experts).
 */
public interface ExpertFeedForward {
    /** Every neuron of the expert: {@link DenseFeedForward}'s MLP over the expert's matrices and biases. */
    ExpertFeedForward DENSE = (pool, activation, layer, e, w, x, residual, tokens, n, hb, hb2, y, scratch, seq) ->
            DenseFeedForward.compute(pool, activation, w.expert("gate", e), w.expert("up", e), w.expert("down", e), null,
                    w.expertBias("gate", e), w.expertBias("up", e), w.expertBias("down", e), x, n, hb, hb2, y, seq);

    /** Per-session scratch for up to {@code maxTokens} tokens of experts with {@code ff} neurons (null: none needed). */
    default Object newScratch(int maxTokens, int ff) {
        return null;
    }

    /** Whether sequence batches (decode steps of several sessions in one pass) may route their tokens here. */
    default boolean supportsSequenceBatches() {
        return true;
    }

    /** Whether {@link #compute} reads the tokens' residual rows (per-expert predictors); otherwise it gets null. */
    default boolean needsResidual() {
        return false;
    }

    /**
     * Called once per layer pass before its experts, with all {@code batch} tokens' residual rows when
     * {@link #needsResidual}: work the layer's experts share (a layer-wide predictor's hidden layer) is done here
     * once per token instead of once per routed expert.
     */
    default void beginLayer(WorkerPool pool, int layer, LayerWeights w, float[] residual, int batch, Object scratch, InferenceState seq) {}

    /**
     * y[0..n) = expert {@code e} of {@code layer} over x[0..n) (rows of n_embd), the tokens at batch rows
     * {@code tokens[0..n)}; {@code residual} holds the same
     * tokens' residual stream before the FFN norm (the predictors' input) when {@link #needsResidual}; {@code hb}/{@code hb2}
     * are scratch of n·n_ff floats; after a dense expert {@code hb} holds its activations h (what profiling, which runs
     * dense, observes). {@code seq} is the layer's state: in a sequence batch ({@link InferenceState#sequenceBatch})
     * the n tokens belong to different sequences, and every product must run per token where it says so
     * ({@link InferenceState#perTokenFor}, {@link InferenceState#perTokenProducts}), so each token gets its result alone.
     */
    void compute(WorkerPool pool, FfnActivation activation, int layer, int e, LayerWeights w, float[] x, float[] residual, int[] tokens, int n,
                 float[] hb, float[] hb2, float[] y, Object scratch, InferenceState seq);
}
