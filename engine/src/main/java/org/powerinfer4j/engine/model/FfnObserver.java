package org.powerinfer4j.engine.model;

/**
 * Sees every layer's FFN inputs and activations as they are computed (profiling, predictor training).
 * Called on the forward-pass thread after the FFN of {@code layer} for a chunk of {@code batch} tokens.
 * The arrays are the session's live buffers: read them during the call, do not keep them.
 * Activations are complete only with a dense FFN ({@code --sparse off}); sparse modes leave neurons they
 * skipped unspecified.
 */
@FunctionalInterface
public interface FfnObserver {
    /**
     * @param residual    [batch][dim] residual stream after attention, before the FFN norm (the predictors' input)
     * @param activations [batch][ff] post-activation values h (ReLU zeros are exact zeros)
     */
    void onFfn(int layer, int batch, float[] residual, int dim, float[] activations, int ff);

    /**
     * Mixture-of-experts layers (which have no {@link #onFfn} call): after routed expert {@code expert} ran over the
     * {@code tokens} tokens of the chunk that chose it (each token at most once per expert).
     *
     * @param residual    [tokens][dim] those tokens' residual stream before the FFN norm (a per-expert predictor's input)
     * @param activations [tokens][ff] the expert's post-activation values, in the order of the tokens in the chunk
     */
    default void onExpertFfn(int layer, int expert, int tokens, float[] residual, int dim, float[] activations, int ff) {}
}
