package org.powerinfer4j.engine.model;

import org.powerinfer4j.engine.tensor.Tensor;

/**
 * One transformer block's tensors, named as in GGUF ({@code blk.N.*}). Matrices are ggml-shaped
 * {@code {in, out}}: one output feature per row. {@code ffnDownT} ({@code ffn_down_t}, PowerInfer files) is the
 * down projection stored neuron-major; {@code fc1}/{@code fc2} are PowerInfer's activation predictor. Either
 * {@code ffnDown} or {@code ffnDownT} is present.
 */
public record LayerWeights(Tensor attnNorm, Tensor wq, Tensor wk, Tensor wv, Tensor wo,
                           Tensor ffnNorm, Tensor ffnGate, Tensor ffnUp, Tensor ffnDown, Tensor ffnDownT,
                           Tensor predictorFc1, Tensor predictorFc2) {
    public boolean hasPredictor() {
        return predictorFc1 != null && predictorFc2 != null;
    }
}
