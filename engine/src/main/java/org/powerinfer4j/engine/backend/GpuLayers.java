package org.powerinfer4j.engine.backend;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.function.Consumer;
import org.powerinfer4j.engine.gpu.GgmlRows;
import org.powerinfer4j.engine.gpu.GpuActivation;
import org.powerinfer4j.engine.gpu.GpuBackend;
import org.powerinfer4j.engine.gpu.GpuBuffer;
import org.powerinfer4j.engine.gpu.GpuMatrix;
import org.powerinfer4j.engine.gpu.GpuStream;
import org.powerinfer4j.engine.model.InferenceState;
import org.powerinfer4j.engine.model.LayerOffload;
import org.powerinfer4j.engine.model.LayerWeights;
import org.powerinfer4j.engine.model.ModelConfig;
import org.powerinfer4j.engine.model.ModelWeights;
import org.powerinfer4j.engine.placement.GpuFootprint;
import org.powerinfer4j.engine.tensor.Tensor;

/**
 * llama.cpp's {@code -ngl N} for dense models: the last N transformer layers (and with N = layers + 1 the final
 * norm and output head) live whole on the device — weights uploaded once, a per-session F32 KV cache — and the
 * residual stream crosses PCIe once per token and chunk. Layers run token by token with the device's dense
 * pieces (RMSNorm, mat-vec, RoPE, attention over the cache, SwiGLU/ReGLU/ReLU, residual adds).
 *
 * <p>Every token's keys and values are also copied back into the CPU KV cache, so the CPU can take over at any
 * moment: a device allocation failure (weights at load, a session's cache at its first token) or a failed
 * launch degrades to the CPU with one warning — the chunk in flight is recomputed there from the residuals saved at
 * its start — never an abort and never a wrong answer.
 */
public final class GpuLayers implements LayerOffload, AutoCloseable {
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT;

    private record DeviceLayer(int index, GpuBuffer attnNorm, GpuMatrix wq, GpuMatrix wk, GpuMatrix wv, GpuMatrix wo,
                               GpuBuffer ffnNorm, GpuMatrix gate, GpuMatrix up, GpuMatrix down, boolean downNeuronMajor) {}

    private final GpuBackend gpu;
    private final ModelConfig c;
    private final int first;                 // whole layers [first, L) run here; L in attention-only mode
    private final DeviceLayer[] layers;      // whole layers, or attention blocks only (FFN parts null)
    private final int[] slot;                // model layer → index into layers, −1 when the CPU has it
    private final GpuMatrix output;          // null: the head stays on the CPU
    private final GpuBuffer outputNorm, invFreq;
    private final GpuActivation activation;
    private final int contextLength;
    private final long weightBytes;
    private final List<AutoCloseable> owned;
    private final Consumer<String> warn;
    private final boolean ownsBackend;       // false when the model shares the backend with its hybrid FFN
    private final java.util.concurrent.atomic.AtomicBoolean kvWarned = new java.util.concurrent.atomic.AtomicBoolean();
    private volatile boolean failed;

    private GpuLayers(GpuBackend gpu, boolean ownsBackend, ModelConfig c, int first, DeviceLayer[] layers, GpuMatrix output, GpuBuffer outputNorm,
                      GpuBuffer invFreq, int contextLength, long weightBytes, List<AutoCloseable> owned, Consumer<String> warn) {
        this.gpu = gpu;
        this.ownsBackend = ownsBackend;
        this.c = c;
        this.first = first;
        this.layers = layers;
        this.output = output;
        this.outputNorm = outputNorm;
        this.invFreq = invFreq;
        this.contextLength = contextLength;
        this.weightBytes = weightBytes;
        this.owned = owned;
        this.warn = warn;
        this.activation = GpuActivation.of(c.activation(), layers.length > 0 && layers[0].gate() != null);
        this.slot = new int[c.layers()];
        java.util.Arrays.fill(slot, -1);
        for (int i = 0; i < layers.length; i++) slot[layers[i].index()] = i;
    }

    /** Whether only attention blocks live here (the hybrid placement), not whole layers. */
    private boolean attentionOnly() {
        return layers.length > 0 && layers[0].up() == null;
    }

