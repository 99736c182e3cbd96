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
 * @param repack        repack Q4_0 matrices used by dense products into the CPU layout of
 *                      {@link org.powerinfer4j.engine.tensor.RepackedQ4} at load ({@code --no-repack} turns it off):
 *                      about 1.1× their size in native memory and a one-time copy, for faster decode and prefill
 * @param batchSequences batch the decode steps of concurrent sessions into shared passes over the weights
 *                      (results are bit-identical either way, see {@code DecodeBatcher}); default off until
 *                      per-token kernels that share their dequantization make it pay (measured: no gain yet)
 */
public record ModelOptions(int threads, int contextLength, int batchSize, FfnActivation activation,
                           SparseMode sparseMode, float sparseThreshold, boolean sparseStats, GGMLType kvCacheType,
                           GpuOptions gpu, boolean repack, boolean batchSequences) {
    public static final int DEFAULT_CONTEXT_CAP = 4096;

    public ModelOptions {
        if (threads < 1) throw new IllegalArgumentException("threads must be >= 1, is " + threads);
        if (contextLength < 0) throw new IllegalArgumentException("context length must be >= 0, is " + contextLength);
        if (batchSize < 1) throw new IllegalArgumentException("batch size must be >= 1, is " + batchSize);
        if (kvCacheType != GGMLType.F16 && kvCacheType != GGMLType.F32) throw new IllegalArgumentException("KV cache type must be f16 or f32");
        if (gpu == null) gpu = GpuOptions.OFF;
    }

    public ModelOptions(int threads, int contextLength, int batchSize, FfnActivation activation, SparseMode sparseMode,
                        float sparseThreshold, boolean sparseStats, GGMLType kvCacheType, GpuOptions gpu) {
        this(threads, contextLength, batchSize, activation, sparseMode, sparseThreshold, sparseStats, kvCacheType, gpu, true, false);
    }

    public static ModelOptions defaults() {
        return new ModelOptions(Runtime.getRuntime().availableProcessors(), 0, 64, null, null, Float.NaN, false, GGMLType.F16, GpuOptions.OFF, true, false);
    }

    public ModelOptions withThreads(int t) { return new ModelOptions(t, contextLength, batchSize, activation, sparseMode, sparseThreshold, sparseStats, kvCacheType, gpu, repack, batchSequences); }
    public ModelOptions withContextLength(int c) { return new ModelOptions(threads, c, batchSize, activation, sparseMode, sparseThreshold, sparseStats, kvCacheType, gpu, repack, batchSequences); }
    public ModelOptions withBatchSize(int b) { return new ModelOptions(threads, contextLength, b, activation, sparseMode, sparseThreshold, sparseStats, kvCacheType, gpu, repack, batchSequences); }
    public ModelOptions withActivation(FfnActivation a) { return new ModelOptions(threads, contextLength, batchSize, a, sparseMode, sparseThreshold, sparseStats, kvCacheType, gpu, repack, batchSequences); }
    public ModelOptions withSparseMode(SparseMode m) { return new ModelOptions(threads, contextLength, batchSize, activation, m, sparseThreshold, sparseStats, kvCacheType, gpu, repack, batchSequences); }
    public ModelOptions withSparseThreshold(float t) { return new ModelOptions(threads, contextLength, batchSize, activation, sparseMode, t, sparseStats, kvCacheType, gpu, repack, batchSequences); }
    public ModelOptions withKvCacheType(GGMLType t) { return new ModelOptions(threads, contextLength, batchSize, activation, sparseMode, sparseThreshold, sparseStats, t, gpu, repack, batchSequences); }
    public ModelOptions withSparseStats(boolean b) { return new ModelOptions(threads, contextLength, batchSize, activation, sparseMode, sparseThreshold, b, kvCacheType, gpu, repack, batchSequences); }
    public ModelOptions withRepack(boolean r) { return new ModelOptions(threads, contextLength, batchSize, activation, sparseMode, sparseThreshold, sparseStats, kvCacheType, gpu, r, batchSequences); }
    public ModelOptions withBatchSequences(boolean on) { return new ModelOptions(threads, contextLength, batchSize, activation, sparseMode, sparseThreshold, sparseStats, kvCacheType, gpu, repack, on); }
    public ModelOptions withGpu(GpuOptions g) { return new ModelOptions(threads, contextLength, batchSize, activation, sparseMode, sparseThreshold, sparseStats, kvCacheType, g, repack, batchSequences); }
}
