package org.powerinfer4j.engine.placement;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import org.powerinfer4j.engine.model.LayerGraph;
import org.powerinfer4j.engine.gpu.GpuBackend;
import org.powerinfer4j.engine.model.LayerGraph.Buf;
import org.powerinfer4j.engine.model.LayerWeights;
import org.powerinfer4j.engine.model.ModelConfig;
import org.powerinfer4j.engine.model.ModelGraph;
import org.powerinfer4j.engine.model.ModelWeights;
import org.powerinfer4j.engine.model.RopeTables;
import org.powerinfer4j.engine.tensor.GGMLType;
import org.powerinfer4j.engine.tensor.Tensor;

/**
 * The device memory of a chosen placement, allocation by allocation, derived from the layer graph: what {@code plan}
 * prints, what {@code --vram-budget} decisions charge, and — in the same order and with the same sizes — what the
 * runtime ({@code GpuLayers}, {@code HybridFeedForward}) asks the backend for. Each {@link Alloc} is one
 * {@code GpuBackend.allocate} call; the device pads it to {@link GpuFootprint#ALLOC_ALIGN}.
 *
 * <p>Parts, in allocation order: whole layers ({@code -ngl}) or attention blocks (hybrid): every tensor the layer's
 * device ops read, each once; the output head; the rotary tables; then, per session, the token buffers (the
 * {@link Buf}s, FFN scratch, logits) and the F32 KV cache, K and V per layer. The hybrid FFN: its workspace (inputs,
 * predictor scratch, mask, hot scratch, partial output for {@code batch} tokens), the predictors of layers with hot
 * neurons, and per such layer the compact gate, up and down_t rows and the row map. {@link #reserves()} are memory the
 * CUDA backend allocates by itself (per-stream scratch for split partials): charged to the budget, not allocated by the
 * engine, so not among the allocations.
 */
public final class DeviceFootprint {
    /** One device allocation: category (as {@code plan} totals them), label, and the bytes requested. */
    public record Alloc(String category, String label, long bytes) {
        /** The bytes the device takes for it. */
        public long padded() {
            return GpuFootprint.pad(Math.max(1, bytes));
        }
    }

    public static final DeviceFootprint EMPTY = new DeviceFootprint(List.of(), List.of());

    private final List<Alloc> allocs, reserves;

    public DeviceFootprint(List<Alloc> allocs, List<Alloc> reserves) {
        this.allocs = List.copyOf(allocs);
        this.reserves = List.copyOf(reserves);
    }

    /** Every allocation the engine makes, in the runtime's order. */
    public List<Alloc> allocations() { return allocs; }

    /** Backend-internal memory charged to the budget (CUDA's per-stream split scratch). */
    public List<Alloc> reserves() { return reserves; }

    /** Padded bytes of the engine's allocations. */
    public long allocatedBytes() {
        return padded(allocs);
    }

    /** Allocations plus reserves: what the budget is charged. */
    public long totalBytes() {
        return allocatedBytes() + padded(reserves);
    }

    public DeviceFootprint plus(DeviceFootprint o) {
        List<Alloc> a = new ArrayList<>(allocs), r = new ArrayList<>(reserves);
        a.addAll(o.allocs);
        r.addAll(o.reserves);
        return new DeviceFootprint(a, r);
    }

    /** Padded bytes per category, in first-seen order (reserves last). */
    public Map<String, Long> byCategory() {
        Map<String, Long> m = new LinkedHashMap<>();
        for (Alloc a : allocs) m.merge(a.category(), a.padded(), Long::sum);
        for (Alloc a : reserves) m.merge(a.category() + " (reserve)", a.padded(), Long::sum);
        return m;
    }

    /** The per-category totals and the total, as {@code plan} prints them. */
    public String table() {
        StringBuilder sb = new StringBuilder();
        Map<String, Long> counts = new LinkedHashMap<>();
        for (Alloc a : allocs) counts.merge(a.category(), 1L, Long::sum);
        for (Alloc a : reserves) counts.merge(a.category() + " (reserve)", 1L, Long::sum);
        sb.append(String.format(Locale.ROOT, "%-28s %8s %16s%n", "device memory", "allocs", "bytes"));
        for (Map.Entry<String, Long> e : byCategory().entrySet())
            sb.append(String.format(Locale.ROOT, "%-28s %8d %,16d%n", e.getKey(), counts.get(e.getKey()), e.getValue()));
        sb.append(String.format(Locale.ROOT, "%-28s %8d %,16d%n", "allocated", allocs.size(), allocatedBytes()));
        sb.append(String.format(Locale.ROOT, "%-28s %8d %,16d%n", "device total", allocs.size() + reserves.size(), totalBytes()));
        return sb.toString();
    }