    /** Device bytes of one layer's attention block: Q/K/V/O, its norm, and one session's F32 KV cache. */
    static long attentionBytes(LayerWeights l, ModelConfig c, int contextLength) {
        long b = GpuFootprint.pad(4L * c.dim());
        for (Tensor t : new Tensor[]{l.wq(), l.wk(), l.wv(), l.wo()}) b += GpuFootprint.pad(t.rowBytes() * t.rows());
        return b + 2 * GpuFootprint.pad(4L * contextLength * c.kvDim());
    }

    /**
     * PowerInfer's hybrid placement, attention part: the attention blocks (weights and KV cache) of as many layers as
     * {@code budget} bytes hold (negative: all), from layer 0, while the FFN stays with the hybrid executor. Null
     * (with a note) when none fit, the weights are of a type the kernels do not take, or the device is unavailable.
     */
    public static GpuLayers attention(GpuOptions o, ModelConfig c, ModelWeights w, int contextLength, long budget, Consumer<String> info) {
        return attention(o, c, w, contextLength, budget, info, () -> o.mode().open(info));
    }

    /** As {@link #attention(GpuOptions, ModelConfig, ModelWeights, int, long, Consumer)} on {@code shared}, which it does not close. */
    public static GpuLayers attention(GpuOptions o, ModelConfig c, ModelWeights w, int contextLength, long budget, Consumer<String> info,
                                      GpuBackend shared) {
        return attention(o, c, w, contextLength, budget, info, () -> shared, false);
    }

    static GpuLayers attention(GpuOptions o, ModelConfig c, ModelWeights w, int contextLength, long budget, Consumer<String> info,
                               java.util.function.Supplier<GpuBackend> open) {
        return attention(o, c, w, contextLength, budget, info, open, true);
    }

    private static GpuLayers attention(GpuOptions o, ModelConfig c, ModelWeights w, int contextLength, long budget, Consumer<String> info,
                                       java.util.function.Supplier<GpuBackend> open, boolean ownsBackend) {
        if (!o.enabled()) return null;
        int n = 0;
        long left = budget;
        while (n < c.layers()) {
            LayerWeights l = w.layers()[n];
            boolean ok = true;
            for (Tensor t : new Tensor[]{l.wq(), l.wk(), l.wv(), l.wo()}) ok &= GgmlRows.supported(t.type());
            if (!ok || (budget >= 0 && attentionBytes(l, c, contextLength) > left)) break;
            left -= attentionBytes(l, c, contextLength);
            n++;
        }
        if (n == 0) return null;
        GpuBackend gpu = open.get();
        if (gpu == null) return null;
        List<AutoCloseable> owned = new ArrayList<>();
        try (GpuStream s = gpu.createStream()) {
            DeviceLayer[] dl = new DeviceLayer[n];
            long bytes = 0;
            for (int i = 0; i < n; i++) {
                LayerWeights l = w.layers()[i];
                dl[i] = new DeviceLayer(i, floats(gpu, s, l.attnNorm(), owned), matrix(gpu, s, l.wq(), owned), matrix(gpu, s, l.wk(), owned),
                        matrix(gpu, s, l.wv(), owned), matrix(gpu, s, l.wo(), owned), null, null, null, null, false);
                bytes += attentionBytes(l, c, contextLength) - 2 * GpuFootprint.pad(4L * contextLength * c.kvDim());
            }
            GpuBuffer inv = own(gpu.uploadFloats(s, GpuBackend.ropeInvFreq(c.ropeDim(), c.ropeFreqBase())), owned);
            return new GpuLayers(gpu, ownsBackend, c, c.layers(), dl, null, null, inv, contextLength, bytes, owned, info);
        } catch (RuntimeException e) {
            closeAll(owned);
            if (ownsBackend) gpu.close();
            info.accept("warning: the GPU could not take the attention weights (" + e.getMessage() + "); attention runs on the CPU");
            return null;
        }
    }

    /** Device bytes this placement holds for one session: weights, plus its KV cache. */
    public long deviceBytes() {
        return weightBytes + 2L * layers.length * GpuFootprint.pad(4L * contextLength * c.kvDim());
    }

