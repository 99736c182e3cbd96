package org.powerinfer4j.engine.api;

import org.powerinfer4j.engine.backend.GpuOptions;
import org.powerinfer4j.engine.model.FfnActivation;
import org.powerinfer4j.engine.sparse.SparseMode;
import org.powerinfer4j.engine.tensor.GGMLType;

/**
 * How to open a model.
 *
 * @param threads       compute threads (llama.cpp's {@code -t}); default: available processors
 * @param contextLength KV cache length per session ({@code -c}); 0 = the model's trained context, capped at
 *                      {@link #DEFAULT_CONTEXT_CAP}
 * @param batchSize     tokens per prefill chunk ({@code -b})
 * @param activation    FFN activation override (null = from the file); needed for ReLU models stored as
 *                      plain llama GGUFs, where nothing in the file says the FFN is ReLU
 * @param sparseMode    {@code --sparse}; null = automatic: predict when the file has predictors, exact for
 *                      ReLU models, off for dense (SwiGLU) models
 * @param sparseThreshold predictor threshold ({@code --sparse-threshold}); NaN = the file's
 *                      {@code powerinfer.sparse_threshold} (default 0)
 * @param sparseStats   collect per-layer activation statistics (in predict mode this also computes the
 *                      true activations to measure recall and precision, which costs a dense gate product)
 * @param kvCacheType   F16 (default, as llama.cpp) or F32 keys/values
 * @param gpu           hybrid CPU/GPU FFN for predict mode ({@code --gpu}, {@code --vram-budget}, {@code --gpu-index});
 *                      {@link GpuOptions#OFF} = CPU only
 * @param repack        repack Q4_0, Q4_K, Q5_K, Q6_K and Q8_0 matrices used by dense products into the CPU layouts of
 *                      {@link org.powerinfer4j.engine.tensor.RepackedMatrix} at load ({@code --no-repack} turns it off):
 *                      about 1.0–1.1× their size in native memory and a one-time copy, for faster decode (and prefill: Q4)
 * @param decodeBatching how the decode steps of concurrent sessions share passes over the weights
 *                      ({@code --decode-batching}, see {@link DecodeBatching} and {@code DecodeBatcher}); default
 *                      {@link DecodeBatching#FAST}: one shared pass, matrix–matrix products where they are faster
 *                      than the fused per-token kernels (logits within rounding of each step alone);
 *                      {@link DecodeBatching#EXACT}: products per token, each stream's logits bit-identical to alone
 * @param listener      receives the notes and warnings (and load progress) the model would otherwise have to print;
 *                      default (null) {@link ModelListener#systemLogger()}
 */
public record ModelOptions(int threads, int contextLength, int batchSize, FfnActivation activation,
                           SparseMode sparseMode, float sparseThreshold, boolean sparseStats, GGMLType kvCacheType,
                           GpuOptions gpu, boolean repack, DecodeBatching decodeBatching, ModelListener listener) {
    public static final int DEFAULT_CONTEXT_CAP = 4096;

    public ModelOptions {
        if (threads < 1) throw new IllegalArgumentException("threads must be >= 1, is " + threads);
        if (contextLength < 0) throw new IllegalArgumentException("context length must be >= 0, is " + contextLength);
        if (batchSize < 1) throw new IllegalArgumentException("batch size must be >= 1, is " + batchSize);
        if (kvCacheType != GGMLType.F16 && kvCacheType != GGMLType.F32) throw new IllegalArgumentException("KV cache type must be f16 or f32");
        if (gpu == null) gpu = GpuOptions.OFF;
        if (decodeBatching == null) decodeBatching = DecodeBatching.FAST;
        if (listener == null) listener = ModelListener.systemLogger();
    }

    public ModelOptions(int threads, int contextLength, int batchSize, FfnActivation activation, SparseMode sparseMode,
                        float sparseThreshold, boolean sparseStats, GGMLType kvCacheType, GpuOptions gpu) {
        this(threads, contextLength, batchSize, activation, sparseMode, sparseThreshold, sparseStats, kvCacheType, gpu, true, DecodeBatching.FAST, null);
    }

    public static ModelOptions defaults() {
        return new ModelOptions(Runtime.getRuntime().availableProcessors(), 0, 64, null, null, Float.NaN, false, GGMLType.F16, GpuOptions.OFF, true, DecodeBatching.FAST, null);
    }

    public ModelOptions withThreads(int t) { return new ModelOptions(t, contextLength, batchSize, activation, sparseMode, sparseThreshold, sparseStats, kvCacheType, gpu, repack, decodeBatching, listener); }
    public ModelOptions withContextLength(int c) { return new ModelOptions(threads, c, batchSize, activation, sparseMode, sparseThreshold, sparseStats, kvCacheType, gpu, repack, decodeBatching, listener); }
    public ModelOptions withBatchSize(int b) { return new ModelOptions(threads, contextLength, b, activation, sparseMode, sparseThreshold, sparseStats, kvCacheType, gpu, repack, decodeBatching, listener); }
    public ModelOptions withActivation(FfnActivation a) { return new ModelOptions(threads, contextLength, batchSize, a, sparseMode, sparseThreshold, sparseStats, kvCacheType, gpu, repack, decodeBatching, listener); }
    public ModelOptions withSparseMode(SparseMode m) { return new ModelOptions(threads, contextLength, batchSize, activation, m, sparseThreshold, sparseStats, kvCacheType, gpu, repack, decodeBatching, listener); }
    public ModelOptions withSparseThreshold(float t) { return new ModelOptions(threads, contextLength, batchSize, activation, sparseMode, t, sparseStats, kvCacheType, gpu, repack, decodeBatching, listener); }
    public ModelOptions withKvCacheType(GGMLType t) { return new ModelOptions(threads, contextLength, batchSize, activation, sparseMode, sparseThreshold, sparseStats, t, gpu, repack, decodeBatching, listener); }
    public ModelOptions withSparseStats(boolean b) { return new ModelOptions(threads, contextLength, batchSize, activation, sparseMode, sparseThreshold, b, kvCacheType, gpu, repack, decodeBatching, listener); }
    public ModelOptions withRepack(boolean r) { return new ModelOptions(threads, contextLength, batchSize, activation, sparseMode, sparseThreshold, sparseStats, kvCacheType, gpu, r, decodeBatching, listener); }
    public ModelOptions withDecodeBatching(DecodeBatching d) { return new ModelOptions(threads, contextLength, batchSize, activation, sparseMode, sparseThreshold, sparseStats, kvCacheType, gpu, repack, d, listener); }
    /** On: {@link DecodeBatching#EXACT} (bit-identical per stream); off: {@link DecodeBatching#OFF}. */
    public ModelOptions withBatchSequences(boolean on) { return withDecodeBatching(on ? DecodeBatching.EXACT : DecodeBatching.OFF); }

    /** Whether decode steps of concurrent sessions share passes (any mode but {@link DecodeBatching#OFF}). */
    public boolean batchSequences() { return decodeBatching != DecodeBatching.OFF; }
    /** Where notes, warnings and load progress go (null: the default, {@link ModelListener#systemLogger()}). */
    public ModelOptions withListener(ModelListener l) { return new ModelOptions(threads, contextLength, batchSize, activation, sparseMode, sparseThreshold, sparseStats, kvCacheType, gpu, repack, decodeBatching, l); }
    public ModelOptions withGpu(GpuOptions g) { return new ModelOptions(threads, contextLength, batchSize, activation, sparseMode, sparseThreshold, sparseStats, kvCacheType, g, repack, decodeBatching, listener); }
}
