package org.powerinfer4j.engine.backend;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.powerinfer4j.engine.model.LayerWeights;
import org.powerinfer4j.engine.model.ModelConfig;
import org.powerinfer4j.engine.model.ModelException;
import org.powerinfer4j.engine.model.ModelWeights;
import org.powerinfer4j.engine.placement.ActivationStats;
import org.powerinfer4j.engine.placement.ExpertCounts;
import org.powerinfer4j.engine.placement.GpuIndex;
import org.powerinfer4j.engine.tensor.Tensor;

/**
 * The FFNs the hybrid executor splits into hot and cold neurons: one per layer of a dense model, one per routed
 * expert of each mixture-of-experts layer (its gate/up/down, its neuron-major down and its own predictor {@code
 * fc1.E}/{@code fc2.E}). Each unit's tensors carry the dense FFN's names ({@code ffn_up.weight}, {@code fc1.weight},
 * ...), so {@link HybridFeedForward}, the footprint and the planner treat an expert exactly as a layer; hot experts
 * then show up as units with many hot neurons, since their neurons fire over more tokens.
 *
 * <p>In a GPU index a MoE layer is one layer of n_expert·n_ff neurons, expert E's neuron r at E·n_ff + r
 * ({@link GpuIndex}'s expert layers); layers without a router in a MoE model run dense on the CPU and have no units
 * (their index entry is empty).
 */
public final class HybridUnits {
    private final LayerWeights[] weights;
    private final Tensor[] downT;
    private final int[] layerOf, expertOf;   // expertOf = -1 for a dense layer's unit
    private final int[][] unitOf;            // [layer][expert or 0] -> unit, -1 where none
    private final int[] layerFf, layerExperts;

    private HybridUnits(List<LayerWeights> weights, List<Tensor> downT, List<int[]> at, int[][] unitOf, int[] layerFf, int[] layerExperts) {
        this.weights = weights.toArray(LayerWeights[]::new);
        this.downT = downT.toArray(Tensor[]::new);
        this.layerOf = at.stream().mapToInt(a -> a[0]).toArray();
        this.expertOf = at.stream().mapToInt(a -> a[1]).toArray();
        this.unitOf = unitOf;
        this.layerFf = layerFf;
        this.layerExperts = layerExperts;
    }

    /** The units the hybrid FFN of this model places: its routed experts for a MoE model, else its layers. */
    public static HybridUnits of(ModelConfig c, ModelWeights w, Tensor[] downT, Tensor[][] expertDownT) {
        return c.params().moe() ? ofExperts(w, c.params().experts(), expertDownT) : ofLayers(w, downT == null ? new Tensor[w.layers().length] : downT);
    }

    /** One unit per layer (a dense-FFN model): unit l is layer l. */
    public static HybridUnits ofLayers(ModelWeights w, Tensor[] downT) {
        int n = w.layers().length;
        List<int[]> at = new ArrayList<>();
        int[][] unitOf = new int[n][];
        int[] ff = new int[n], experts = new int[n];
        for (int l = 0; l < n; l++) {
            at.add(new int[] {l, -1});
            unitOf[l] = new int[] {l};
            ff[l] = w.layers()[l].ffnUp().rows();
            experts[l] = 1;
        }
        return new HybridUnits(java.util.Arrays.asList(w.layers()), java.util.Arrays.asList(downT), at, unitOf, ff, experts);
    }

    /**
     * One unit per routed expert of every layer with a router, in (layer, expert) order.
     *
     * @param downT [layer][expert] neuron-major down projections (null rows for layers without a router); null
     *              when only planning (the footprint then sizes the down rows as the load's transposition makes them)
     */
    public static HybridUnits ofExperts(ModelWeights w, int experts, Tensor[][] downT) {
        int n = w.layers().length;
        List<LayerWeights> ws = new ArrayList<>();
        List<Tensor> d = new ArrayList<>();
        List<int[]> at = new ArrayList<>();
        int[][] unitOf = new int[n][];
        int[] ff = new int[n], counts = new int[n];
        for (int l = 0; l < n; l++) {
            LayerWeights lw = w.layers()[l];
            if (!lw.has("ffn_gate_inp.weight")) {
                unitOf[l] = new int[] {-1};
                ff[l] = lw.ffnUp() != null ? lw.ffnUp().rows() : 0;
                counts[l] = 1;
                continue;
            }
            unitOf[l] = new int[experts];
            counts[l] = experts;
            for (int e = 0; e < experts; e++) {
                Map<String, Tensor> m = new HashMap<>();
                put(m, "ffn_gate.weight", lw.expert("gate", e));
                put(m, "ffn_up.weight", lw.expert("up", e));
                put(m, "ffn_down.weight", lw.expert("down", e));
                Tensor dt = downT == null ? null : downT[l][e];
                put(m, "ffn_down_t.weight", dt);
                put(m, "ffn_gate.bias", lw.expertBias("gate", e));
                put(m, "ffn_up.bias", lw.expertBias("up", e));
                put(m, "ffn_down.bias", lw.expertBias("down", e));
                put(m, "fc1.weight", lw.expertPredictorFc1(e));
                put(m, "fc2.weight", lw.expertPredictorFc2(e));
                unitOf[l][e] = ws.size();
                ws.add(new LayerWeights(m));
                d.add(dt);
                at.add(new int[] {l, e});
                ff[l] = lw.expert("up", e).rows();
            }
        }
        if (ws.isEmpty()) throw new ModelException("the model has no mixture-of-experts layer to place");
        return new HybridUnits(ws, d, at, unitOf, ff, counts);
    }