    /** Bytes of device memory one layer takes: its weights plus one session's F32 KV cache. */
    static long layerBytes(LayerWeights l, ModelConfig c, int contextLength) {
        long b = 0;
        for (Tensor t : new Tensor[]{l.wq(), l.wk(), l.wv(), l.wo(), l.ffnGate(), l.ffnUp(), down(l)})
            if (t != null) b += GpuFootprint.pad(t.rowBytes() * t.rows());
        b += 2 * GpuFootprint.pad(4L * c.dim());
        return b + 2 * GpuFootprint.pad(4L * contextLength * c.kvDim());
    }

    /** Bytes of the final norm, output head and logits buffer. */
    static long headBytes(ModelWeights w, ModelConfig c) {
        return GpuFootprint.pad(w.output().rowBytes() * w.output().rows()) + GpuFootprint.pad(4L * c.dim()) + GpuFootprint.pad(4L * c.vocabSize());
    }

    /** The down projection as stored: {@code ffn_down} ({dim rows}), else PowerInfer's neuron-major {@code ffn_down_t}. */
    private static Tensor down(LayerWeights l) {
        return l.ffnDown() != null ? l.ffnDown() : l.ffnDownT();
    }

    private static boolean deviceLayer(LayerWeights l) {
        for (Tensor t : new Tensor[]{l.wq(), l.wk(), l.wv(), l.wo(), l.ffnGate(), l.ffnUp(), down(l)})
            if (t != null && !GgmlRows.supported(t.type())) return false;
        return true;
    }

    /**
     * The offload {@code o} asks for, or null (with a note to {@code info}) when nothing goes to the device: mode
     * off or no layers asked, {@code --gpu auto} without CUDA, no layer whose weights the device kernels support,
     * or not even one layer fitting the budget or the device's memory.
     */
    public static GpuLayers create(GpuOptions o, ModelConfig c, ModelWeights w, int contextLength, Consumer<String> info) {
        return create(o, c, w, contextLength, info, () -> o.mode().open(info));
    }

