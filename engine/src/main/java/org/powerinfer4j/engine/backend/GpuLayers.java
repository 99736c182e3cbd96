package org.powerinfer4j.engine.backend;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.powerinfer4j.engine.gpu.GgmlRows;
import org.powerinfer4j.engine.gpu.GpuBackend;
import org.powerinfer4j.engine.gpu.GpuBuffer;
import org.powerinfer4j.engine.gpu.GpuMatrix;
import org.powerinfer4j.engine.gpu.GpuStream;
import org.powerinfer4j.engine.model.GraphBuilder;
import org.powerinfer4j.engine.model.InferenceState;
import org.powerinfer4j.engine.model.LayerGraph;
import org.powerinfer4j.engine.model.LayerGraph.Buf;
import org.powerinfer4j.engine.model.LayerOffload;
import org.powerinfer4j.engine.model.ModelConfig;
import org.powerinfer4j.engine.model.ModelGraph;
import org.powerinfer4j.engine.model.ModelWeights;
import org.powerinfer4j.engine.model.RopeTables;
import org.powerinfer4j.engine.placement.DeviceFootprint;
import org.powerinfer4j.engine.placement.GpuFootprint;
import org.powerinfer4j.engine.tensor.GGMLType;
import org.powerinfer4j.engine.tensor.Tensor;

/**
 * llama.cpp's {@code -ngl N} for dense models: the last N transformer layers (and with N = layers + 1 the final
 * norm and output head) live whole on the device — weights uploaded once, a per-session KV cache in the session's
 * type (F16 or F32) — and the residual stream crosses PCIe once per chunk. Each layer runs its {@link LayerGraph} —
 * the graph the CPU runs, of any architecture — with the device's operators ({@link DeviceLayer}), a chunk's tokens
 * or a sequence batch's rows in one pass; layers the device
 * cannot run (weight types its kernels lack) stay on the CPU below the device suffix. In PowerInfer's
 * hybrid placement ({@link #attention}) only the attention blocks {@code [0, attentionEnd)} of the first layers live
 * here, and the FFN stays with the hybrid executor.
 *
 * <p>Every token's keys and values are also copied back into the CPU KV cache, so the CPU can take over at any
 * moment: a device allocation failure (weights at load, a session's cache at its first token) or a failed
 * launch degrades to the CPU with one warning — the chunk in flight is recomputed there from the residuals saved at
 * its start — never an abort and never a wrong answer.
 */
public final class GpuLayers implements LayerOffload, AutoCloseable {
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT;

    private final GpuBackend gpu;
    private final ModelConfig c;
    private final ModelGraph graph;
    private final int first;                 // whole layers [first, L) run here; L in attention-only mode
    private final boolean attentionOnly;
    private final DeviceLayer[] layers;
    private final int[] slot;                // model layer → index into layers, −1 when the CPU has it
    private final GpuMatrix output;          // null: the head stays on the CPU
    private final DeviceLayer.Norm outputNorm;
    private final DeviceLayer.DeviceRope[] ropes;
    private final int contextLength, maxFf;
    private final int batch;                 // tokens per device chunk: the session buffers hold this many
    private final GGMLType kvType;           // the device KV cache's elements: F32, or F16 (the session's -ctk)
    private final long weightBytes;
    private final DeviceFootprint footprint;  // what the upload and one session allocate
    private final List<AutoCloseable> owned;
    private final Consumer<String> warn;
    private final boolean ownsBackend;       // false when the model shares the backend with its hybrid FFN
    private final java.util.concurrent.atomic.AtomicBoolean kvWarned = new java.util.concurrent.atomic.AtomicBoolean();
    private final java.util.concurrent.atomic.AtomicLong sequenceRows = new java.util.concurrent.atomic.AtomicLong();
    private volatile boolean failed;

