package org.powerinfer4j.engine.model;

import org.powerinfer4j.engine.gguf.GGUFFile;

/**
 * Hyper-parameters of a decoder-only transformer, read from GGUF metadata ({@code <arch>.*} keys) by
 * {@link Architectures}; {@link #params()} holds what shapes each family's layer graph.
 *
 * @param headDim   per-head size of Q, K and V ({@code attention.key_length}, default dim / heads)
 * @param ffDim     FFN hidden size (for MoE layers: one expert's, {@code expert_feed_forward_length})
 * @param rmsEps    the norm epsilon (RMSNorm's, or LayerNorm's for families that use it)
 * @param ropeDim   dimensions rotated per head ({@code rope.dimension_count}, default headDim; 0 = no RoPE)
 */
public record ModelConfig(String architecture, int dim, int layers, int heads, int kvHeads, int headDim, int ffDim,
                          int vocabSize, int trainedContext, float rmsEps, float ropeFreqBase, int ropeDim,
                          RopeType ropeType, FfnActivation activation, ArchParams params) {

    public ModelConfig(String architecture, int dim, int layers, int heads, int kvHeads, int headDim, int ffDim,
                       int vocabSize, int trainedContext, float rmsEps, float ropeFreqBase, int ropeDim,
                       RopeType ropeType, FfnActivation activation) {
        this(architecture, dim, layers, heads, kvHeads, headDim, ffDim, vocabSize, trainedContext, rmsEps, ropeFreqBase, ropeDim,
                ropeType, activation, ArchParams.llama(headDim));
    }

    public static ModelConfig fromGGUF(GGUFFile f) {
        return Architectures.config(f);
    }

    public int kvDim() {
        return kvHeads * headDim;
    }

    public int qDim() {
        return heads * headDim;
    }

    public ModelConfig withActivation(FfnActivation a) {
        return new ModelConfig(architecture, dim, layers, heads, kvHeads, headDim, ffDim, vocabSize, trainedContext, rmsEps,
                ropeFreqBase, ropeDim, ropeType, a, params);
    }
}
