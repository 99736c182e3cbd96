package org.powerinfer4j.engine.backend;

import java.nio.file.Path;

/**
 * Hybrid CPU/GPU execution of a sparse (PowerInfer) model's FFN.
 *
 * @param mode        the device ({@code --gpu}); {@link GpuMode#OFF} = CPU only
 * @param vramBudget  bytes of device memory the FFN may use ({@code --vram-budget}); negative = not given: on a
 *                    CUDA device the free memory less a reserve ({@link HybridSetup#withDefaultBudget}), on the
 *                    simulated one a GPU index is then required
 * @param gpuIndex    PowerInfer's {@code .gpuidx} ({@code --gpu-index}); null = plan from the budget
 * @param activations activation statistics for planning ({@code --gpu-activations}); null = the model's sibling
 *                    {@code .activations.gguf} when it exists, else a uniform placement
 * @param coldMask    how the CPU learns which cold neurons the predictor selected
 * @param tile        hot neurons per layer come in multiples of this (as {@code plan --tile})
 * @param gpuLayers   dense models: how many of the last layers run whole on the device ({@code -ngl}, as llama.cpp;
 *                    one more than the model's layer count also moves the output head); 0 = none, and with a
 *                    {@code vramBudget} as many as fit
 */
public record GpuOptions(GpuMode mode, long vramBudget, Path gpuIndex, Path activations, ColdMaskSource coldMask, int tile, int gpuLayers) {
    public static final ColdMaskSource DEFAULT_COLD_MASK = ColdMaskSource.GPU_EVENT;
    public static final int DEFAULT_TILE = 32;
    public static final GpuOptions OFF = new GpuOptions(GpuMode.OFF, -1, null, null, DEFAULT_COLD_MASK, DEFAULT_TILE, 0);

    public GpuOptions {
        if (mode == null) throw new IllegalArgumentException("gpu mode must not be null");
        if (coldMask == null) coldMask = DEFAULT_COLD_MASK;
        if (tile < 1) throw new IllegalArgumentException("tile must be >= 1, is " + tile);
        if (gpuLayers < 0) throw new IllegalArgumentException("-ngl must be >= 0, is " + gpuLayers);
    }

    public GpuOptions(GpuMode mode, long vramBudget, Path gpuIndex, Path activations, ColdMaskSource coldMask, int tile) {
        this(mode, vramBudget, gpuIndex, activations, coldMask, tile, 0);
    }

    /**
     * The options the command-line flags {@code --gpu --vram-budget --gpu-index --gpu-activations -ngl} give (shared by the
     * CLI and the Spark module): without {@code --gpu}, AUTO when a budget, an index or GPU layers are asked for, else OFF.
     *
     * @param gpu        the {@code --gpu} value, or null
     * @param vramBudget bytes, or -1 for none
     */
    public static GpuOptions fromFlags(String gpu, long vramBudget, Path gpuIndex, Path activations, int gpuLayers) {
        GpuMode mode = gpu != null ? GpuMode.parse(gpu) : vramBudget >= 0 || gpuIndex != null || gpuLayers > 0 ? GpuMode.AUTO : GpuMode.OFF;
        return new GpuOptions(mode, vramBudget, gpuIndex, activations, DEFAULT_COLD_MASK, DEFAULT_TILE, gpuLayers);
    }

    /** Whole dense layers on {@code mode}: the last {@code n} ({@code -ngl n}). */
    public static GpuOptions layers(GpuMode mode, int n) {
        return new GpuOptions(mode, -1, null, null, DEFAULT_COLD_MASK, DEFAULT_TILE, n);
    }

    /** Hybrid execution on {@code mode} with a budget in bytes (placement planned from statistics). */
    public static GpuOptions budget(GpuMode mode, long bytes) {
        if (bytes < 0) throw new IllegalArgumentException("negative VRAM budget");
        return new GpuOptions(mode, bytes, null, null, DEFAULT_COLD_MASK, DEFAULT_TILE);
    }

    /** Hybrid execution on {@code mode} with the hot neurons of a PowerInfer GPU index. */
    public static GpuOptions index(GpuMode mode, Path gpuIndex) {
        return new GpuOptions(mode, -1, gpuIndex, null, DEFAULT_COLD_MASK, DEFAULT_TILE);
    }

    public boolean enabled() { return mode != GpuMode.OFF; }
    public GpuOptions withGpuLayers(int n) { return new GpuOptions(mode, vramBudget, gpuIndex, activations, coldMask, tile, n); }
    public boolean hasBudget() { return vramBudget >= 0; }

    public GpuOptions withMode(GpuMode m) { return new GpuOptions(m, vramBudget, gpuIndex, activations, coldMask, tile, gpuLayers); }
    public GpuOptions withVramBudget(long b) { return new GpuOptions(mode, b, gpuIndex, activations, coldMask, tile, gpuLayers); }
    public GpuOptions withGpuIndex(Path p) { return new GpuOptions(mode, vramBudget, p, activations, coldMask, tile, gpuLayers); }
    public GpuOptions withActivations(Path p) { return new GpuOptions(mode, vramBudget, gpuIndex, p, coldMask, tile, gpuLayers); }
    public GpuOptions withColdMask(ColdMaskSource c) { return new GpuOptions(mode, vramBudget, gpuIndex, activations, c, tile, gpuLayers); }
    public GpuOptions withTile(int t) { return new GpuOptions(mode, vramBudget, gpuIndex, activations, coldMask, t, gpuLayers); }
}