    private GpuLayers(GpuBackend gpu, boolean ownsBackend, ModelConfig c, ModelGraph graph, int first, boolean attentionOnly, DeviceLayer[] layers,
                      GpuMatrix output, DeviceLayer.Norm outputNorm, DeviceLayer.DeviceRope[] ropes, int contextLength, int batch, GGMLType kvType,
                      long weightBytes, DeviceFootprint footprint, List<AutoCloseable> owned, Consumer<String> warn) {
        this.gpu = gpu;
        this.ownsBackend = ownsBackend;
        this.c = c;
        this.graph = graph;
        this.first = first;
        this.attentionOnly = attentionOnly;
        this.layers = layers;
        this.output = output;
        this.outputNorm = outputNorm;
        this.ropes = ropes;
        this.contextLength = contextLength;
        this.batch = batch;
        this.kvType = kvType;
        this.weightBytes = weightBytes;
        this.footprint = footprint;
        this.owned = owned;
        this.warn = warn;
        int ff = 1;
        for (DeviceLayer l : layers) ff = Math.max(ff, l.ff);
        this.maxFf = ff;
        this.slot = new int[c.layers()];
        java.util.Arrays.fill(slot, -1);
        for (int i = 0; i < layers.length; i++) slot[layers[i].index] = i;
    }

    /** One session's F32 KV cache for one layer on the device (K and V), padded. */
    static long kvBytes(ModelConfig c, int contextLength) {
        return padded(DeviceFootprint.kvCache(c, 0, contextLength, GGMLType.F32));
    }

    /** Device bytes of one layer's attention block: its weights and norms, and one session's F32 KV cache. */
    static long attentionBytes(ModelGraph g, ModelWeights w, int layer, ModelConfig c, int contextLength) {
        return padded(DeviceFootprint.layerWeights(layer, g.layers()[layer], w.layers()[layer], true)) + kvBytes(c, contextLength);
    }

    /** Bytes of device memory one whole layer takes: its weights plus one session's F32 KV cache. */
    static long layerBytes(ModelGraph g, ModelWeights w, int layer, ModelConfig c, int contextLength) {
        return padded(DeviceFootprint.layerWeights(layer, g.layers()[layer], w.layers()[layer], false)) + kvBytes(c, contextLength);
    }

    /** Bytes of the final norm, output head and logits buffer. */
    static long headBytes(ModelGraph g, ModelConfig c) {
        return padded(DeviceFootprint.head(g)) + GpuFootprint.pad(4L * c.vocabSize());
    }

    private static long padded(List<DeviceFootprint.Alloc> l) {
        long b = 0;
        for (DeviceFootprint.Alloc a : l) b += a.padded();
        return b;
    }

    /**
     * How many attention blocks from layer 0 go to the device under {@code budget} (negative: no limit): the most
     * whose whole footprint ({@link DeviceFootprint#layers}: weights, rotary tables, one session's buffers and KV
     * cache) fits; 0 when blk.0's cannot run there ({@code why[0]} says why).
     */
    static int attentionLayers(ModelGraph g, ModelWeights w, ModelConfig c, int contextLength, int batch, long budget, String[] why) {
        return attentionLayers(g, w, c, contextLength, batch, GGMLType.F32, budget, why);
    }

    /** The same with a {@code kvType} KV cache on the device. */
    static int attentionLayers(ModelGraph g, ModelWeights w, ModelConfig c, int contextLength, int batch, GGMLType kvType, long budget, String[] why) {
        int n = 0;
        while (n < c.layers()) {
            why[0] = DeviceLayer.unsupported(g.layers()[n], w.layers()[n], c, true);
            if (why[0] != null) break;
            if (budget >= 0 && DeviceFootprint.layers(c, g, w, 0, n + 1, true, false, contextLength, batch, kvType).totalBytes() > budget) break;
            n++;
        }
        return n;
    }

    /**
     * PowerInfer's hybrid placement, attention part: the attention blocks (weights and KV cache) of as many layers as
     * {@code budget} bytes hold (negative: all), from layer 0, while the FFN stays with the hybrid executor. Null
     * (with a note) when none fit, the weights are of a type the kernels do not take, or the device is unavailable.
     */
    public static GpuLayers attention(GpuOptions o, ModelConfig c, ModelWeights w, int contextLength, long budget, Consumer<String> info) {
        return attention(o, c, w, contextLength, 1, GGMLType.F32, budget, info, () -> o.mode().open(info), true);
    }