    private static void put(Map<String, Tensor> m, String name, Tensor t) {
        if (t != null) m.put(name, t);
    }

    public int size() { return weights.length; }
    /** The unit's tensors under the dense FFN's names. */
    public LayerWeights weights(int unit) { return weights[unit]; }
    public LayerWeights[] allWeights() { return weights.clone(); }
    public Tensor[] downT() { return downT.clone(); }
    public int layer(int unit) { return layerOf[unit]; }
    /** The unit's expert, -1 for a dense layer. */
    public int expert(int unit) { return expertOf[unit]; }
    /** The unit of layer {@code layer}'s expert {@code e} (0 for a dense layer), -1 when it has none. */
    public int unit(int layer, int e) { return unitOf[layer][e]; }
    public boolean ofExperts() { return expertOf.length > 0 && expertOf[0] >= 0; }

    /** "blk.3" for a layer, "blk.3.e5" for an expert. */
    public String label(int unit) {
        return expertOf[unit] < 0 ? "blk." + layerOf[unit] : "blk." + layerOf[unit] + ".e" + expertOf[unit];
    }

    public String[] labels() {
        String[] s = new String[size()];
        for (int u = 0; u < s.length; u++) s[u] = label(u);
        return s;
    }

    public int[] ffSizes() {
        int[] ff = new int[size()];
        for (int u = 0; u < ff.length; u++) ff[u] = weights[u].ffnUp().rows();
        return ff;
    }

    /**
     * Firing counts per unit: a layer's counts, or each routed expert's counts over the tokens it received (the
     * profile's {@code expert_activation_counts}, which a MoE layer's statistics must have).
     */
    public long[][] counts(ActivationStats stats, String source) {
        if (stats.layers() != layerFf.length)
            throw new ModelException(source + " has " + stats.layers() + " layers, the model " + layerFf.length);
        long[][] c = new long[size()][];
        for (int u = 0; u < c.length; u++) {
            int l = layerOf[u], e = expertOf[u];
            if (e < 0) {
                if (stats.ff(l) != layerFf[l]) throw new ModelException(source + " layer " + l + " has " + stats.ff(l) + " neurons, the model " + layerFf[l]);
                c[u] = stats.counts(l);
                continue;
            }
            ExpertCounts ec = stats.experts(l);
            if (ec == null)
                throw new ModelException(source + " has no per-expert counts for layer " + l + " (blk." + l
                        + ".expert_activation_counts); profile the model again to place its experts");
            if (ec.experts() != layerExperts[l] || ec.neurons()[e].length != layerFf[l])
                throw new ModelException(source + " layer " + l + " counts " + ec.experts() + " experts of " + ec.neurons()[e].length
                        + " neurons, the model " + layerExperts[l] + " of " + layerFf[l]);
            c[u] = ec.neurons()[e];
        }
        return c;
    }

    /** The placement's hot neurons as a GPU index: a MoE layer's experts side by side (E·n_ff + r). */
    public GpuIndex toGpuIndex(long vramCapacity, HybridPlacement p) {
        int layers = layerFf.length;
        List<List<Integer>> flat = new ArrayList<>();
        for (int l = 0; l < layers; l++) flat.add(new ArrayList<>());
        for (int u = 0; u < size(); u++) {
            int l = layerOf[u], base = Math.max(0, expertOf[u]) * layerFf[l];
            for (int r : p.hot(u)) flat.get(l).add(base + r);
        }
        int[][] buckets = new int[layers][];
        int[] neurons = new int[layers];
        for (int l = 0; l < layers; l++) {
            buckets[l] = flat.get(l).stream().mapToInt(Integer::intValue).sorted().toArray();
            neurons[l] = Math.multiplyExact(layerFf[l], layerExperts[l]);
        }
        return GpuIndex.of(vramCapacity, neurons, layerExperts, buckets);
    }

    /** A GPU index's hot neurons per unit; the index must match the model's layers, experts and n_ff. */
    public HybridPlacement fromGpuIndex(GpuIndex idx, long[][] counts, String source) {
        if (idx.layers() != layerFf.length) throw new IllegalArgumentException("GPU index has " + idx.layers() + " layers, the model " + layerFf.length);
        List<List<Integer>> hot = new ArrayList<>();
        for (int u = 0; u < size(); u++) hot.add(new ArrayList<>());
        for (int l = 0; l < layerFf.length; l++) {
            if (idx.experts(l) != layerExperts[l] || idx.ffSizes()[l] != (long) layerFf[l] * layerExperts[l])
                throw new IllegalArgumentException("GPU index layer " + l + " has " + describe(idx.experts(l), idx.ffSizes()[l] / Math.max(1, idx.experts(l)))
                        + ", the model " + describe(layerExperts[l], layerFf[l]));
            for (int id : idx.bucket(l)) {
                int e = id / layerFf[l], u = unitOf[l][e];
                if (u < 0) throw new IllegalArgumentException("GPU index layer " + l + " places neurons, but that layer runs dense on the CPU");
                hot.get(u).add(id - e * layerFf[l]);
            }
        }
        int[][] h = new int[size()][];
        for (int u = 0; u < h.length; u++) h[u] = hot.get(u).stream().mapToInt(Integer::intValue).toArray();
        return HybridPlacement.of(ffSizes(), h, counts, source);
    }

    private static String describe(int experts, int ff) {
        return experts == 1 ? ff + " neurons" : experts + " experts of " + ff + " neurons";
    }
}
