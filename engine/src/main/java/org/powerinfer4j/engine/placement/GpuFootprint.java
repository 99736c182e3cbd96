package org.powerinfer4j.engine.placement;

import java.util.ArrayList;
import java.util.List;
import org.powerinfer4j.engine.gguf.GGUFFile;
import org.powerinfer4j.engine.gguf.TensorInfo;
import org.powerinfer4j.engine.model.ModelConfig;
import org.powerinfer4j.engine.tensor.GGMLType;

/**
 * Exact GPU memory accounting of a model, computed from its tensor shapes and types (no weights are read).
 *
 * <p>Every GPU allocation is rounded up to {@link #ALLOC_ALIGN} bytes (cudaMalloc and ggml's CUDA buffers align
 * to 256). Fixed parts, in PowerInfer's priority order: attention weights (and attention norms) per layer,
 * predictors per layer, FFN norms, the output head ({@code output_norm} and {@code output}, or the embedding
 * when the output is tied), the KV cache. Hot FFN neurons cost, per layer, one row each of {@code ffn_gate},
 * {@code ffn_up} and {@code ffn_down_t} in their tensor types plus a 4-byte {@code gpu_bucket} entry.
 *
 * <p>Workspace reserve, all F32, one set reused by every layer (B = batch tokens, C = context):
 * <pre>
 *   residual, normed, FFN/attention output     3 · B · n_embd
 *   q, k, v, attention output                  B · (2·q_dim + 2·kv_dim)
 *   attention scores                           B · n_head · C
 *   gate, up (hot part ≤ n_ff)                 2 · B · n_ff
 *   predictor hidden, predictor logits         B · H_max + B · n_ff
 *   GPU FFN partial output, CPU partial input  2 · B · n_embd
 *   output logits                              B · n_vocab
 * </pre>
 * each buffer padded to {@link #ALLOC_ALIGN}; plus per layer the {@code gpu_idx} mask (4 · n_ff, padded) and the
 * worst-case padding of that layer's four compact hot allocations (gate, up, down_t, bucket: 4 · 255 bytes),
 * charged up front so that the neuron choice can treat every neuron's cost as exact.
 */
public final class GpuFootprint {
    public static final int ALLOC_ALIGN = 256;

    /** One fixed allocation group: a category in priority order, a label, and its padded bytes. */
    public record Item(String category, String label, long bytes) {}

    private final List<Item> fixed = new ArrayList<>();
    private final long workspace;
    private final long[] neuronBytes;
    private final long[] layerOverhead;
    private final int[] ffSizes;
    private final String description;
    private String[] unitLabels;      // null: the units are the layers, numbered
    private long[] unitSetup;         // per unit, bytes needed only once it has hot neurons (its own predictor)

    private GpuFootprint(long workspace, long[] neuronBytes, long[] layerOverhead, int[] ffSizes, String description) {
        this.workspace = workspace;
        this.neuronBytes = neuronBytes;
        this.layerOverhead = layerOverhead;
        this.ffSizes = ffSizes;
        this.description = description;
        this.unitSetup = new long[ffSizes.length];
    }

    /**
     * @param context  KV cache length (tokens)
     * @param kvType   KV cache element type (F16, llama.cpp's and PowerInfer's default, or F32)
     * @param batch    tokens per forward chunk on the GPU (PowerInfer's n_batch, 512 by default)
     */
    public static GpuFootprint of(GGUFFile f, ModelConfig c, int context, GGMLType kvType, int batch) {
        if (kvType != GGMLType.F16 && kvType != GGMLType.F32) throw new IllegalArgumentException("KV cache type must be F16 or F32, is " + kvType);
        if (context < 1 || batch < 1) throw new IllegalArgumentException("context and batch must be >= 1");
        int layers = c.layers();
        long[] neuron = new long[layers], overhead = new long[layers];
        int[] ff = new int[layers];
        long hMax = 0;
        for (int l = 0; l < layers; l++) {
            String p = "blk." + l + ".";
            TensorInfo up = require(f, p + "ffn_up.weight");
            ff[l] = Math.toIntExact(up.ne()[1]);
            long b = rowBytes(up) + 4;
            TensorInfo gate = f.tensorInfo(p + "ffn_gate.weight");
            if (gate != null) b += rowBytes(gate);
            TensorInfo downT = f.tensorInfo(p + "ffn_down_t.weight");
            if (downT != null) b += rowBytes(downT);
            else b += transposedRowBytes(require(f, p + "ffn_down.weight"));
            neuron[l] = b;
            overhead[l] = pad(4L * ff[l]) + 4L * (ALLOC_ALIGN - 1);
            TensorInfo fc1 = f.tensorInfo(p + "fc1.weight");
            if (fc1 != null) hMax = Math.max(hMax, fc1.ne()[1]);
        }
        long B = batch, dim = c.dim(), nff = 0;
        for (int x : ff) nff = Math.max(nff, x);
        long ws = 0;
        ws += 3 * pad(4 * B * dim);
        ws += 2 * pad(4 * B * c.qDim()) + 2 * pad(4 * B * c.kvDim());
        ws += pad(4 * B * c.heads() * (long) context);
        ws += 2 * pad(4 * B * nff);
        ws += (hMax > 0 ? pad(4 * B * hMax) + pad(4 * B * nff) : 0);
        ws += 2 * pad(4 * B * dim);
        ws += pad(4 * B * c.vocabSize());
        GpuFootprint fp = new GpuFootprint(ws, neuron, overhead, ff,
                String.format("ctx %d, KV %s, batch %d", context, kvType, batch));

        for (int l = 0; l < layers; l++) {
            String p = "blk." + l + ".";
            fp.fixed.add(new Item("attention", "layer " + l, sumPadded(f, t -> t.name().startsWith(p + "attn_"))));
        }
        for (int l = 0; l < layers; l++) {
            String p = "blk." + l + ".";
            long b = sumPadded(f, t -> t.name().equals(p + "fc1.weight") || t.name().equals(p + "fc2.weight"));
            if (b > 0) fp.fixed.add(new Item("predictors", "layer " + l, b));
        }
        fp.fixed.add(new Item("ffn norms", "all layers", sumPadded(f, t -> t.name().matches("blk\\.\\d+\\.ffn_norm\\.(weight|bias)"))));
        boolean tied = !f.hasTensor("output.weight");
        fp.fixed.add(new Item("output head", tied ? "output_norm + token_embd (tied)" : "output_norm + output",
                sumPadded(f, t -> t.name().startsWith("output_norm.") || t.name().equals(tied ? "token_embd.weight" : "output.weight"))));
        long kvPerLayer = pad(kvType.byteSize((long) context * c.kvDim()));
        fp.fixed.add(new Item("KV cache", context + " × " + c.kvDim() + " " + kvType + " × K,V × " + layers + " layers", 2L * layers * kvPerLayer));
        return fp;
    }

