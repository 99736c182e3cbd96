package org.powerinfer4j.engine.backend;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.powerinfer4j.engine.gpu.GpuBackend;
import org.powerinfer4j.engine.model.LayerWeights;
import org.powerinfer4j.engine.model.ModelWeights;
import org.powerinfer4j.engine.placement.DeviceFootprint;
import org.powerinfer4j.engine.placement.GpuFootprint;
import org.powerinfer4j.engine.placement.PlacementPlanner;
import org.powerinfer4j.engine.tensor.Tensor;

/**
 * The split of every layer's FFN neurons into hot (GPU) and cold (CPU): two disjoint ascending lists per layer whose
 * union is all neurons, so every neuron is computed exactly once. Built from a PowerInfer GPU index or planned
 * under a VRAM budget with the device footprint of {@link HybridFeedForward} ({@link #footprint}); {@link HybridUnits}
 * converts it to and from GPU indexes.
 */
public final class HybridPlacement {
    private final int[] ff;
    private final int[][] hot, cold;
    private final long[][] counts;           // activation counts, null when unknown
    private final String source;
    private final PlacementPlanner.Plan plan; // null unless planned

    private HybridPlacement(int[] ff, int[][] hot, long[][] counts, String source, PlacementPlanner.Plan plan) {
        this.ff = ff.clone();
        this.hot = new int[hot.length][];
        this.cold = new int[hot.length][];
        for (int l = 0; l < hot.length; l++) {
            int[] h = hot[l].clone();
            Arrays.sort(h);
            boolean[] isHot = new boolean[ff[l]];
            for (int j = 0; j < h.length; j++) {
                if (h[j] < 0 || h[j] >= ff[l]) throw new IllegalArgumentException("layer " + l + ": neuron " + h[j] + " outside [0, " + ff[l] + ")");
                if (isHot[h[j]]) throw new IllegalArgumentException("layer " + l + ": neuron " + h[j] + " listed twice");
                isHot[h[j]] = true;
            }
            int[] c = new int[ff[l] - h.length];
            for (int r = 0, n = 0; r < ff[l]; r++) if (!isHot[r]) c[n++] = r;
            this.hot[l] = h;
            this.cold[l] = c;
        }
        this.counts = counts;
        this.source = source;
        this.plan = plan;
    }

    /** Every neuron on the CPU. */
    public static HybridPlacement allCold(int[] ff, String source) {
        return new HybridPlacement(ff, new int[ff.length][0], null, source, null);
    }

    /** The given hot neurons per layer (any order); {@code counts} may be null. */
    public static HybridPlacement of(int[] ff, int[][] hot, long[][] counts, String source) {
        return new HybridPlacement(ff, hot, counts, source, null);
    }

    /**
     * Plans under {@code budget} bytes with {@link PlacementPlanner} on {@code fp}. Without statistics every neuron
     * counts the same (the solver's tie-break then takes the lowest neuron ids of each layer).
     */
    public static HybridPlacement planned(GpuFootprint fp, long[][] counts, long budget, int tile, String source) {
        long[][] c = counts;
        if (c == null) {
            int[] ff = fp.ffSizes();
            c = new long[ff.length][];
            for (int l = 0; l < ff.length; l++) Arrays.fill(c[l] = new long[ff[l]], 1);
        }
        PlacementPlanner.Plan p = PlacementPlanner.plan(fp, c, budget, tile);
        return new HybridPlacement(fp.ffSizes(), p.hot().neurons(), counts, source, p);
    }

    /**
     * What {@link HybridFeedForward} allocates on the device, in the planner's terms: fixed = each layer's predictor
     * (uploaded only for layers with hot neurons, charged for all, as PowerInfer orders them) and a MoE layer's
     * shared predictor tensors; unit setup = a routed expert's own predictor (charged only if the expert gets hot
     * rows); workspace = the per-token device buffers for
     * {@code maxBatch} tokens plus the backend's per-stream scratch (CUDA's split-axpy partials, allocated by the
     * backend itself and so invisible to the allocation count); per neuron = one row each of gate, up and down_t
     * plus its 4-byte row-map entry and its gate/up bias entries where the FFN has biases; per layer = the padding of
     * those allocations. Allocations are padded to
     * {@link GpuFootprint#ALLOC_ALIGN}, so the planned total never falls below what is really allocated: the
     * placement's exact allocations, {@link DeviceFootprint#hybridFfn}, which the runtime makes, never exceed it.
     */
    public static GpuFootprint footprint(ModelWeights w, int maxBatch) {
        return footprint(w.layers(), null, maxBatch);
    }

    /** The same over the units of {@link HybridUnits} (a MoE model's experts), labelled as they are. */
    public static GpuFootprint footprint(HybridUnits units, int maxBatch) {
        return footprint(units.allWeights(), units.labels(), maxBatch);
    }