    private static long padded(List<Alloc> l) {
        long b = 0;
        for (Alloc a : l) b += a.padded();
        return b;
    }

    // --- dense layers on the device (-ngl) and attention blocks (hybrid) -------------------------------------------

    /** The ops the device runs for a layer: all of them, or the attention block {@code [0, attentionEnd)}. */
    public static List<LayerGraph.Op> deviceOps(LayerGraph g, boolean attentionOnly) {
        return attentionOnly ? g.ops().subList(0, g.attentionEnd()) : g.ops();
    }

    /** Every tensor the device holds for these ops, each once, in upload order. */
    public static Set<Tensor> deviceTensors(LayerGraph g, LayerWeights lw, boolean attentionOnly) {
        Set<Tensor> t = new LinkedHashSet<>();
        for (LayerGraph.Op op : deviceOps(g, attentionOnly)) {
            switch (op) {
                case LayerGraph.Norm n -> addAll(t, n.weight(), n.bias());
                case LayerGraph.Linear l -> addAll(t, l.weight(), l.bias());
                case LayerGraph.HeadNorm h -> addAll(t, h.weight());
                case LayerGraph.Attention a -> addAll(t, a.sinks());
                case LayerGraph.Ffn f -> {
                    if (!lw.has("ffn_gate_inp.weight")) addAll(t, lw.ffnGate(), lw.ffnUp(), down(lw), lw.get("ffn_gate.bias"), lw.get("ffn_up.bias"), lw.get("ffn_down.bias"));
                    else {   // experts: the router, every expert (any may be chosen), a shared expert
                        addAll(t, lw.get("ffn_gate_inp.weight"), lw.get("ffn_gate_inp.bias"));
                        for (int e = 0; lw.expert("up", e) != null; e++)
                            addAll(t, lw.expert("gate", e), lw.expert("up", e), lw.expert("down", e), lw.expertBias("gate", e), lw.expertBias("up", e),
                                    lw.expertBias("down", e));
                        addAll(t, lw.get("ffn_gate_shexp.weight"), lw.get("ffn_up_shexp.weight"), lw.get("ffn_down_shexp.weight"), lw.get("ffn_gate_inp_shexp.weight"));
                    }
                }
                case LayerGraph.Rope r -> { }
                case LayerGraph.Add a -> { }
            }
        }
        return t;
    }

    private static void addAll(Set<Tensor> set, Tensor... ts) {
        for (Tensor t : ts) if (t != null) set.add(t);
    }

    /** The down projection as stored: {@code ffn_down} ({dim rows}), else PowerInfer's neuron-major {@code ffn_down_t}. */
    public static Tensor down(LayerWeights l) {
        return l.ffnDown() != null ? l.ffnDown() : l.ffnDownT();
    }

    /** Bytes of a tensor as uploaded whole (matrix or floats). */
    public static long tensorBytes(Tensor t) {
        return t.rowBytes() * t.rows();
    }

    /** One layer's weights on the device: whole, or its attention block. */
    public static List<Alloc> layerWeights(int layer, LayerGraph g, LayerWeights lw, boolean attentionOnly) {
        String cat = attentionOnly ? "attention weights" : "layer weights";
        List<Alloc> r = new ArrayList<>();
        for (Tensor t : deviceTensors(g, lw, attentionOnly)) r.add(new Alloc(cat, t.name(), tensorBytes(t)));
        return r;
    }

    /** The final norm and the output matrix. */
    public static List<Alloc> head(ModelGraph g) {
        List<Alloc> r = new ArrayList<>();
        r.add(new Alloc("output head", g.output().name(), tensorBytes(g.output())));
        r.add(new Alloc("output head", g.outputNorm().weight().name(), tensorBytes(g.outputNorm().weight())));
        if (g.outputNorm().bias() != null) r.add(new Alloc("output head", g.outputNorm().bias().name(), tensorBytes(g.outputNorm().bias())));
        return r;
    }