    /** As {@link #attention(GpuOptions, ModelConfig, ModelWeights, int, long, Consumer)} on {@code shared}, which it does not close. */
    public static GpuLayers attention(GpuOptions o, ModelConfig c, ModelWeights w, int contextLength, long budget, Consumer<String> info,
                                      GpuBackend shared) {
        return attention(o, c, w, contextLength, 1, GGMLType.F32, budget, info, () -> shared, false);
    }

    /** As above for prompt chunks of up to {@code batch} tokens ({@code -b}), each chunk one pass per layer. */
    public static GpuLayers attention(GpuOptions o, ModelConfig c, ModelWeights w, int contextLength, int batch, long budget, Consumer<String> info,
                                      GpuBackend shared) {
        return attention(o, c, w, contextLength, batch, GGMLType.F32, budget, info, () -> shared, false);
    }

    /** As above with a {@code kvType} (F32 or F16) KV cache on the device: the session's {@code -ctk}. */
    public static GpuLayers attention(GpuOptions o, ModelConfig c, ModelWeights w, int contextLength, int batch, GGMLType kvType, long budget,
                                      Consumer<String> info, GpuBackend shared) {
        return attention(o, c, w, contextLength, batch, kvType, budget, info, () -> shared, false);
    }

    static GpuLayers attention(GpuOptions o, ModelConfig c, ModelWeights w, int contextLength, long budget, Consumer<String> info,
                               Supplier<GpuBackend> open) {
        return attention(o, c, w, contextLength, 1, GGMLType.F32, budget, info, open, true);
    }

    private static GpuLayers attention(GpuOptions o, ModelConfig c, ModelWeights w, int contextLength, int batch, GGMLType kvType, long budget,
                                       Consumer<String> info, Supplier<GpuBackend> open, boolean ownsBackend) {
        if (!o.enabled()) return null;
        ModelGraph g = GraphBuilder.build(c, w);
        String[] whyNot = new String[1];
        int n = attentionLayers(g, w, c, contextLength, batch, kvType, budget, whyNot);
        String why = whyNot[0];
        if (n == 0 && why != null) info.accept("note: the GPU cannot run blk.0's attention (" + why + "); attention runs on the CPU");
        if (n == 0) return null;
        GpuBackend gpu = open.get();
        if (gpu == null) return null;
        try {
            return upload(gpu, ownsBackend, c, g, w, 0, n, true, false, contextLength, batch, kvType, info);
        } catch (RuntimeException e) {
            if (ownsBackend) gpu.close();
            info.accept("warning: the GPU could not take the attention weights (" + e.getMessage() + "); attention runs on the CPU");
            return null;
        }
    }

    /**
     * The offload {@code o} asks for, or null (with a note to {@code info}) when nothing goes to the device: mode
     * off or no layers asked, {@code --gpu auto} without CUDA, no layer the device can run, or not even one layer
     * fitting the budget or the device's memory.
     */
    public static GpuLayers create(GpuOptions o, ModelConfig c, ModelWeights w, int contextLength, Consumer<String> info) {
        return create(o, c, w, contextLength, 1, GGMLType.F32, info, () -> o.mode().open(info));
    }

    /** As above for prompt chunks of up to {@code batch} tokens ({@code -b}): each chunk runs as one pass per layer (GEMMs on CUDA). */
    public static GpuLayers create(GpuOptions o, ModelConfig c, ModelWeights w, int contextLength, int batch, Consumer<String> info) {
        return create(o, c, w, contextLength, batch, GGMLType.F32, info, () -> o.mode().open(info));
    }

    /** As above with a {@code kvType} (F32 or F16) KV cache on the device: the session's {@code -ctk}. */
    public static GpuLayers create(GpuOptions o, ModelConfig c, ModelWeights w, int contextLength, int batch, GGMLType kvType, Consumer<String> info) {
        return create(o, c, w, contextLength, batch, kvType, info, () -> o.mode().open(info));
    }