    private static TensorInfo require(GGUFFile f, String name) {
        TensorInfo t = f.tensorInfo(name);
        if (t == null) throw new IllegalArgumentException("tensor '" + name + "' is missing");
        return t;
    }

    private static long sumPadded(GGUFFile f, java.util.function.Predicate<TensorInfo> which) {
        long b = 0;
        for (TensorInfo t : f.tensorInfos()) if (which.test(t)) b += pad(t.byteSize());
        return b;
    }

    static long rowBytes(TensorInfo t) {
        return t.type().byteSize(t.ne()[0]);
    }

    /**
     * Bytes of one neuron's row of a transposed {@code ffn_down} {n_ff, n_embd}: a row of n_embd values in the
     * same type when n_embd is a whole number of blocks, else F16 (what {@code train-predictors} writes).
     */
    static long transposedRowBytes(TensorInfo down) {
        long nEmbd = down.ne()[1];
        GGMLType t = down.type();
        if (t == GGMLType.F32 || t == GGMLType.F16 || t == GGMLType.BF16) return t.byteSize(nEmbd);
        return nEmbd % t.blockSize == 0 ? t.byteSize(nEmbd) : GGMLType.F16.byteSize(nEmbd);
    }

    public static long pad(long bytes) {
        return (bytes + ALLOC_ALIGN - 1) / ALLOC_ALIGN * ALLOC_ALIGN;
    }

    /** For tests and callers with their own accounting. */
    public static GpuFootprint synthetic(List<Item> fixed, long workspace, long[] neuronBytes, long[] layerOverhead, int[] ffSizes) {
        GpuFootprint fp = new GpuFootprint(workspace, neuronBytes.clone(), layerOverhead.clone(), ffSizes.clone(), "synthetic");
        fp.fixed.addAll(fixed);
        return fp;
    }

    /** The same footprint whose units (one per entry of {@link #ffSizes}) are named, e.g. "blk.3.e5" for experts. */
    public GpuFootprint withUnitLabels(String[] labels) {
        if (labels.length != ffSizes.length) throw new IllegalArgumentException(labels.length + " labels for " + ffSizes.length + " units");
        GpuFootprint fp = copy();
        fp.unitLabels = labels.clone();
        return fp;
    }

    /**
     * The same footprint where unit u needs {@code setup[u]} bytes more once it has any hot neuron, and none
     * otherwise: a routed expert's own predictor, uploaded only for an expert with hot rows ({@link HotNeuronSolver}
     * charges it with the unit's first group). The fixed items must not count it as well.
     */
    public GpuFootprint withUnitSetup(long[] setup) {
        if (setup.length != ffSizes.length) throw new IllegalArgumentException(setup.length + " setup sizes for " + ffSizes.length + " units");
        for (long b : setup) if (b < 0) throw new IllegalArgumentException("negative setup bytes " + b);
        GpuFootprint fp = copy();
        fp.unitSetup = setup.clone();
        return fp;
    }

    private GpuFootprint copy() {
        GpuFootprint fp = new GpuFootprint(workspace, neuronBytes, layerOverhead, ffSizes, description);
        fp.fixed.addAll(fixed);
        fp.unitLabels = unitLabels;
        fp.unitSetup = unitSetup;
        return fp;
    }

    /** Unit {@code u}'s name in tables: its label, else the layer number. */
    public String unitLabel(int u) {
        return unitLabels == null ? String.valueOf(u) : unitLabels[u];
    }

    public List<Item> fixedItems() { return List.copyOf(fixed); }
    public long workspace() { return workspace; }
    public long[] neuronBytes() { return neuronBytes.clone(); }
    public long[] layerOverhead() { return layerOverhead.clone(); }
    /** Per unit, the bytes it needs only once it has hot neurons ({@link #withUnitSetup}); zeros by default. */
    public long[] unitSetup() { return unitSetup.clone(); }
    public int[] ffSizes() { return ffSizes.clone(); }
    public int layers() { return ffSizes.length; }
    public String description() { return description; }

    /** Bytes of every FFN neuron of every layer (what a full GPU offload of the FFNs would take). */
    public long allNeuronBytes() {
        long b = 0;
        for (int l = 0; l < ffSizes.length; l++) b += ffSizes[l] * neuronBytes[l];
        return b;
    }
}