    /** The rotary tables' inverse frequencies, one allocation per table. */
    public static List<Alloc> ropes(ModelGraph g) {
        List<Alloc> r = new ArrayList<>();
        RopeTables[] t = g.ropes();
        for (int i = 0; i < t.length; i++) r.add(new Alloc("rope tables", "table " + i, 4L * Math.max(1, t[i].invFreq().length)));
        return r;
    }

    /** Floats of one token's {@link Buf}. */
    public static int bufFloats(Buf b, ModelConfig c) {
        return switch (b) {
            case Q, ATT -> c.qDim();
            case K, V -> c.kvDim();
            case X, XB, ATT_OUT, FFN_OUT -> c.dim();
        };
    }

    /** n_ff of the FFN the device runs for these layers (1 when none). */
    public static int deviceFf(ModelGraph g, ModelWeights w, int from, int n, boolean attentionOnly) {
        int ff = 1;
        if (attentionOnly) return ff;
        for (int l = from; l < from + n; l++)
            for (LayerGraph.Op op : g.layers()[l].ops())
                if (op instanceof LayerGraph.Ffn) ff = Math.max(ff, ffnHidden(w.layers()[l]));
        return ff;
    }

    /** The widest hidden layer of a layer's FFN: its up projection, or its largest expert (or shared expert). */
    static int ffnHidden(LayerWeights lw) {
        if (lw.ffnUp() != null) return lw.ffnUp().rows();
        int ff = 1;
        for (int e = 0; lw.expert("up", e) != null; e++) ff = Math.max(ff, lw.expert("up", e).rows());
        Tensor shared = lw.get("ffn_up_shexp.weight");
        return shared != null ? Math.max(ff, shared.rows()) : ff;
    }

    /**
     * One session's device state: the token buffers, FFN scratch (whole layers; expert layers add the router's
     * logits and one expert's output), the KV cache of each device
     * layer and the logits (with the head), in {@code GpuLayers}' order.
     */
    public static List<Alloc> session(ModelConfig c, int from, int n, int maxFf, boolean attentionOnly, boolean head, int contextLength) {
        return session(c, from, n, maxFf, attentionOnly, head, contextLength, 1, GGMLType.F32);
    }

    /**
     * As {@link #session(ModelConfig, int, int, int, boolean, boolean, int)} with token buffers and FFN scratch for chunks
     * of {@code batch} tokens and a KV cache of {@code kvType} (F32 or F16) elements.
     */
    public static List<Alloc> session(ModelConfig c, int from, int n, int maxFf, boolean attentionOnly, boolean head, int contextLength, int batch,
                                      GGMLType kvType) {
        List<Alloc> r = new ArrayList<>();
        String tokens = batch > 1 ? " × " + batch : "";
        for (Buf b : Buf.values()) {
            if (attentionOnly && b == Buf.FFN_OUT) continue;
            r.add(new Alloc("session buffers", "token " + b + tokens, 4L * batch * Math.max(1, bufFloats(b, c))));
        }
        if (!attentionOnly) {
            r.add(new Alloc("session buffers", "FFN hidden" + tokens, 4L * batch * maxFf));
            r.add(new Alloc("session buffers", "FFN hidden 2" + tokens, 4L * batch * maxFf));
            if (c.params().moe()) {
                r.add(new Alloc("session buffers", "router logits", 4L * Math.max(1, c.params().experts())));
                r.add(new Alloc("session buffers", "expert output", 4L * c.dim()));
            }
        }
        for (int l = from; l < from + n; l++) r.addAll(kvCache(c, l, contextLength, kvType));
        if (head) r.add(new Alloc("session buffers", "logits", 4L * Math.max(1, c.vocabSize())));
        return r;
    }

    /** One layer's KV cache of {@code kvType} elements (F32 or F16) on the device, K then V. */
    public static List<Alloc> kvCache(ModelConfig c, int layer, int contextLength, GGMLType kvType) {
        long b = GpuBackend.kvElementBytes(kvType) * Math.max(1, (long) contextLength * c.kvDim());
        String shape = " (" + contextLength + " × " + c.kvDim() + " " + kvType + ")";
        return List.of(new Alloc("KV cache", "blk." + layer + " K" + shape, b), new Alloc("KV cache", "blk." + layer + " V" + shape, b));
    }

    /** Layers {@code [from, from + n)} (whole or attention blocks), maybe the head, the rotary tables and one session. */
    public static DeviceFootprint layers(ModelConfig c, ModelGraph g, ModelWeights w, int from, int n, boolean attentionOnly, boolean head,
                                         int contextLength) {
        return layers(c, g, w, from, n, attentionOnly, head, contextLength, 1, GGMLType.F32);
    }

