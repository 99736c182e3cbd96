package org.powerinfer4j.engine.model;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.BiFunction;
import org.powerinfer4j.engine.tensor.Tensor;

/**
 * One transformer block's tensors: a map from GGUF names without the {@code blk.N.} prefix
 * ({@code attn_q.weight}, {@code ffn_up.bias}, ...) to slices of the mapped file. Every tensor is optional here;
 * the architecture's graph builder says which ones a layer needs and checks their shapes at load.
 *
 * <p>Fused tensors are stored as the views the graph uses: {@code attn_qkv} becomes {@code attn_q/k/v.weight}
 * (row ranges of one matrix), Phi-3's gate–up {@code ffn_up} becomes {@code ffn_gate.weight} +
 * {@code ffn_up.weight}, and 3-D expert tensors {@code ffn_*_exps} become per-expert matrices
 * {@code ffn_gate.E.weight} (E = expert index). Matrices are ggml-shaped {@code {in, out}}: one output feature per
 * row. {@code ffn_down_t} (PowerInfer files) is the down projection stored neuron-major; {@code fc1}/{@code fc2}
 * are PowerInfer's activation predictor, {@code fc1.E}/{@code fc2.E} expert E's (our extension for MoE layers).
 */
public final class LayerWeights {
    private final Map<String, Tensor> tensors;

    public LayerWeights(Map<String, Tensor> tensors) {
        this.tensors = Collections.unmodifiableMap(new LinkedHashMap<>(tensors));
    }

    /** The tensor named {@code name} (e.g. {@code "attn_q.bias"}), or null when the layer has none. */
    public Tensor get(String name) {
        return tensors.get(name);
    }

    public boolean has(String name) {
        return tensors.containsKey(name);
    }

    /** All tensors by name, in load order. */
    public Map<String, Tensor> tensors() {
        return tensors;
    }

    /** These weights with every tensor passed through {@code f(name, tensor)} (e.g. a repacked copy). */
    public LayerWeights map(BiFunction<String, Tensor, Tensor> f) {
        Map<String, Tensor> m = new LinkedHashMap<>();
        tensors.forEach((k, v) -> m.put(k, f.apply(k, v)));
        return new LayerWeights(m);
    }

    public Tensor attnNorm() { return get("attn_norm.weight"); }
    public Tensor wq() { return get("attn_q.weight"); }
    public Tensor wk() { return get("attn_k.weight"); }
    public Tensor wv() { return get("attn_v.weight"); }
    public Tensor wo() { return get("attn_output.weight"); }
    public Tensor ffnNorm() { return get("ffn_norm.weight"); }
    public Tensor ffnGate() { return get("ffn_gate.weight"); }
    public Tensor ffnUp() { return get("ffn_up.weight"); }
    public Tensor ffnDown() { return get("ffn_down.weight"); }
    public Tensor ffnDownT() { return get("ffn_down_t.weight"); }
    public Tensor predictorFc1() { return get("fc1.weight"); }
    public Tensor predictorFc2() { return get("fc2.weight"); }

    public boolean hasPredictor() {
        return predictorFc1() != null && predictorFc2() != null;
    }

    /** Expert {@code e}'s matrix {@code part} (gate, up, down) of a mixture-of-experts FFN, or null. */
    public Tensor expert(String part, int e) {
        return get("ffn_" + part + "." + e + ".weight");
    }

    /** Expert {@code e}'s activation predictor matrices {@code fc1.E} {n_embd, H} and {@code fc2.E} {H, n_ff}, or null. */
    public Tensor expertPredictorFc1(int e) { return get("fc1." + e + ".weight"); }
    public Tensor expertPredictorFc2(int e) { return get("fc2." + e + ".weight"); }

    /** Whether every one of the {@code experts} experts has its predictor. */
    public boolean hasExpertPredictors(int experts) {
        for (int e = 0; e < experts; e++) if (expertPredictorFc1(e) == null || expertPredictorFc2(e) == null) return false;
        return experts > 0;
    }

    /** Expert {@code e}'s bias of {@code part}, or null. */
    public Tensor expertBias(String part, int e) {
        return get("ffn_" + part + "." + e + ".bias");
    }
}
