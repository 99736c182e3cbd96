package org.powerinfer4j.engine.backend;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.function.Consumer;
import org.powerinfer4j.engine.gpu.GpuBackend;
import org.powerinfer4j.engine.model.FfnActivation;
import org.powerinfer4j.engine.model.GraphBuilder;
import org.powerinfer4j.engine.model.ModelConfig;
import org.powerinfer4j.engine.model.ModelGraph;
import org.powerinfer4j.engine.model.ModelException;
import org.powerinfer4j.engine.model.ModelWeights;
import org.powerinfer4j.engine.placement.ActivationStats;
import org.powerinfer4j.engine.placement.DeviceFootprint;
import org.powerinfer4j.engine.placement.GpuFootprint;
import org.powerinfer4j.engine.placement.GpuIndex;
import org.powerinfer4j.engine.sparse.SparsityStats;
import org.powerinfer4j.engine.tensor.GGMLType;
import org.powerinfer4j.engine.tensor.Tensor;

/**
 * Builds the hybrid FFN a model's options ask for: opens the device, chooses the placement and uploads it.
 *
 * <p>Placement, in order: a GPU index ({@code --gpu-index}) when given — unless a budget is also given that is
 * smaller than the budget the index was solved for, in which case it is re-planned (PowerInfer's rule); otherwise
 * planned under {@code --vram-budget} with the footprint of {@link HybridPlacement#footprint} and activation
 * statistics from {@code --gpu-activations}, else the model's sibling {@code .activations.gguf}, else — with a note
 * — a uniform placement (every neuron equally likely: the lowest ids of each layer, in whole tiles).
 */
public final class HybridSetup {
    private HybridSetup() {}

    /**
     * Device memory a default budget leaves free: the context and loaded modules (a few hundred MiB), cuBLAS and
     * stream workspaces, and cuMemAlloc's rounding of large allocations (2 MiB pages) — 512 MiB plus 5% of the card.
     */
    public static long defaultReserve(long totalDeviceBytes) {
        return (512L << 20) + totalDeviceBytes / 20;
    }

    /**
     * The options with {@code --vram-budget} defaulted for a real device when neither a budget nor a GPU index was
     * given: the device's free memory minus {@link #defaultReserve}. Unchanged for other modes, or when the device
     * cannot be queried (then the hybrid setup reports what is missing).
     */
    public static GpuOptions withDefaultBudget(GpuOptions o, Consumer<String> info) {
        if (!o.enabled() || o.hasBudget() || o.gpuIndex() != null) return o;
        if (o.mode() != GpuMode.AUTO && o.mode() != GpuMode.CUDA) return o;
        long[] mem = org.powerinfer4j.engine.gpu.CudaBackend.deviceMemory();
        if (mem == null) return o;
        long budget = Math.max(0, mem[0] - defaultReserve(mem[1]));
        info.accept(String.format(Locale.ROOT, "note: no --vram-budget: using %s (the device's %s free, less %s reserve)",
                human(budget), human(mem[0]), human(defaultReserve(mem[1]))));
        return o.withVramBudget(budget);
    }

    /**
     * The hybrid FFN on an open backend, placed from a GPU index or planned under the budget.
     *
     * @param modelPath   the model file (for the default statistics file); may be null
     * @param ownsBackend close {@code gpu} with the hybrid FFN; false leaves it to the caller
     */
    public static HybridFeedForward create(GpuOptions o, Path modelPath, ModelWeights w, FfnActivation activation, float threshold,
                                           Tensor[] downT, int maxBatch, SparsityStats stats, Consumer<String> info, GpuBackend gpu,
                                           boolean ownsBackend) {
        return create(o, modelPath, HybridUnits.ofLayers(w, downT), activation, threshold, maxBatch, stats, info, gpu, ownsBackend);
    }

    /** The same over any units: a MoE model's routed experts ({@link HybridFeedForward#experts()}) or its layers. */
    public static HybridFeedForward create(GpuOptions o, Path modelPath, HybridUnits units, FfnActivation activation, float threshold,
                                           int maxBatch, SparsityStats stats, Consumer<String> info, GpuBackend gpu, boolean ownsBackend) {
        requireBudgetOrIndex(o);
        HybridPlacement placement = placement(o, modelPath, units, maxBatch, info);
        return new HybridFeedForward(gpu, ownsBackend, placement, units, activation, threshold, maxBatch, o.coldMask(), stats, info);
    }

    /**
     * The hybrid runtime's whole device plan for a budget, as {@code Model} carries it out: the attention blocks
     * that fit ({@link GpuLayers#attention}), then the FFN placement planned in what they leave.
     *
     * @param attentionLayers attention blocks on the device, from layer 0
     * @param units           what the placement splits: the layers, or a MoE model's routed experts
     * @param placement       the FFN's hot/cold split per unit (planned for the FFN's share of the budget)
     * @param footprint       every allocation: the attention part's, then the hybrid FFN's
     */
    public record DevicePlan(int attentionLayers, HybridUnits units, HybridPlacement placement, DeviceFootprint footprint) {
        /** The placement as a GPU index solved for {@code budget} (a MoE layer's experts side by side). */
        public GpuIndex gpuIndex(long budget) {
            return units.toGpuIndex(budget, placement);
        }
    }

    /**
     * The plan {@code --gpu … --vram-budget} runs under, for {@code plan}: same choices, same footprint.
     *
     * @param counts activation counts per layer and neuron; null = uniform
     */
    public static DevicePlan plan(ModelConfig c, ModelWeights w, int contextLength, int batch, long budget, long[][] counts, int tile, String source) {
        return plan(c, w, contextLength, batch, GGMLType.F32, budget, counts, tile, source);
    }