    /** With an F32 KV cache. */
    public static DeviceFootprint layers(ModelConfig c, ModelGraph g, ModelWeights w, int from, int n, boolean attentionOnly, boolean head,
                                         int contextLength, int batch) {
        return layers(c, g, w, from, n, attentionOnly, head, contextLength, batch, GGMLType.F32);
    }

    /**
     * As {@link #layers(ModelConfig, ModelGraph, ModelWeights, int, int, boolean, boolean, int)} for prompt chunks of
     * up to {@code batch} tokens: batch-sized session buffers, and (from {@link GpuBackend#gemmFrom()} tokens) the
     * CUDA stream scratch of the largest GEMM as a reserve, and a KV cache of {@code kvType} (F32 or F16) elements.
     */
    public static DeviceFootprint layers(ModelConfig c, ModelGraph g, ModelWeights w, int from, int n, boolean attentionOnly, boolean head,
                                         int contextLength, int batch, GGMLType kvType) {
        if (n == 0) return EMPTY;
        List<Alloc> r = new ArrayList<>();
        long gemm = 0;
        for (int l = from; l < from + n; l++) {
            r.addAll(layerWeights(l, g.layers()[l], w.layers()[l], attentionOnly));
            for (Tensor t : deviceTensors(g.layers()[l], w.layers()[l], attentionOnly))
                if (t.ne().length == 2) gemm = Math.max(gemm, GpuBackend.gemmScratchBytes(t.type(), t.rows(), t.rowLength(), batch));
        }
        if (head) r.addAll(head(g));
        r.addAll(ropes(g));
        r.addAll(session(c, from, n, deviceFf(g, w, from, n, attentionOnly), attentionOnly, head, contextLength, batch, kvType));
        // the stream's scratch starts at 1 MiB and grows to the largest GEMM's F16 inputs and weight slab
        return new DeviceFootprint(r, gemm == 0 ? List.of() : List.of(new Alloc("stream scratch", "prefill GEMM (F16 inputs, dequantized slab)",
                Math.max(1L << 20, gemm))));
    }

    // --- the hybrid FFN ---------------------------------------------------------------------------------------------

    /** The hybrid FFN's workspace for {@code batch} tokens, in its allocation order. */
    public static List<Alloc> hybridWorkspace(int dim, int ffMax, int kMax, int hMax, int batch, int denseFrom) {
        String c = "FFN workspace";
        long vec = 4L * batch * dim, t = batch >= denseFrom ? batch : 1;   // dense calls keep every token's values
        return List.of(new Alloc(c, "x", vec), new Alloc(c, "residual", vec), new Alloc(c, "predictor hidden", 4L * hMax * t),
                new Alloc(c, "predictor logits", 4L * ffMax * t), new Alloc(c, "mask", (long) batch * ffMax), new Alloc(c, "hot gate", 4L * kMax * t),
                new Alloc(c, "hot up", 4L * kMax * t), new Alloc(c, "hot activation", 4L * kMax * t), new Alloc(c, "partial output", vec));
    }

    /** CUDA's per-stream scratch for split axpy partials grows to at least 1 MiB; 1024 splits of dim floats is above any split it picks. */
    public static long streamScratch(int dim) {
        return GpuFootprint.pad(Math.max(1L << 20, 4096L * dim));
    }

    /** Bytes of one neuron's row of the neuron-major down projection the hybrid FFN uploads. */
    public static long downRowBytes(LayerWeights lw) {
        if (lw.ffnDownT() != null) return lw.ffnDownT().rowBytes();
        Tensor d = lw.ffnDown();   // transposed at load: F32 stays F32, everything else becomes F16 (TransposedDown)
        return (d.type() == GGMLType.F32 ? 4L : 2L) * d.rows();
    }

    /**
     * The hybrid FFN with {@code hot[l]} hot neurons in layer l: nothing when no layer has any, else the workspace,
     * the predictors of layers with hot neurons, their compact rows and row maps, and the FFN stream's scratch reserve.
     */
    public static DeviceFootprint hybridFfn(ModelWeights w, int[] hot, int batch) {
        return hybridFfn(w.layers(), null, hot, batch);
    }