    /** As {@link #create(GpuOptions, ModelConfig, ModelWeights, int, Consumer)} on the device {@code open} gives (tests). */
    static GpuLayers create(GpuOptions o, ModelConfig c, ModelWeights w, int contextLength, Consumer<String> info, Supplier<GpuBackend> open) {
        return create(o, c, w, contextLength, 1, GGMLType.F32, info, open);
    }

    static GpuLayers create(GpuOptions o, ModelConfig c, ModelWeights w, int contextLength, int batch, Consumer<String> info, Supplier<GpuBackend> open) {
        return create(o, c, w, contextLength, batch, GGMLType.F32, info, open);
    }

    static GpuLayers create(GpuOptions o, ModelConfig c, ModelWeights w, int contextLength, int batch, GGMLType kvType, Consumer<String> info,
                            Supplier<GpuBackend> open) {
        if (!o.enabled() || (o.gpuLayers() == 0 && !o.hasBudget())) return null;
        ModelGraph g = GraphBuilder.build(c, w);
        int total = c.layers();
        int asked = o.gpuLayers() > 0 ? Math.min(o.gpuLayers(), total + 1) : total + 1;
        // only a suffix of layers the device can run moves (the residual crosses over once)
        int eligible = 0;
        String why = null;
        while (eligible < total && (why = DeviceLayer.unsupported(g.layers()[total - 1 - eligible], w.layers()[total - 1 - eligible], c, false)) == null)
            eligible++;
        boolean headOk = GgmlRows.supported(g.output().type());
        int n = Math.min(asked, eligible);
        boolean head = asked > total && n == total && headOk;
        if (n < Math.min(asked, total))
            info.accept("note: -ngl: layers below blk." + (total - eligible) + " stay on the CPU (blk." + (total - 1 - eligible) + ": " + why + ")");
        if (o.hasBudget()) {
            // layers first, from the top, each with its KV cache and the shared buffers (the footprint the upload and
            // a session allocate); the head only when every layer is on the device and it still fits
            long budget = o.vramBudget();
            int fit = 0;
            while (fit < n && DeviceFootprint.layers(c, g, w, total - fit - 1, fit + 1, false, false, contextLength, batch, kvType).totalBytes() <= budget) fit++;
            if (fit < n) info.accept(String.format(Locale.ROOT, "note: --vram-budget %s holds %d of the %d layers asked for", HybridSetup.human(o.vramBudget()), fit, n));
            n = fit;
            head = head && n == total && DeviceFootprint.layers(c, g, w, 0, total, false, true, contextLength, batch, kvType).totalBytes() <= budget;
        }
        if (n == 0) {
            info.accept("note: no layer goes to the GPU; everything runs on the CPU");
            return null;
        }
        GpuBackend gpu = open.get();
        if (gpu == null) {
            info.accept("note: -ngl: no usable CUDA device; all layers run on the CPU");
            return null;
        }
        try {
            return upload(gpu, true, c, g, w, total - n, n, false, head, contextLength, batch, kvType, info);
        } catch (RuntimeException e) {
            gpu.close();
            info.accept("warning: -ngl: the GPU could not take the layers (" + e.getMessage() + "); all layers run on the CPU");
            return null;
        }
    }