    /** As {@link #create(GpuOptions, ModelConfig, ModelWeights, int, Consumer)} on the device {@code open} gives (tests). */
    static GpuLayers create(GpuOptions o, ModelConfig c, ModelWeights w, int contextLength, Consumer<String> info,
                            java.util.function.Supplier<GpuBackend> open) {
        if (!o.enabled() || (o.gpuLayers() == 0 && !o.hasBudget())) return null;
        int total = c.layers();
        int asked = o.gpuLayers() > 0 ? Math.min(o.gpuLayers(), total + 1) : total + 1;
        // only a suffix of layers the kernels support can move (the residual crosses over once)
        int eligible = 0;
        while (eligible < total && deviceLayer(w.layers()[total - 1 - eligible])) eligible++;
        boolean headOk = GgmlRows.supported(w.output().type());
        int n = Math.min(asked, eligible);
        boolean head = asked > total && n == total && headOk;
        if (n < Math.min(asked, total))
            info.accept("note: -ngl: layers below blk." + (total - eligible) + " have weights the GPU kernels do not take (F32, F16, Q8_0, Q4_0 only); they stay on the CPU");
        if (o.hasBudget()) {
            // layers first, from the top; the head only when every layer is on the device and it still fits
            long left = o.vramBudget();
            int fit = 0;
            while (fit < n && layerBytes(w.layers()[total - 1 - fit], c, contextLength) <= left) left -= layerBytes(w.layers()[total - 1 - fit++], c, contextLength);
            if (fit < n) info.accept(String.format(Locale.ROOT, "note: --vram-budget %s holds %d of the %d layers asked for", HybridSetup.human(o.vramBudget()), fit, n));
            n = fit;
            head = head && n == total && headBytes(w, c) <= left;
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
        List<AutoCloseable> owned = new ArrayList<>();
        try (GpuStream s = gpu.createStream()) {
            int firstLayer = total - n;
            DeviceLayer[] dl = new DeviceLayer[n];
            long bytes = 0;
            for (int i = 0; i < n; i++) {
                LayerWeights l = w.layers()[firstLayer + i];
                dl[i] = new DeviceLayer(firstLayer + i, floats(gpu, s, l.attnNorm(), owned), matrix(gpu, s, l.wq(), owned), matrix(gpu, s, l.wk(), owned),
                        matrix(gpu, s, l.wv(), owned), matrix(gpu, s, l.wo(), owned), floats(gpu, s, l.ffnNorm(), owned),
                        l.ffnGate() == null ? null : matrix(gpu, s, l.ffnGate(), owned), matrix(gpu, s, l.ffnUp(), owned), matrix(gpu, s, down(l), owned),
                        l.ffnDown() == null);
                bytes += layerBytes(l, c, contextLength) - 2 * GpuFootprint.pad(4L * contextLength * c.kvDim());
            }
            GpuMatrix out = null;
            GpuBuffer outNorm = null;
            if (head) {
                out = matrix(gpu, s, w.output(), owned);
                outNorm = floats(gpu, s, w.outputNorm(), owned);
                bytes += headBytes(w, c);
            }
            GpuBuffer inv = own(gpu.uploadFloats(s, GpuBackend.ropeInvFreq(c.ropeDim(), c.ropeFreqBase())), owned);
            return new GpuLayers(gpu, true, c, firstLayer, dl, out, outNorm, inv, contextLength, bytes, owned, info);
        } catch (RuntimeException e) {
            closeAll(owned);
            gpu.close();
            info.accept("warning: -ngl: the GPU could not take the layers (" + e.getMessage() + "); all layers run on the CPU");
            return null;
        }
    }

    private static <T extends AutoCloseable> T own(T t, List<AutoCloseable> owned) {
        owned.add(t);
        return t;
    }

    private static GpuMatrix matrix(GpuBackend gpu, GpuStream s, Tensor t, List<AutoCloseable> owned) {
        GpuMatrix m = gpu.uploadMatrix(s, t);
        owned.add(m.data());
        return m;
    }

    private static GpuBuffer floats(GpuBackend gpu, GpuStream s, Tensor t, List<AutoCloseable> owned) {
        return own(gpu.uploadFloats(s, t.data().toArray(ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(java.nio.ByteOrder.LITTLE_ENDIAN))), owned);
    }

    private static void closeAll(List<AutoCloseable> owned) {
        for (int i = owned.size() - 1; i >= 0; i--) {
            try {
                owned.get(i).close();
            } catch (Exception ignored) {
                // freeing on a failed device
            }
        }
        owned.clear();
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
        if (attentionOnly())
            return String.format(Locale.ROOT, "GPU attention: %d of %d layers (blk.0-%d) on %s, %s of weights + %s KV cache per session%s",
                    layers.length, c.layers(), layers.length - 1, gpu.name(), HybridSetup.human(weightBytes),
                    HybridSetup.human(2L * layers.length * contextLength * c.kvDim() * 4), failed ? " (failed: running on the CPU)" : "");
        return String.format(Locale.ROOT, "GPU layers: %d of %d (blk.%d-%d)%s on %s, %s of weights + %s KV cache per session%s",
                layers.length, c.layers(), first, c.layers() - 1, output != null ? " + output head" : "", gpu.name(),
                HybridSetup.human(weightBytes), HybridSetup.human(2L * layers.length * contextLength * c.kvDim() * 4),
                failed ? " (failed: running on the CPU)" : "");
    }

    /** One session's device buffers and host staging; {@code usable} is false when they could not be allocated. */
    private final class DeviceState implements AutoCloseable {
        final List<AutoCloseable> owned = new ArrayList<>();
        HostStaging host; // pinned where the driver allows: async copies, and no blocking on pageable memory
        boolean usable, lastOk;
        GpuStream stream;
        GpuBuffer x, xb, xb2, q, k, v, att, h, h2, logits;
        GpuBuffer[] kCache, vCache;
        MemorySegment hostX, hostKv, hostLogits;

        DeviceState() {
            try {
                stream = own(gpu.createStream(), owned);
                x = buf(c.dim()); xb = buf(c.dim()); xb2 = buf(c.dim());
                q = buf(c.qDim()); k = buf(c.kvDim()); v = buf(c.kvDim()); att = buf(c.qDim());
                if (!attentionOnly()) {
                    h = buf(c.ffDim());
                    h2 = buf(c.ffDim());
                }
                kCache = new GpuBuffer[layers.length];
                vCache = new GpuBuffer[layers.length];
                for (int i = 0; i < layers.length; i++) {
                    kCache[i] = buf((long) contextLength * c.kvDim());
                    vCache[i] = buf((long) contextLength * c.kvDim());
                }
                if (output != null) logits = buf(c.vocabSize());
                long xBytes = 4L * c.dim(), kvBytes = 8L * layers.length * c.kvDim(), logitBytes = output != null ? 4L * c.vocabSize() : 0;
                host = HostStaging.allocate(gpu, xBytes + kvBytes + logitBytes);
                MemorySegment m = host.segment();
                hostX = m.asSlice(0, xBytes);
                hostKv = m.asSlice(xBytes, kvBytes);
                if (output != null) hostLogits = m.asSlice(xBytes + kvBytes, logitBytes);
                usable = true;
            } catch (RuntimeException e) {
                close();
                // once per model: later sessions that do not fit either go to the CPU the same way, silently
                if (kvWarned.compareAndSet(false, true))
                    warn.accept("warning: " + (attentionOnly() ? "GPU attention" : "-ngl") + ": no device memory for a session's KV cache ("
                            + e.getMessage() + "); such sessions run on the CPU");
            }
        }

        private GpuBuffer buf(long floats) {
            return own(gpu.allocate(4 * Math.max(1, floats)), owned);
        }

        @Override
        public void close() {
            // drain the stream before freeing: work queued before a failure may still use these buffers
            if (stream != null) {
                try {
                    gpu.synchronize(stream);
                } catch (RuntimeException ignored) {
                    // a failed device: free what can be freed
                }
            }
            closeAll(owned);
            if (host != null) {
                try {
                    host.close();
                } catch (RuntimeException ignored) {
                    // pinned memory of a failed context goes with the context
                }
                host = null;
            }
        }
    }

    @Override
    public boolean forward(InferenceState s, int batch, int startPos) {
        if (failed) return false;
        DeviceState d = s.offloadState(DeviceState::new);
        if (!d.usable) return false;
        int dim = c.dim(), kvDim = c.kvDim();
        float[] x = s.residual();
        float[] saved = java.util.Arrays.copyOf(x, batch * dim);   // the CPU redoes the chunk from here on failure
        d.lastOk = false;
        try {
            for (int b = 0; b < batch; b++) {
                int pos = startPos + b;
                MemorySegment.copy(x, b * dim, d.hostX, F32, 0, dim);
                gpu.upload(d.stream, d.hostX, d.x, 0);
                for (int i = 0; i < layers.length; i++) layer(d, i, pos);
                gpu.download(d.stream, d.x, 0, d.hostX);
                gpu.synchronize(d.stream);
                MemorySegment.copy(d.hostX, F32, 0, x, b * dim, dim);
                for (int i = 0; i < layers.length; i++) {
                    float[] kv = d.hostKv.asSlice(8L * i * kvDim, 8L * kvDim).toArray(F32);
                    s.kv().store(layers[i].index(), pos, kv, 0, kv, kvDim);
                }
            }
            d.lastOk = true;
            return true;
        } catch (RuntimeException e) {
            System.arraycopy(saved, 0, x, 0, saved.length);
            fail(e);
            return false;
        }
    }

    /** One layer for the token at {@code pos} (residual in d.x), and its keys/values queued for download. */
    private void layer(DeviceState d, int i, int pos) {
        attentionBlock(d, i, pos);
        ffnBlock(d, i);
    }

    /** The attention half: norm, Q/K/V, RoPE, cache write (and its download), attention, output projection, add. */
    private void attentionBlock(DeviceState d, int i, int pos) {
        DeviceLayer l = layers[i];
        GpuStream st = d.stream;
        int dim = c.dim(), kvDim = c.kvDim();
        gpu.rmsNorm(st, d.x, l.attnNorm(), d.xb, dim, 1, c.rmsEps());
        gpu.matVec(st, l.wq(), d.xb, d.q, false);
        gpu.matVec(st, l.wk(), d.xb, d.k, false);
        gpu.matVec(st, l.wv(), d.xb, d.v, false);
        gpu.rope(st, d.q, 1, c.qDim(), c.heads(), c.headDim(), c.ropeDim(), pos, invFreq, c.ropeType());
        gpu.rope(st, d.k, 1, kvDim, c.kvHeads(), c.headDim(), c.ropeDim(), pos, invFreq, c.ropeType());
        long at = 4L * pos * kvDim;
        gpu.copy(st, d.k, 0, d.kCache[i], at, 4L * kvDim);
        gpu.copy(st, d.v, 0, d.vCache[i], at, 4L * kvDim);
        gpu.download(st, d.kCache[i], at, d.hostKv.asSlice(8L * i * kvDim, 4L * kvDim));
        gpu.download(st, d.vCache[i], at, d.hostKv.asSlice(8L * i * kvDim + 4L * kvDim, 4L * kvDim));
        gpu.attention(st, d.q, d.kCache[i], d.vCache[i], d.att, c.heads(), c.kvHeads(), c.headDim(), kvDim, pos + 1,
                (float) (1.0 / Math.sqrt(c.headDim())));
        gpu.matVec(st, l.wo(), d.att, d.xb2, false);
        gpu.add(st, d.x, d.xb2, dim);
    }

    /** The FFN half of a whole device layer. */
    private void ffnBlock(DeviceState d, int i) {
        DeviceLayer l = layers[i];
        GpuStream st = d.stream;
        int dim = c.dim();
        gpu.rmsNorm(st, d.x, l.ffnNorm(), d.xb, dim, 1, c.rmsEps());
        if (l.gate() != null) {
            gpu.matVec(st, l.gate(), d.xb, d.h, false);
            gpu.matVec(st, l.up(), d.xb, d.h2, false);
            gpu.activation(st, activation, d.h, d.h2, d.h, c.ffDim());
        } else {
            gpu.matVec(st, l.up(), d.xb, d.h2, false);
            gpu.activation(st, activation, d.h2, null, d.h, c.ffDim());
        }
        if (l.downNeuronMajor()) gpu.sparseAxpy(st, l.down(), d.h, d.xb2, false);   // Σ_r h_r·down_t[r,:]
        else gpu.matVec(st, l.down(), d.h, d.xb2, false);
        gpu.add(st, d.x, d.xb2, dim);
    }

    @Override
    public boolean attention(InferenceState s, int layer, int batch, int startPos) {
        if (failed || layer >= slot.length || slot[layer] < 0 || !attentionOnly()) return false;
        DeviceState d = s.offloadState(DeviceState::new);
        if (!d.usable) return false;
        int i = slot[layer], dim = c.dim(), kvDim = c.kvDim();
        float[] x = s.residual();
        float[] saved = java.util.Arrays.copyOf(x, batch * dim);
        try {
            for (int b = 0; b < batch; b++) {
                int pos = startPos + b;
                MemorySegment.copy(x, b * dim, d.hostX, F32, 0, dim);
                gpu.upload(d.stream, d.hostX, d.x, 0);
                attentionBlock(d, i, pos);
                gpu.download(d.stream, d.x, 0, d.hostX);
                gpu.synchronize(d.stream);
                MemorySegment.copy(d.hostX, F32, 0, x, b * dim, dim);
                float[] kv = d.hostKv.asSlice(8L * i * kvDim, 8L * kvDim).toArray(F32);
                s.kv().store(layer, pos, kv, 0, kv, kvDim);
            }
            return true;
        } catch (RuntimeException e) {
            System.arraycopy(saved, 0, x, 0, saved.length);
            fail(e);
            return false;
        }
    }

    @Override
    public boolean logits(InferenceState s) {
        if (failed || output == null) return false;
        DeviceState d = s.offloadState(DeviceState::new);
        if (!d.usable || !d.lastOk) return false;
        try {
            gpu.rmsNorm(d.stream, d.x, outputNorm, d.xb, c.dim(), 1, c.rmsEps());
            gpu.matVec(d.stream, output, d.xb, d.logits, false);
            gpu.download(d.stream, d.logits, 0, d.hostLogits);
            gpu.synchronize(d.stream);
            MemorySegment.copy(d.hostLogits, F32, 0, s.logits(), 0, c.vocabSize());
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