    /** The same over named units (a MoE model's experts: "blk.3.e5"); {@code labels} null numbers them as layers. */
    public static DeviceFootprint hybridFfn(LayerWeights[] lw, String[] labels, int[] hot, int batch) {
        int kMax = 0, ffMax = 0, hMax = 1;
        for (int l = 0; l < lw.length; l++) {
            kMax = Math.max(kMax, hot[l]);
            ffMax = Math.max(ffMax, lw[l].ffnUp().rows());
            if (lw[l].hasPredictor()) hMax = Math.max(hMax, lw[l].predictorFc1().rows());
        }
        if (kMax == 0) return EMPTY;
        int dim = lw[0].ffnUp().rowLength();
        int denseFrom = GpuBackend.hybridDenseFrom();
        List<Alloc> r = new ArrayList<>(hybridWorkspace(dim, ffMax, kMax, hMax, Math.max(1, batch), denseFrom));
        java.util.Set<Tensor> uploaded = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
        for (int l = 0; l < lw.length; l++) {
            if (hot[l] == 0 || !lw[l].hasPredictor()) continue;
            String u = labels == null ? "blk." + l : labels[l];
            // a tensor several units share (a MoE layer-wide fc1) is uploaded once, by its first unit
            if (uploaded.add(lw[l].predictorFc1())) r.add(new Alloc("predictors", u + " fc1", tensorBytes(lw[l].predictorFc1())));
            if (uploaded.add(lw[l].predictorFc2())) r.add(new Alloc("predictors", u + " fc2", tensorBytes(lw[l].predictorFc2())));
        }
        for (int l = 0; l < lw.length; l++) {
            int k = hot[l];
            if (k == 0) continue;
            String p = (labels == null ? "blk." + l : labels[l]) + " " + k + " hot ";
            if (lw[l].ffnGate() != null) r.add(new Alloc("hot FFN rows", p + "gate", lw[l].ffnGate().rowBytes() * k));
            r.add(new Alloc("hot FFN rows", p + "up", lw[l].ffnUp().rowBytes() * k));
            r.add(new Alloc("hot FFN rows", p + "down_t", downRowBytes(lw[l]) * k));
            r.add(new Alloc("hot FFN rows", p + "row map", 4L * k));
            if (lw[l].has("ffn_gate.bias")) r.add(new Alloc("hot FFN rows", p + "gate bias", 4L * k));
            if (lw[l].has("ffn_up.bias")) r.add(new Alloc("hot FFN rows", p + "up bias", 4L * k));
        }
        return new DeviceFootprint(r, List.of(new Alloc("stream scratch", "hybrid FFN stream (CUDA split partials, dense-batch GEMMs)",
                hybridStreamScratch(lw, hot, batch, denseFrom))));
    }

    /**
     * The hybrid FFN stream's scratch reserve: CUDA's split partials, and for calls of {@code denseFrom} tokens or
     * more the largest GEMM a dense call runs (the predictor, the k hot gate/up rows, the k hot down_t rows).
     */
    public static long hybridStreamScratch(LayerWeights[] lw, int[] hot, int batch, int denseFrom) {
        int dim = lw[0].ffnUp().rowLength();
        long s = streamScratch(dim);
        if (batch < denseFrom) return s;
        for (int l = 0; l < lw.length; l++) {
            int k = hot[l];
            if (k == 0) continue;
            LayerWeights w = lw[l];
            if (w.ffnGate() != null) s = Math.max(s, GpuBackend.gemmScratchBytes(w.ffnGate().type(), k, dim, batch));
            s = Math.max(s, GpuBackend.gemmScratchBytes(w.ffnUp().type(), k, dim, batch));
            s = Math.max(s, GpuBackend.axpyGemmScratchBytes(downType(w), k, dim, batch));
            if (w.hasPredictor())
                for (Tensor t : new Tensor[] {w.predictorFc1(), w.predictorFc2()})
                    s = Math.max(s, GpuBackend.gemmScratchBytes(t.type(), t.rows(), t.rowLength(), batch, true));   // matMulPrecise
        }
        return GpuFootprint.pad(s);
    }

    /** The element type of the neuron-major down rows the hybrid FFN uploads (as {@link #downRowBytes}). */
    static GGMLType downType(LayerWeights lw) {
        if (lw.ffnDownT() != null) return lw.ffnDownT().type();
        return lw.ffnDown().type() == GGMLType.F32 ? GGMLType.F32 : GGMLType.F16;
    }
}