    /** Uploads layers {@code [from, from + n)} (their attention blocks only, or whole), the rotary tables and maybe the head. */
    private static GpuLayers upload(GpuBackend gpu, boolean ownsBackend, ModelConfig c, ModelGraph g, ModelWeights w, int from, int n,
                                    boolean attentionOnly, boolean head, int contextLength, int batch, GGMLType kvType, Consumer<String> info) {
        GpuBackend.kvElementBytes(kvType);   // F32 or F16, refused early otherwise
        List<AutoCloseable> owned = new ArrayList<>();
        try (GpuStream s = gpu.createStream()) {
            DeviceLayer[] dl = new DeviceLayer[n];
            long bytes = 0;
            for (int i = 0; i < n; i++) {
                int l = from + i;
                dl[i] = DeviceLayer.upload(gpu, s, l, g.layers()[l], w.layers()[l], c, attentionOnly, kvType, owned);
                bytes += DeviceLayer.weightBytes(g.layers()[l], w.layers()[l], attentionOnly);
            }
            GpuMatrix out = null;
            DeviceLayer.Norm outNorm = null;
            if (head) {
                out = gpu.uploadMatrix(s, g.output());
                owned.add(out.data());
                LayerGraph.Norm on = g.outputNorm();
                outNorm = new DeviceLayer.Norm(on.in(), on.out(), floats(gpu, s, on.weight(), owned), on.bias() == null ? null : floats(gpu, s, on.bias(), owned),
                        on.layerNorm(), on.eps(), on.weight().rowLength());
                bytes += headBytes(g, c);
            }
            DeviceLayer.DeviceRope[] ropes = new DeviceLayer.DeviceRope[g.ropes().length];
            for (int r = 0; r < ropes.length; r++) {
                RopeTables t = g.ropes()[r];
                GpuBuffer inv = gpu.uploadFloats(s, t.invFreq());
                owned.add(inv);
                ropes[r] = new DeviceLayer.DeviceRope(inv, t.mscale(), t.dims(), t.type());
            }
            return new GpuLayers(gpu, ownsBackend, c, g, attentionOnly ? c.layers() : from, attentionOnly, dl, out, outNorm, ropes, contextLength, batch,
                    kvType, bytes, DeviceFootprint.layers(c, g, w, from, n, attentionOnly, head, contextLength, batch, kvType), owned, info);
        } catch (RuntimeException e) {
            closeAll(owned);
            throw e;
        }
    }

    private static GpuBuffer floats(GpuBackend gpu, GpuStream s, Tensor t, List<AutoCloseable> owned) {
        GpuBuffer b = gpu.uploadFloats(s, t.data().toArray(ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(java.nio.ByteOrder.LITTLE_ENDIAN)));
        owned.add(b);
        return b;
    }

    static void closeAll(List<AutoCloseable> owned) {
        for (int i = owned.size() - 1; i >= 0; i--) {
            try {
                owned.get(i).close();
            } catch (Exception ignored) {
                // freeing on a failed device
            }
        }
        owned.clear();
    }

    /** Device bytes this placement holds with one session: its {@link #footprint()}'s total. */
    public long deviceBytes() {
        return footprint.totalBytes();
    }

    /** What the upload and one session allocate on the device, allocation by allocation, in their order. */
    public DeviceFootprint footprint() {
        return footprint;
    }

    /** The device these layers run on. */
    public GpuBackend backend() {
        return gpu;
    }

    @Override
    public int firstLayer() {
        return failed ? c.layers() : first;
    }

    /** Layers on the device. */
    public int deviceLayers() {
        return layers.length;
    }

    /** Whether the output head runs on the device. */
    public boolean outputHeadOnDevice() {
        return output != null;
    }

    /** Whether a device failure moved everything back to the CPU. */
    public boolean failed() {
        return failed;
    }

    public String summary() {
        String kv = HybridSetup.human(2L * layers.length * contextLength * c.kvDim() * GpuBackend.kvElementBytes(kvType)) + " " + kvType;
        if (attentionOnly)
            return String.format(Locale.ROOT, "GPU attention: %d of %d layers (blk.0-%d) on %s, %s of weights + %s KV cache per session%s",
                    layers.length, c.layers(), layers.length - 1, gpu.name(), HybridSetup.human(weightBytes), kv, failed ? " (failed: running on the CPU)" : "");
        return String.format(Locale.ROOT, "GPU layers: %d of %d (blk.%d-%d)%s on %s, %s of weights + %s KV cache per session%s",
                layers.length, c.layers(), first, c.layers() - 1, output != null ? " + output head" : "", gpu.name(),
                HybridSetup.human(weightBytes), kv, failed ? " (failed: running on the CPU)" : "");
    }

    /** A session's device state, made on its first device step; a failed one (no memory for its cache) warns once per model. */
    private DeviceState newSession() {
        return new DeviceState(gpu, c, layers, ropes, batch, maxFf, attentionOnly, output != null, contextLength, kvType, e -> {
            // once per model: later sessions that do not fit either go to the CPU the same way, silently
            if (kvWarned.compareAndSet(false, true))
                warn.accept("warning: " + (attentionOnly ? "GPU attention" : "-ngl") + ": no device memory for a session's KV cache ("
                        + e.getMessage() + "); such sessions run on the CPU");
        });
    }

