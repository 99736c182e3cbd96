package org.powerinfer4j.engine.model;

/**
 * The architecture-specific hyper-parameters that shape the layer graph beyond {@link ModelConfig}'s sizes, read
 * from the GGUF keys of {@code general.architecture} (with each family's defaults where the file is silent).
 *
 * @param family            which graph builder applies
 * @param layerNorm         LayerNorm with bias (Falcon, OPT) instead of RMSNorm
 * @param embeddingScale    the input embedding is multiplied by this (Gemma: √dim)
 * @param attnScale         the attention score scale (1/√headDim unless the family says otherwise)
 * @param attnSoftcap       Gemma 2's attention logit soft-cap (0 = none)
 * @param finalSoftcap      Gemma 2's final logit soft-cap (0 = none)
 * @param slidingWindow     sliding-window size of the layers that have one (0 = none)
 * @param swaPattern        layer il has the window when {@code il % swaPattern < swaPattern - 1} (llama.cpp's
 *                          pattern; 1 = every layer, 0 = none)
 * @param ropeBaseSwa       RoPE base of sliding-window layers (Gemma 3), else the normal base
 * @param scaling           RoPE frequency scaling ({@code rope.scaling.*})
 * @param experts           experts per MoE layer (0 = dense FFN)
 * @param expertsUsed       experts chosen per token
 * @param expertFfDim       hidden size of one expert
 * @param expertWeightsNorm the chosen experts' weights are renormalised to sum to 1
 * @param gating            how router logits become weights
 * @param sharedExpertFfDim hidden size of the shared expert (0 = none)
 * @param positionOffset    learned absolute position embeddings read row {@code pos + offset} (OPT: 2); -1 = none
 */
public record ArchParams(Family family, boolean layerNorm, float embeddingScale, float attnScale, float attnSoftcap,
                         float finalSoftcap, int slidingWindow, int swaPattern, float ropeBaseSwa, RopeScaling scaling,
                         int experts, int expertsUsed, int expertFfDim, boolean expertWeightsNorm, Gating gating,
                         int sharedExpertFfDim, int positionOffset) {

    /** Graph builders: one per family of architectures. */
    public enum Family { LLAMA, QWEN2, QWEN3, GEMMA2, GEMMA3, PHI3, FALCON, OPT, GPT_OSS }

    /**
     * Router weights: softmax over all experts then top-k (Mixtral, Qwen), sigmoid per expert then top-k, or top-k
     * of the raw logits then a softmax over the chosen ones (gpt-oss; llama.cpp's {@code SOFTMAX_WEIGHT}).
     */
    public enum Gating { SOFTMAX, SIGMOID, SOFTMAX_WEIGHT }

    /**
     * {@code rope.scaling.type} with its factor; {@code original} context for LongRoPE/YaRN. {@code NONE} and
     * {@code LINEAR} are all the test models and most published files need; YaRN folds into per-dimension
     * frequencies and one magnitude factor (see {@link RopeTables}).
     */
    public record RopeScaling(String type, float factor, int originalContext, float yarnBetaFast, float yarnBetaSlow,
                              float yarnExtFactor, float yarnAttnFactor) {
        public static final RopeScaling NONE = new RopeScaling("none", 1f, 0, 32f, 1f, 0f, 1f);
    }

    /** Plain llama defaults (what {@code llama}, {@code mistral} and {@code bamboo} files use). */
    public static ArchParams llama(int headDim) {
        return new ArchParams(Family.LLAMA, false, 1f, (float) (1.0 / Math.sqrt(headDim)), 0f, 0f, 0, 0, 0f, RopeScaling.NONE,
                0, 0, 0, true, Gating.SOFTMAX, 0, -1);
    }

    /** Whether layer {@code il} attends through a sliding window. */
    public boolean slidingLayer(int il) {
        if (slidingWindow <= 0 || swaPattern <= 0) return false;
        return il % swaPattern < swaPattern - 1 || swaPattern == 1;
    }

    public boolean moe() {
        return experts > 0;
    }
}
