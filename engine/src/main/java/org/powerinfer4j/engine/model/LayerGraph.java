package org.powerinfer4j.engine.model;

import java.util.List;
import org.powerinfer4j.engine.tensor.Tensor;

/**
 * One decoder layer as a short list of ops over named activation buffers — built once per architecture from the
 * GGUF metadata (see {@link Architectures}) and run by every executor. The graph does not know where it runs: the
 * CPU executor ({@link Transformer}) interprets it op by op; a device that can take a whole layer or its attention
 * block says so through {@link LayerOffload} (the device executor, {@code backend.GpuLayers}, runs the same ops).
 *
 * <p>Buffers hold {@code batch} rows, one per token, each as wide as the op that wrote it.
 *
 * @param ops           the ops in execution order
 * @param attentionEnd  ops {@code [0, attentionEnd)} form a self-contained attention block ending in the residual
 *                      add (what a device running "attention only" replaces); -1 when attention and FFN are not
 *                      separable (parallel layers)
 */
public record LayerGraph(List<Op> ops, int attentionEnd) {

    public LayerGraph {
        ops = List.copyOf(ops);
    }

    /** Activation buffers of {@link InferenceState}. */
    public enum Buf {
        /** The residual stream, [batch][dim]. */
        X,
        /** Normed input of attention or FFN, [batch][dim]. */
        XB,
        Q, K, V,
        /** Attention output per head, concatenated, [batch][heads·headDim]. */
        ATT,
        /** Output projection of attention, [batch][dim]. */
        ATT_OUT,
        /** FFN output, [batch][dim] (the {@link FeedForward} contract). */
        FFN_OUT
    }

    /** One operation. */
    public sealed interface Op permits Norm, Linear, HeadNorm, Rope, Attention, Ffn, Add {}

    /**
     * {@code out = norm(in) ⊙ weight (+ bias)} per token over {@code dim} elements: RMSNorm (sum of squares in
     * double, as ggml) or LayerNorm (mean and variance in double). In place when {@code in == out}.
     */
    public record Norm(Buf in, Buf out, Tensor weight, Tensor bias, boolean layerNorm, float eps) implements Op {}

    /** {@code out = weight · in (+ bias)}: matrix–vector for one token, matrix–matrix for a batch. */
    public record Linear(Buf in, Buf out, Tensor weight, Tensor bias) implements Op {}

    /** Per-head RMSNorm of {@code buf} (Qwen3's and Gemma 3's q/k norms): {@code heads} vectors of the weight's length. */
    public record HeadNorm(Buf buf, int heads, Tensor weight, float eps) implements Op {}

    /** Rotates the first rotated dimensions of each of {@code heads} heads of {@code buf} with rope table {@code rope}. */
    public record Rope(Buf buf, int heads, int rope) implements Op {}

    /**
     * Causal attention of Q over the KV cache after storing this chunk's K and V at their positions: per head
     * {@code softmax(scale · q·k (soft-capped)) · v}, over the last {@code window} positions (0 = all), with an
     * optional per-head sink logit (gpt-oss) in the softmax's denominator. Writes {@link Buf#ATT}.
     *
     * @param softcap {@code c · tanh(s / c)} on the scaled scores when > 0 (Gemma 2)
     */
    public record Attention(int window, float scale, float softcap, Tensor sinks) implements Op {}

    /** The layer's FFN ({@link FeedForward}: dense, sparse, hybrid or experts) from {@link Buf#XB} to {@link Buf#FFN_OUT}. */
    public record Ffn() implements Op {}

    /** {@code dst += src}. */
    public record Add(Buf dst, Buf src) implements Op {}
}