    @Override
    public boolean forward(InferenceState s, int batch, int startPos) {
        if (failed || attentionOnly) return false;
        if (s.sequenceBatch()) return runSequences(s, batch, 0, layers.length);
        return run(s, batch, startPos, 0, layers.length, true);
    }

    /** Rows of sequence batches the device layers have run (decode steps of several sessions in one pass; attention blocks count per layer). */
    public long sequenceRowsRun() {
        return sequenceRows.get();
    }

    /** Device layers (whole, or the hybrid placement's attention blocks) take decode steps of several sessions in one pass ({@link #runSequences}). */
    @Override
    public boolean supportsSequenceBatches() {
        return true;
    }

    /**
     * A sequence batch's {@code count} rows through device layers {@code [from, to)}: the first row's session buffers carry the
     * pass (in pieces of up to {@link #batch} rows), so each product reads its weights once for all rows; each row's
     * keys and values go into its own session's device cache and, as always, its CPU cache. With per-token products
     * (exact decode batching) each row runs the one-token path, giving it exactly its step alone. A row whose
     * session has no usable device state sends the whole pass to the CPU (false); so does a failure, with the
     * residuals restored.
     */
    private boolean runSequences(InferenceState s, int count, int from, int to) {
        DeviceState[] rows = new DeviceState[count];
        for (int b = 0; b < count; b++) {
            rows[b] = s.sequenceState(b).offloadState(this::newSession);
            if (!rows[b].usable) return false;
        }
        int dim = c.dim();
        long kv = 4L * c.kvDim();
        float[] x = s.residual();
        float[] saved = java.util.Arrays.copyOf(x, count * dim);
        for (DeviceState r : rows) r.lastOk = false;   // the head reads a session's own last forward, which this is not
        DeviceState d = rows[0];
        try {
            for (int b0 = 0; b0 < count; b0 += batch) {
                int n = Math.min(batch, count - b0);
                int[] pos = new int[n];
                for (int t = 0; t < n; t++) pos[t] = s.sequencePosition(b0 + t);
                MemorySegment hx = d.hostX.asSlice(0, 4L * n * dim);
                MemorySegment.copy(x, b0 * dim, hx, F32, 0, n * dim);
                gpu.upload(d.stream, hx, d.buf(Buf.X), 0);
                for (int i = from; i < to; i++) {
                    GpuBuffer[] kc = new GpuBuffer[n], vc = new GpuBuffer[n];
                    for (int t = 0; t < n; t++) {
                        kc[t] = rows[b0 + t].kCache[i];
                        vc[t] = rows[b0 + t].vCache[i];
                    }
                    long k = d.stagedKeys(i), v = k + batch * kv;
                    layers[i].runSequences(gpu, d.stream, d, ropes, c, pos, n, kc, vc, d.hostKv.asSlice(k, n * kv), d.hostKv.asSlice(v, n * kv),
                            s.perTokenProducts());
                }
                gpu.download(d.stream, d.buf(Buf.X), 0, hx);
                gpu.synchronize(d.stream);
                MemorySegment.copy(hx, F32, 0, x, b0 * dim, n * dim);
                storeStaged(d, s, from, to, b0, n, t -> pos[t]);
            }
            sequenceRows.addAndGet(count);
            return true;
        } catch (RuntimeException e) {
            System.arraycopy(saved, 0, x, 0, saved.length);
            fail(e);
            return false;
        }
    }

    @Override
    public boolean attention(InferenceState s, int layer, int batch, int startPos) {
        if (failed || layer >= slot.length || slot[layer] < 0 || !attentionOnly) return false;
        if (s.sequenceBatch()) return runSequences(s, batch, slot[layer], slot[layer] + 1);
        return run(s, batch, startPos, slot[layer], slot[layer] + 1, false);
    }

