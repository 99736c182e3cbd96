package org.powerinfer4j.engine.model;

/**
 * Whole transformer layers computed elsewhere (a GPU: {@code backend.GpuLayers}, llama.cpp's {@code -ngl}). The
 * {@link Transformer} runs layers {@code [0, firstLayer())} on the CPU (their attention blocks through
 * {@link #attention} when the device has them) and hands the residual stream to {@link #forward}; both must leave
 * {@code s.x} and the CPU KV cache as the CPU path would (so that the CPU can take over at any point).
 */
public interface LayerOffload {
    /** Layers {@code [firstLayer(), layers)} run here. */
    int firstLayer();

    /**
     * Runs the chunk's {@code batch} tokens (residuals {@code s.x[b·dim..]}, positions {@code startPos + b})
     * through the offloaded layers. Returns false — having changed nothing the CPU could not redo — when the device
     * failed; the caller then runs those layers itself.
     */
    boolean forward(InferenceState s, int batch, int startPos);

    /**
     * Whether {@link #forward} takes a sequence batch's scratch ({@link InferenceState#sequenceBatch}): rows of
     * different sequences, row b at {@link InferenceState#sequencePosition}(b) of
     * {@link InferenceState#sequenceState}(b)'s caches (consecutive rows of one sequence at consecutive positions).
     */
    default boolean supportsSequenceBatches() {
        return false;
    }

    /**
     * The attention block of layer {@code layer} (below {@link #firstLayer()}) for the chunk's tokens — norm, Q/K/V,
     * RoPE, attention over the cache, output projection, residual add — when the device holds that layer's
     * attention (PowerInfer's hybrid placement: attention and KV on the GPU, the FFN split). Returns false, having
     * changed nothing, when the CPU should run it.
     */
    default boolean attention(InferenceState s, int layer, int batch, int startPos) {
        return false;
    }

    /**
     * Final norm and output head for the last token of the last {@link #forward} into {@code s.logits()}; false when
     * the head stays on the CPU (or the device failed).
     */
    boolean logits(InferenceState s);
}
