package org.powerinfer4j.spark;

import java.io.Serializable;
import java.nio.file.Path;
import org.powerinfer4j.engine.api.DecodeBatching;
import org.powerinfer4j.engine.api.ModelOptions;
import org.powerinfer4j.engine.backend.GpuOptions;
import org.powerinfer4j.engine.model.FfnActivation;
import org.powerinfer4j.engine.sparse.SparseMode;
import org.powerinfer4j.engine.tensor.GGMLType;

/**
 * Which model an executor opens and how: the model options of the command line ({@code -t -c -b --ffn-act --sparse
 * --sparse-threshold -ctk --gpu -ngl --vram-budget --gpu-index --decode-batching --no-repack}) as one serializable
 * value that travels with the tasks. Equal specs share one open model per executor ({@link ExecutorModels}).
 *
 * @param model          a GGUF path every executor can read, a file shipped with {@code SparkFiles}, or a cached model's name
 * @param threads        compute threads; 0 = the executor's available processors
 * @param decodeBatching "exact" by default here: a row's tokens never depend on which rows shared its decode passes,
 *                       so a retried task gives the same rows; "fast" trades that for throughput
 */
public record ModelSpec(String model, int threads, int contextLength, int batchSize, String ffnActivation, String sparse,
                        float sparseThreshold, String cacheType, String gpu, double vramBudgetGiB, int gpuLayers, String gpuIndex,
                        String decodeBatching, boolean repack) implements Serializable {

    public ModelSpec {
        if (model == null || model.isBlank()) throw new IllegalArgumentException("modelPath is not set");
        if (threads < 0) throw new IllegalArgumentException("threads must be >= 0 (0 = all cores), is " + threads);
        if (contextLength < 0) throw new IllegalArgumentException("contextLength must be >= 0 (0 = the model's), is " + contextLength);
        if (batchSize < 1) throw new IllegalArgumentException("batchSize must be >= 1, is " + batchSize);
        if (gpuLayers < 0) throw new IllegalArgumentException("gpuLayers must be >= 0, is " + gpuLayers);
        if (!(vramBudgetGiB < 0 || vramBudgetGiB <= 1 << 20)) throw new IllegalArgumentException("vramBudget must be a number of GiB");
        // every option checked on the driver, before a task is sent (fields are not assigned yet: pass them)
        options(threads, contextLength, batchSize, ffnActivation, sparse, sparseThreshold, cacheType, gpu, vramBudgetGiB, gpuLayers, gpuIndex,
                decodeBatching, repack);
    }

    /** The engine's options for this spec (parsing as the command line does). */
    public ModelOptions toOptions() {
        return options(threads, contextLength, batchSize, ffnActivation, sparse, sparseThreshold, cacheType, gpu, vramBudgetGiB, gpuLayers, gpuIndex,
                decodeBatching, repack);
    }

    private static ModelOptions options(int threads, int contextLength, int batchSize, String ffnActivation, String sparse, float sparseThreshold,
                                        String cacheType, String gpu, double vramBudgetGiB, int gpuLayers, String gpuIndex, String decodeBatching,
                                        boolean repack) {
        ModelOptions o = ModelOptions.defaults().withContextLength(contextLength).withBatchSize(batchSize);
        if (threads > 0) o = o.withThreads(threads);
        o = o.withKvCacheType(switch (cacheType.toLowerCase(java.util.Locale.ROOT)) {
            case "f16" -> GGMLType.F16;
            case "f32" -> GGMLType.F32;
            default -> throw new IllegalArgumentException("cacheType must be f16 or f32, not '" + cacheType + "'");
        });
        if (ffnActivation != null) o = o.withActivation(FfnActivation.parse(ffnActivation));
        if (sparse != null) o = o.withSparseMode(SparseMode.parse(sparse));
        if (!Float.isNaN(sparseThreshold)) o = o.withSparseThreshold(sparseThreshold);
        o = o.withDecodeBatching(DecodeBatching.parse(decodeBatching)).withRepack(repack);
        return o.withGpu(GpuOptions.fromFlags(gpu, vramBudgetGiB < 0 ? -1 : (long) Math.floor(vramBudgetGiB * (1L << 30)),
                gpuIndex == null ? null : Path.of(gpuIndex), null, gpuLayers));
    }
}
