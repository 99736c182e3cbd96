package org.powerinfer4j.cli;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.powerinfer4j.engine.api.Model;
import org.powerinfer4j.engine.api.ModelOptions;
import org.powerinfer4j.engine.backend.GpuOptions;
import org.powerinfer4j.engine.model.FfnActivation;
import org.powerinfer4j.engine.sparse.SparseMode;
import picocli.CommandLine.Option;

/** Options shared by every command that loads a model (flag names as in llama.cpp). */
public final class ModelOptionsMixin {
    @Option(names = {"-m", "--model"}, required = true, paramLabel = "MODEL",
            description = "GGUF model file, or the name of a cached model (see list; e.g. the file name).")
    String model;

    @Option(names = {"-t", "--threads"}, paramLabel = "N", split = ",",
            description = "Compute threads (default: all cores). bench accepts a list, e.g. -t 1,2.")
    java.util.List<Integer> threads;

    @Option(names = {"-c", "--ctx-size"}, paramLabel = "N", defaultValue = "0",
            description = "Context length (default: the model's, capped at " + ModelOptions.DEFAULT_CONTEXT_CAP + ").")
    int contextLength;

    @Option(names = {"-b", "--batch-size"}, paramLabel = "N", defaultValue = "64", description = "Prompt tokens per forward chunk (default: ${DEFAULT-VALUE}).")
    int batchSize;

    @Option(names = "--ffn-act", paramLabel = "silu|relu|drelu|gelu|gelu_tanh",
            description = "Override the FFN activation (for ReLU models stored as plain llama GGUFs).")
    String activation;

    @Option(names = "--sparse", paramLabel = "off|exact|predict",
            description = "FFN sparsity: off = dense; exact = skip zero ReLU neurons (lossless); predict = PowerInfer's predictor-gated path. "
                    + "Default: predict when the file has predictors, exact for ReLU models, off for dense models.")
    String sparse;

    @Option(names = "--sparse-threshold", paramLabel = "T",
            description = "Predictor threshold: neuron computed iff its predictor logit >= T (default: the file's powerinfer.sparse_threshold, else 0).")
    Float sparseThreshold;

    @Option(names = {"-ctk", "--cache-type"}, paramLabel = "f16|f32", defaultValue = "f16",
            description = "KV cache element type (default: ${DEFAULT-VALUE}, as llama.cpp).")
    String cacheType;

    @Option(names = "--gpu", paramLabel = "auto|off|cuda|simulated",
            description = "Device for the hot FFN neurons of PowerInfer models (predict mode): auto = CUDA if usable, else CPU only; "
                    + "simulated = the device semantics on CPU threads (testing). Default: auto when --vram-budget or --gpu-index is given, else off.")
    String gpu;

    @Option(names = {"-ngl", "--n-gpu-layers"}, paramLabel = "N",
            description = "Dense models: run the last N layers whole on the GPU (N = layers + 1 also moves the output head; 999 = all), as llama.cpp.")
    Integer gpuLayers;

    @Option(names = "--vram-budget", paramLabel = "GiB", description = "Device memory in GiB (fractions allowed): the hybrid FFN's hot neurons are planned into it (default with --gpu auto|cuda: the device's free memory less 512 MiB + 5%%); for dense models, as many whole layers as fit (at most -ngl).")
    Double vramBudget;

    @Option(names = "--gpu-index", paramLabel = "FILE", description = "PowerInfer GPU index (.gpuidx, e.g. from plan) naming the hot neurons.")
    Path gpuIndex;

    @Option(names = "--gpu-activations", paramLabel = "FILE",
            description = "Activation statistics for planning under --vram-budget (default: MODEL with .activations.gguf when it exists, else uniform).")
    Path gpuActivations;

    @Option(names = "--decode-batching", paramLabel = "off|exact|fast", defaultValue = "fast",
            description = "Decode steps of sessions decoding at once (server slots, bench -np): fast = one shared pass over the weights, matrix-matrix "
                    + "products where they beat the fused kernels (logits within rounding of each stream alone); exact = one shared pass, products per "
                    + "token (bit-identical to alone); off = one pass per step (default: ${DEFAULT-VALUE}).")
    String decodeBatching;

    @Option(names = "--no-repack",
            description = "Compute dense products straight from the mapped Q4_0, Q4_K, Q5_K, Q6_K and Q8_0 blocks instead of a repacked copy made at load "
                    + "(saves ~1.1× (Q6_K: ~1.07×) those matrices' size in memory and the copy's time; decode and prefill are slower).")
    boolean noRepack;

    /** The thread counts given with -t (bench runs each); empty when not given. */
    public java.util.List<Integer> threadCounts() {
        return threads == null ? java.util.List.of() : threads;
    }

    /** Set by commands (bench) that run once per listed thread count. */
    boolean allowThreadList;

    public ModelOptions toOptions() {
        if (threads != null && threads.size() > 1 && !allowThreadList)
            throw new picocli.CommandLine.ParameterException(new picocli.CommandLine(this), "-t takes one thread count here; lists are for bench");
        ModelOptions o = ModelOptions.defaults().withContextLength(contextLength).withBatchSize(batchSize);
        o = o.withKvCacheType(switch (cacheType.toLowerCase()) {
            case "f16" -> org.powerinfer4j.engine.tensor.GGMLType.F16;
            case "f32" -> org.powerinfer4j.engine.tensor.GGMLType.F32;
            default -> throw new IllegalArgumentException("--cache-type must be f16 or f32, not '" + cacheType + "'");
        });
        if (sparse != null) o = o.withSparseMode(SparseMode.parse(sparse));
        if (sparseThreshold != null) o = o.withSparseThreshold(sparseThreshold);
        if (threads != null && !threads.isEmpty()) o = o.withThreads(threads.get(0));
        if (activation != null) o = o.withActivation(FfnActivation.parse(activation));
        if (decodeBatching != null) o = o.withDecodeBatching(org.powerinfer4j.engine.api.DecodeBatching.parse(decodeBatching));
        return o.withGpu(gpuOptions()).withRepack(!noRepack).withListener(new StderrListener());   // notes on stderr, as printed before
    }

    private GpuOptions gpuOptions() {
        if (vramBudget != null && !(vramBudget >= 0 && vramBudget <= 1 << 20))
            throw new picocli.CommandLine.ParameterException(new picocli.CommandLine(this), "--vram-budget must be a non-negative number of GiB");
        if (gpuLayers != null && gpuLayers < 0)
            throw new picocli.CommandLine.ParameterException(new picocli.CommandLine(this), "-ngl must be >= 0");
        return GpuOptions.fromFlags(gpu, vramBudget == null ? -1 : (long) Math.floor(vramBudget * (1L << 30)), gpuIndex, gpuActivations,
                gpuLayers == null ? 0 : gpuLayers);
    }

    /** The model path: an existing file, else a cached model of that name; checked to be a regular file. */
    public Path checkedPath() throws IOException {
        Path path = org.powerinfer4j.engine.hub.ModelCache.resolve(model);
        if (Files.isDirectory(path)) throw new IOException(path + " is a directory, not a GGUF file");
        return path;
    }

    public Model open() throws IOException {
        return Model.open(checkedPath(), toOptions());
    }
}