    private static GpuFootprint footprint(LayerWeights[] layers, String[] labels, int maxBatch) {
        int n = layers.length;
        long[] neuron = new long[n], overhead = new long[n];
        int[] ff = new int[n];
        List<GpuFootprint.Item> fixed = new ArrayList<>();
        int dim = layers[0].ffnUp().rowLength(), ffMax = 0, hMax = 1;
        java.util.Set<Tensor> charged = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());   // a shared fc1 once
        java.util.Map<Tensor, Integer> users = new java.util.IdentityHashMap<>();
        for (LayerWeights lw : layers)
            if (lw.hasPredictor()) for (Tensor t : new Tensor[] {lw.predictorFc1(), lw.predictorFc2()}) users.merge(t, 1, Integer::sum);
        long[] setup = new long[n];
        boolean experts = labels != null;
        for (int l = 0; l < n; l++) {
            LayerWeights lw = layers[l];
            ff[l] = lw.ffnUp().rows();
            ffMax = Math.max(ffMax, ff[l]);
            // a hot row's bias entries go to the device beside it (OPT, Falcon-style biased FFNs): 4 bytes each, own allocation
            int biases = (lw.has("ffn_gate.bias") ? 1 : 0) + (lw.has("ffn_up.bias") ? 1 : 0);
            neuron[l] = lw.ffnUp().rowBytes() + downRowBytes(lw) + 4 + (lw.ffnGate() != null ? lw.ffnGate().rowBytes() : 0) + 4L * biases;
            overhead[l] = (4L + biases) * (GpuFootprint.ALLOC_ALIGN - 1);
            if (lw.hasPredictor()) {
                hMax = Math.max(hMax, lw.predictorFc1().rows());
                long b = 0;
                for (Tensor t : new Tensor[] {lw.predictorFc1(), lw.predictorFc2()}) {
                    // an expert's own predictor goes up only with its hot rows: a setup cost of the unit, not a fixed part
                    if (experts && users.get(t) == 1) setup[l] += bytes(t);
                    else if (charged.add(t)) b += bytes(t);
                }
                if (b > 0 || !experts) fixed.add(new GpuFootprint.Item("predictors", labels == null ? "layer " + l : labels[l], b));
            }
        }
        // every hot scratch as large as a whole layer: the solver may make any layer entirely hot
        int denseFrom = GpuBackend.hybridDenseFrom();
        long ws = HybridWorkspace.bytes(dim, ffMax, ffMax, hMax, maxBatch, denseFrom) + DeviceFootprint.hybridStreamScratch(layers, ff, maxBatch, denseFrom);
        GpuFootprint fp = GpuFootprint.synthetic(fixed, ws, neuron, overhead, ff);
        return labels == null ? fp : fp.withUnitLabels(labels).withUnitSetup(setup);
    }

    /** CUDA's per-stream split scratch, as {@link DeviceFootprint#streamScratch} reserves it. */
    static long streamScratch(int dim) {
        return DeviceFootprint.streamScratch(dim);
    }

    private static long downRowBytes(LayerWeights lw) {
        return DeviceFootprint.downRowBytes(lw);
    }

    private static long bytes(Tensor t) {
        return GpuFootprint.pad(DeviceFootprint.tensorBytes(t));
    }

    /** Hot neurons per layer. */
    public int[] hotCounts() {
        int[] k = new int[hot.length];
        for (int l = 0; l < k.length; l++) k[l] = hot[l].length;
        return k;
    }

    public int layers() { return ff.length; }
    public int ff(int layer) { return ff[layer]; }
    public int[] ffSizes() { return ff.clone(); }
    /** Hot neuron ids of a layer, ascending (the gpu_bucket: compact GPU row j = neuron hot[j]). */
    public int[] hot(int layer) { return hot[layer].clone(); }
    /** Cold neuron ids of a layer, ascending. */
    public int[] cold(int layer) { return cold[layer].clone(); }
    public int hotCount(int layer) { return hot[layer].length; }
    public String source() { return source; }
    /** The planner's result when this placement was planned; null otherwise. */
    public PlacementPlanner.Plan plan() { return plan; }
    public boolean hasCounts() { return counts != null; }

    public long totalHot() {
        long t = 0;
        for (int[] h : hot) t += h.length;
        return t;
    }

    public long totalNeurons() {
        long t = 0;
        for (int f : ff) t += f;
        return t;
    }

    /** Share of a layer's profiled activations that fall on hot neurons; NaN without statistics. */
    public double coverage(int layer) {
        if (counts == null) return Double.NaN;
        long all = 0, covered = 0;
        for (long c : counts[layer]) all += c;
        for (int r : hot[layer]) covered += counts[layer][r];
        return all == 0 ? 0 : (double) covered / all;
    }

    /** Share of all profiled activations that fall on hot neurons; NaN without statistics. */
    public double coverage() {
        if (counts == null) return Double.NaN;
        long all = 0, covered = 0;
        for (int l = 0; l < ff.length; l++) {
            for (long c : counts[l]) all += c;
            for (int r : hot[l]) covered += counts[l][r];
        }
        return all == 0 ? 0 : (double) covered / all;
    }

    /** The same split with layer {@code l} entirely cold (used when its hot rows cannot be placed). */
    HybridPlacement withLayerCold(int l) {
        int[][] h = hot.clone();
        h[l] = new int[0];
        return new HybridPlacement(ff, h, counts, source, plan);
    }
}