    /** The same with a {@code kvType} (F32 or F16) KV cache for the attention blocks: the session's {@code -ctk}. */
    public static DevicePlan plan(ModelConfig c, ModelWeights w, int contextLength, int batch, GGMLType kvType, long budget, long[][] counts, int tile,
                                  String source) {
        if (c.params().moe()) throw new IllegalArgumentException("a mixture-of-experts model is planned per expert: pass its activation statistics");
        return plan(c, w, HybridUnits.ofLayers(w, new Tensor[w.layers().length]), contextLength, batch, kvType, budget, counts, tile, source);
    }

    /**
     * The same for any model, from its profile: per layer, or per routed expert for a MoE model (the statistics'
     * {@code expert_activation_counts}); {@code stats} null = uniform counts.
     */
    public static DevicePlan planFromProfile(ModelConfig c, ModelWeights w, int contextLength, int batch, long budget, ActivationStats stats, int tile,
                                             String source) {
        return planFromProfile(c, w, contextLength, batch, GGMLType.F32, budget, stats, tile, source);
    }

    /** The same with a {@code kvType} (F32 or F16) KV cache for the attention blocks. */
    public static DevicePlan planFromProfile(ModelConfig c, ModelWeights w, int contextLength, int batch, GGMLType kvType, long budget,
                                             ActivationStats stats, int tile, String source) {
        HybridUnits units = HybridUnits.of(c, w, null, null);
        return plan(c, w, units, contextLength, batch, kvType, budget, stats == null ? null : units.counts(stats, "activation statistics"), tile, source);
    }

    private static DevicePlan plan(ModelConfig c, ModelWeights w, HybridUnits units, int contextLength, int batch, GGMLType kvType, long budget,
                                   long[][] counts, int tile, String source) {
        ModelGraph g = GraphBuilder.build(c, w);
        int n = GpuLayers.attentionLayers(g, w, c, contextLength, batch, kvType, budget, new String[1]);
        DeviceFootprint attention = DeviceFootprint.layers(c, g, w, 0, n, true, false, contextLength, batch, kvType);
        long ffnBudget = Math.max(0, budget - attention.totalBytes());
        HybridPlacement p = HybridPlacement.planned(HybridPlacement.footprint(units, batch), counts, ffnBudget, tile, source);
        DeviceFootprint ffn = DeviceFootprint.hybridFfn(units.allWeights(), units.ofExperts() ? units.labels() : null, p.hotCounts(), batch);
        return new DevicePlan(n, units, p, attention.plus(ffn));
    }

    /** The hot neurons come from a budget or a GPU index; neither is a usage error (one line). */
    public static void requireBudgetOrIndex(GpuOptions o) {
        if (o.gpuIndex() == null && !o.hasBudget())
            throw new ModelException("--gpu " + o.mode().name().toLowerCase(Locale.ROOT) + " needs --vram-budget GiB or --gpu-index FILE to choose the hot neurons");
    }

    static HybridPlacement placement(GpuOptions o, Path modelPath, HybridUnits units, int maxBatch, Consumer<String> info) {
        Stats stats = stats(o, modelPath, units);
        try {
            if (o.gpuIndex() != null) {
                GpuIndex idx = GpuIndex.read(o.gpuIndex());
                if (!o.hasBudget() || o.vramBudget() >= idx.vramCapacity())
                    return units.fromGpuIndex(idx, stats.counts, "GPU index " + o.gpuIndex().getFileName());
                info.accept(String.format(Locale.ROOT, "note: %s was solved for %,d bytes, more than --vram-budget %,d; re-planning",
                        o.gpuIndex().getFileName(), idx.vramCapacity(), o.vramBudget()));
            }
        } catch (IOException | IllegalArgumentException e) {
            throw new ModelException("--gpu-index " + o.gpuIndex() + ": " + e.getMessage());
        }
        if (stats.counts == null)
            info.accept("note: no activation statistics (--gpu-activations, or run profile); hot neurons chosen uniformly (lowest ids per layer)");
        GpuFootprint fp = HybridPlacement.footprint(units, maxBatch);
        return HybridPlacement.planned(fp, stats.counts, o.vramBudget(), o.tile(), String.format(Locale.ROOT, "planned for %s from %s",
                human(o.vramBudget()), stats.source));
    }

    private record Stats(long[][] counts, String source) {}

    private static Stats stats(GpuOptions o, Path modelPath, HybridUnits units) {
        Path p = o.activations();
        if (p == null && modelPath != null) {
            String name = modelPath.getFileName().toString();
            if (name.endsWith(".gguf")) name = name.substring(0, name.length() - 5);
            Path sibling = modelPath.resolveSibling(name + ".activations.gguf");
            if (Files.isRegularFile(sibling)) p = sibling;
        }
        if (p == null) return new Stats(null, "uniform counts (no statistics)");
        try {
            return new Stats(units.counts(ActivationStats.read(p), "activation statistics " + p), "statistics " + p.getFileName());
        } catch (IOException e) {
            throw new ModelException("activation statistics " + p + ": " + e.getMessage());
        }
    }

    static String human(long bytes) {
        double v = bytes;
        String[] u = {"B", "KiB", "MiB", "GiB"};
        int i = 0;
        while (v >= 1024 && i < u.length - 1) {
            v /= 1024;
            i++;
        }
        return String.format(Locale.ROOT, i == 0 ? "%.0f %s" : "%.2f %s", v, u[i]);
    }
}