    /**
     * Device layers {@code [from, to)} for the chunk's tokens: in pieces of up to {@link #batch} tokens, each one pass
     * per layer over all its tokens (a single token through the decode path); the residuals are restored on failure.
     */
    private boolean run(InferenceState s, int count, int startPos, int from, int to, boolean whole) {
        DeviceState d = s.offloadState(this::newSession);
        if (!d.usable) return false;
        int dim = c.dim();
        float[] x = s.residual();
        float[] saved = java.util.Arrays.copyOf(x, count * dim);   // the CPU redoes the chunk from here on failure
        if (whole) d.lastOk = false;
        try {
            for (int b0 = 0; b0 < count; b0 += batch) {
                int n = Math.min(batch, count - b0), pos0 = startPos + b0;
                MemorySegment hx = d.hostX.asSlice(0, 4L * n * dim);
                MemorySegment.copy(x, b0 * dim, hx, F32, 0, n * dim);
                gpu.upload(d.stream, hx, d.buf(Buf.X), 0);
                for (int i = from; i < to; i++) d.layer(i, pos0, n);
                gpu.download(d.stream, d.buf(Buf.X), 0, hx);
                gpu.synchronize(d.stream);
                MemorySegment.copy(hx, F32, 0, x, b0 * dim, n * dim);
                storeStaged(d, s, from, to, b0, n, t -> pos0 + t);
                d.lastRow = n - 1;
            }
            if (whole) d.lastOk = true;
            return true;
        } catch (RuntimeException e) {
            System.arraycopy(saved, 0, x, 0, saved.length);
            fail(e);
            return false;
        }
    }

    /**
     * The keys and values layers {@code [from, to)} staged for a piece of {@code n} rows into the CPU caches: piece
     * row t is row {@code b0 + t} of {@code s}, at position {@code pos(t)} of its cache.
     */
    private void storeStaged(DeviceState d, InferenceState s, int from, int to, int b0, int n, java.util.function.IntUnaryOperator pos) {
        long kv = 4L * c.kvDim();
        for (int i = from; i < to; i++) {
            long k = d.stagedKeys(i), v = k + batch * kv;
            for (int t = 0; t < n; t++) {
                float[] kt = d.hostKv.asSlice(k + t * kv, kv).toArray(F32), vt = d.hostKv.asSlice(v + t * kv, kv).toArray(F32);
                s.kvOf(b0 + t).store(layers[i].index, pos.applyAsInt(t), kt, 0, vt, 0);
            }
        }
    }

    @Override
    public boolean logits(InferenceState s) {
        if (failed || output == null) return false;
        DeviceState d = s.offloadState(this::newSession);
        if (!d.usable || !d.lastOk) return false;
        try {
            long row = 4L * c.dim();
            GpuBuffer x = d.buf(Buf.X).slice(d.lastRow * row, row), xb = d.buf(Buf.XB);
            DeviceLayer.Norm n = outputNorm;
            if (n.layerNorm()) gpu.layerNorm(d.stream, x, n.weight(), n.bias(), xb, n.n(), 1, n.eps());
            else {
                gpu.rmsNorm(d.stream, x, n.weight(), xb, n.n(), 1, n.eps());
                if (n.bias() != null) gpu.add(d.stream, xb, n.bias(), n.n());
            }
            gpu.matVec(d.stream, output, xb, d.logits, false);
            gpu.download(d.stream, d.logits, 0, d.hostLogits);
            gpu.synchronize(d.stream);
            float[] out = s.logits();
            MemorySegment.copy(d.hostLogits, F32, 0, out, 0, c.vocabSize());
            float cap = graph.finalSoftcap();
            if (cap > 0f) for (int i = 0; i < out.length; i++) out[i] = cap * (float) Math.tanh(out[i] / cap);
            return true;
        } catch (RuntimeException e) {
            fail(e);
            return false;
        }
    }

    private synchronized void fail(RuntimeException e) {
        if (failed) return;
        failed = true;
        warn.accept("warning: GPU layers failed (" + e.getMessage() + "); the model runs on the CPU from here");
    }

    @Override
    public void close() {
        closeAll(owned);
        if (ownsBackend) gpu.close();
    }
}
