package org.powerinfer4j.engine.api;

import org.powerinfer4j.engine.model.FfnActivation;

/**
 * How to open a model.
 *
 * @param threads       compute threads (llama.cpp's {@code -t}); default: available processors
 * @param contextLength KV cache length per session ({@code -c}); 0 = the model's trained context, capped at
 *                      {@link #DEFAULT_CONTEXT_CAP}
 * @param batchSize     tokens per prefill chunk ({@code -b})
 * @param activation    FFN activation override (null = from the file); needed for ReLU models stored as
 *                      plain llama GGUFs, where nothing in the file says the FFN is ReLU
 */
public record ModelOptions(int threads, int contextLength, int batchSize, FfnActivation activation) {
    public static final int DEFAULT_CONTEXT_CAP = 4096;

    public ModelOptions {
        if (threads < 1) throw new IllegalArgumentException("threads must be >= 1, is " + threads);
        if (contextLength < 0) throw new IllegalArgumentException("context length must be >= 0, is " + contextLength);
        if (batchSize < 1) throw new IllegalArgumentException("batch size must be >= 1, is " + batchSize);
    }

    public static ModelOptions defaults() {
        return new ModelOptions(Runtime.getRuntime().availableProcessors(), 0, 64, null);
    }

    public ModelOptions withThreads(int t) { return new ModelOptions(t, contextLength, batchSize, activation); }
    public ModelOptions withContextLength(int c) { return new ModelOptions(threads, c, batchSize, activation); }
    public ModelOptions withBatchSize(int b) { return new ModelOptions(threads, contextLength, b, activation); }
    public ModelOptions withActivation(FfnActivation a) { return new ModelOptions(threads, contextLength, batchSize, a); }
}
