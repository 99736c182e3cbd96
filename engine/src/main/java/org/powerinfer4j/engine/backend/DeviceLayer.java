package org.powerinfer4j.engine.backend;

import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.powerinfer4j.engine.gpu.GgmlRows;
import org.powerinfer4j.engine.gpu.GpuActivation;
import org.powerinfer4j.engine.gpu.GpuBackend;
import org.powerinfer4j.engine.gpu.GpuBuffer;
import org.powerinfer4j.engine.gpu.GpuMatrix;
import org.powerinfer4j.engine.gpu.GpuStream;
import org.powerinfer4j.engine.gpu.PtxKernels;
import org.powerinfer4j.engine.model.ExpertRouter;
import org.powerinfer4j.engine.model.LayerGraph;
import org.powerinfer4j.engine.model.LayerGraph.Buf;
import org.powerinfer4j.engine.model.LayerWeights;
import org.powerinfer4j.engine.model.ModelConfig;
import org.powerinfer4j.engine.placement.DeviceFootprint;
import org.powerinfer4j.engine.placement.GpuFootprint;
import org.powerinfer4j.engine.tensor.GGMLType;
import org.powerinfer4j.engine.tensor.Tensor;

/**
 * One decoder layer's {@link LayerGraph} with its tensors on the device: every op of the graph (or of its attention
 * block) uploaded once and run token by token with the device's operators. The graph is the CPU's; nothing here
 * knows which architecture it came from. What the device cannot run (an activation or weight type its
 * kernels lack) is said by {@link #unsupported} before anything is uploaded, and that layer stays on the CPU.
 */
final class DeviceLayer {
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    sealed interface DeviceOp permits Norm, Linear, HeadNorm, Rope, Attention, Ffn, Experts, Add {}

    record Norm(Buf in, Buf out, GpuBuffer weight, GpuBuffer bias, boolean layerNorm, float eps, int n) implements DeviceOp {}

    record Linear(Buf in, Buf out, GpuMatrix weight, GpuBuffer bias) implements DeviceOp {}

    record HeadNorm(Buf buf, int heads, GpuBuffer weight, float eps, int headDim) implements DeviceOp {}

    record Rope(Buf buf, int heads, int rope) implements DeviceOp {}

    /** {@code kvType}: the device cache's element type, F32 or F16 (rows are stored rounded, read widened). */
    record Attention(int window, float scale, float softcap, GpuBuffer sinks, GGMLType kvType) implements DeviceOp {
        int elementBytes() {
            return GpuBackend.kvElementBytes(kvType);
        }
    }

    /** A dense (gated) MLP: act(gate·x + b)·(up·x + b), or act(up·x + b) without a gate, then down (+ b). */
    record Ffn(GpuMatrix gate, GpuMatrix up, GpuMatrix down, boolean downNeuronMajor, GpuBuffer gateBias, GpuBuffer upBias,
               GpuBuffer downBias, GpuActivation act) implements DeviceOp {}

    /**
     * A mixture-of-experts FFN: the router runs here, its logits go to the host, which chooses the experts by the
     * CPU's rule ({@link ExpertRouter}); the chosen experts (and a shared one) run here, weighted into FFN_OUT.
     */
    record Experts(GpuMatrix router, GpuBuffer routerBias, Ffn[] experts, Ffn shared, GpuMatrix sharedGate, ExpertRouter rule,
                   int dim) implements DeviceOp {}

    record Add(Buf dst, Buf src) implements DeviceOp {}

    /** The per-session device buffers the ops read and write, one token at a time. */
    interface Buffers {
        GpuBuffer buf(Buf b);

        /** FFN hidden scratch (n_ff floats each). */
        GpuBuffer h();

        GpuBuffer h2();

        /** Router logits (n_expert floats; at least one) and one expert's output (n_embd), for expert layers. */
        GpuBuffer routerLogits();

        GpuBuffer expertOut();
    }

    /** Rotary tables on the device: inverse frequencies and YaRN's magnitude per table of the model graph. */
    record DeviceRope(GpuBuffer invFreq, float mscale, int dims, org.powerinfer4j.engine.model.RopeType type) {}

    /**
     * A batch's buffers: token t's part of each {@link Buf} at float t·{@link #stride}, FFN scratch for the batch's
     * rows, and {@link #token} views for the ops that run token by token.
     */
    interface BatchBuffers extends Buffers {
        /** Floats per token of {@code b}. */
        int stride(Buf b);

        /** Token t's slices of the buffers (the scratch is shared: one token's op at a time). */
        default Buffers token(int t) {
            BatchBuffers all = this;
            return new Buffers() {
                @Override
                public GpuBuffer buf(Buf b) {
                    long n = 4L * all.stride(b);
                    return all.buf(b).slice(t * n, n);
                }

                @Override
                public GpuBuffer h() { return all.h(); }

                @Override
                public GpuBuffer h2() { return all.h2(); }

                @Override
                public GpuBuffer routerLogits() { return all.routerLogits(); }

                @Override
                public GpuBuffer expertOut() { return all.expertOut(); }
            };
        }
    }

    final int index;
    final List<DeviceOp> ops;
    final int ff;   // n_ff of the FFN on the device; 0 when only the attention block is here
    final boolean batchable;   // every op's rows are its buffers' per-token strides: batches run op by op over all rows

    private DeviceLayer(int index, List<DeviceOp> ops, int ff, ModelConfig c) {
        this.index = index;
        this.ops = ops;
        this.ff = ff;
        boolean ok = true;
        for (DeviceOp op : ops) {
            ok &= switch (op) {
                case Linear l -> l.weight().cols() == DeviceFootprint.bufFloats(l.in(), c) && l.weight().rows() == DeviceFootprint.bufFloats(l.out(), c);
                case Norm n -> n.n() == DeviceFootprint.bufFloats(n.in(), c) && n.n() == DeviceFootprint.bufFloats(n.out(), c);
                case HeadNorm h -> h.heads() * h.headDim() == DeviceFootprint.bufFloats(h.buf(), c);
                case Rope r -> r.heads() * c.headDim() == DeviceFootprint.bufFloats(r.buf(), c);
                case Ffn f -> !f.downNeuronMajor() && f.up().cols() == c.dim() && f.down().rows() == c.dim();
                default -> true;
            };
        }
        this.batchable = ok;
    }

    /** The ops the device runs for a layer: all of them, or the attention block {@code [0, attentionEnd)}. */
    static List<LayerGraph.Op> deviceOps(LayerGraph g, boolean attentionOnly) {
        return DeviceFootprint.deviceOps(g, attentionOnly);
    }

    /** Why the device cannot run these ops of layer {@code il}; null when it can. */
    static String unsupported(LayerGraph g, LayerWeights lw, ModelConfig c, boolean attentionOnly) {
        if (attentionOnly && g.attentionEnd() < 0) return "parallel attention and FFN, no separate attention block";
        if (c.headDim() > PtxKernels.ATTENTION_MAX_HEAD_DIM) return "head size " + c.headDim() + ", above the attention kernel's " + PtxKernels.ATTENTION_MAX_HEAD_DIM;
        boolean ffn = false;
        for (LayerGraph.Op op : deviceOps(g, attentionOnly)) {
            if (op instanceof LayerGraph.Ffn) {
                ffn = true;
                boolean gated = lw.has("ffn_gate_inp.weight") ? lw.expert("gate", 0) != null : lw.ffnGate() != null;
                if (GpuActivation.of(c.activation(), gated) == null) return "no device kernel for a " + c.activation() + " FFN" + (gated ? "" : " without a gate");
            }
        }
        for (Tensor t : tensors(g, lw, attentionOnly))
            if (t.ne().length == 2 && !GgmlRows.supported(t.type()))
                return "weights the GPU kernels do not take (" + t.name() + " is " + t.type() + "; F32, F16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K only)";
        Tensor downT = ffn && lw.ffnDown() == null ? down(lw) : null;   // neuron-major: through the sparse axpy
        if (downT != null && !GgmlRows.axpySupported(downT.type()))
            return "weights the GPU kernels do not take (" + downT.name() + " is " + downT.type() + "; neuron-major down: F32, F16, Q8_0, Q4_0 only)";
        return null;
    }

    /** Every tensor the device holds for these ops, each once, in upload order (the footprint's order). */
    static Set<Tensor> tensors(LayerGraph g, LayerWeights lw, boolean attentionOnly) {
        return DeviceFootprint.deviceTensors(g, lw, attentionOnly);
    }

    static Tensor down(LayerWeights l) {
        return DeviceFootprint.down(l);
    }

    /** Device bytes of these ops' tensors, padded. */
    static long weightBytes(LayerGraph g, LayerWeights lw, boolean attentionOnly) {
        long b = 0;
        for (Tensor t : tensors(g, lw, attentionOnly)) b += GpuFootprint.pad(DeviceFootprint.tensorBytes(t));
        return b;
    }

    /** Uploads the ops' tensors (recording each allocation in {@code owned}) and returns the device layer. */
    static DeviceLayer upload(GpuBackend gpu, GpuStream s, int index, LayerGraph g, LayerWeights lw, ModelConfig c, boolean attentionOnly,
                              GGMLType kvType, List<AutoCloseable> owned) {
        var up = new Object() {
            final java.util.Map<Tensor, Object> done = new java.util.IdentityHashMap<>();

            GpuMatrix matrix(Tensor t) {
                if (t == null) return null;
                return (GpuMatrix) done.computeIfAbsent(t, k -> {
                    GpuMatrix m = gpu.uploadMatrix(s, k);
                    owned.add(m.data());
                    return m;
                });
            }

            GpuBuffer floats(Tensor t) {
                if (t == null) return null;
                return (GpuBuffer) done.computeIfAbsent(t, k -> {
                    GpuBuffer b = gpu.uploadFloats(s, k.data().asSlice(0, 4L * k.rowLength() * k.rows()).toArray(F32));
                    owned.add(b);
                    return b;
                });
            }
        };
        List<DeviceOp> ops = new ArrayList<>();
        int ff = 0;
        for (LayerGraph.Op op : deviceOps(g, attentionOnly)) {
            ops.add(switch (op) {
                case LayerGraph.Norm n -> new Norm(n.in(), n.out(), up.floats(n.weight()), up.floats(n.bias()), n.layerNorm(), n.eps(), n.weight().rowLength());
                case LayerGraph.Linear l -> new Linear(l.in(), l.out(), up.matrix(l.weight()), up.floats(l.bias()));
                case LayerGraph.HeadNorm h -> new HeadNorm(h.buf(), h.heads(), up.floats(h.weight()), h.eps(), h.weight().rowLength());
                case LayerGraph.Rope r -> new Rope(r.buf(), r.heads(), r.rope());
                case LayerGraph.Attention a -> new Attention(a.window(), a.scale(), a.softcap(), up.floats(a.sinks()), kvType);
                case LayerGraph.Ffn f when lw.has("ffn_gate_inp.weight") -> {
                    GpuMatrix router = up.matrix(lw.get("ffn_gate_inp.weight"));   // upload order = the footprint's
                    GpuBuffer routerBias = up.floats(lw.get("ffn_gate_inp.bias"));
                    List<Ffn> experts = new ArrayList<>();
                    for (int e = 0; lw.expert("up", e) != null; e++) {
                        experts.add(new Ffn(up.matrix(lw.expert("gate", e)), up.matrix(lw.expert("up", e)), up.matrix(lw.expert("down", e)), false,
                                up.floats(lw.expertBias("gate", e)), up.floats(lw.expertBias("up", e)), up.floats(lw.expertBias("down", e)),
                                GpuActivation.of(c.activation(), lw.expert("gate", e) != null)));
                        ff = Math.max(ff, lw.expert("up", e).rows());
                    }
                    Ffn shared = null;
                    if (lw.has("ffn_up_shexp.weight")) {
                        shared = new Ffn(up.matrix(lw.get("ffn_gate_shexp.weight")), up.matrix(lw.get("ffn_up_shexp.weight")),
                                up.matrix(lw.get("ffn_down_shexp.weight")), false, null, null, null, GpuActivation.of(c.activation(), true));
                        ff = Math.max(ff, lw.get("ffn_up_shexp.weight").rows());
                    }
                    yield new Experts(router, routerBias, experts.toArray(Ffn[]::new), shared, up.matrix(lw.get("ffn_gate_inp_shexp.weight")),
                            new ExpertRouter(c.params()), c.dim());
                }
                case LayerGraph.Ffn f -> {
                    ff = lw.ffnUp().rows();
                    yield new Ffn(up.matrix(lw.ffnGate()), up.matrix(lw.ffnUp()), up.matrix(down(lw)), lw.ffnDown() == null,
                            up.floats(lw.get("ffn_gate.bias")), up.floats(lw.get("ffn_up.bias")), up.floats(lw.get("ffn_down.bias")),
                            GpuActivation.of(c.activation(), lw.ffnGate() != null));
                }
                case LayerGraph.Add a -> new Add(a.dst(), a.src());
            });
        }
        return new DeviceLayer(index, List.copyOf(ops), ff, c);
    }

    /**
     * Queues this layer's ops for the token at {@code pos} (its residual in {@code Buf.X}). The attention op writes
     * the token's K and V into the device cache ({@code kCache}/{@code vCache}, F32 or F16 as the op's {@code kvType},
     * kv_dim per position) and queues their download (as floats) into {@code hostK}/{@code hostV} for the CPU's cache.
     */
    void run(GpuBackend gpu, GpuStream st, Buffers d, DeviceRope[] ropes, ModelConfig c, int pos, GpuBuffer kCache, GpuBuffer vCache,
             java.lang.foreign.MemorySegment hostK, java.lang.foreign.MemorySegment hostV) {
        int kvDim = c.kvDim();
        for (DeviceOp op : ops) {
            switch (op) {
                case Norm n -> {
                    if (n.layerNorm()) gpu.layerNorm(st, d.buf(n.in()), n.weight(), n.bias(), d.buf(n.out()), n.n(), 1, n.eps());
                    else {
                        gpu.rmsNorm(st, d.buf(n.in()), n.weight(), d.buf(n.out()), n.n(), 1, n.eps());
                        if (n.bias() != null) gpu.add(st, d.buf(n.out()), n.bias(), n.n());
                    }
                }
                case Linear l -> {
                    gpu.matVec(st, l.weight(), d.buf(l.in()), d.buf(l.out()), false);
                    if (l.bias() != null) gpu.add(st, d.buf(l.out()), l.bias(), l.weight().rows());
                }
                case HeadNorm h -> gpu.rmsNorm(st, d.buf(h.buf()), h.weight(), d.buf(h.buf()), h.headDim(), h.heads(), h.eps());
                case Rope r -> {
                    DeviceRope t = ropes[r.rope()];
                    gpu.rope(st, d.buf(r.buf()), 1, r.heads() * c.headDim(), r.heads(), c.headDim(), t.dims(), pos, t.invFreq(), t.mscale(), t.type());
                }
                case Attention a -> {
                    int es = a.elementBytes();
                    store(gpu, st, d.buf(Buf.K), d.buf(Buf.V), kCache, vCache, (long) es * pos * kvDim, kvDim, a.kvType(), hostK, hostV);
                    int lo = a.window() > 0 ? Math.max(0, pos - a.window() + 1) : 0;   // a window of W sees itself and W-1 before
                    long from = (long) es * lo * kvDim, len = (long) es * (pos + 1 - lo) * kvDim;
                    gpu.attention(st, d.buf(Buf.Q), kCache.slice(from, len), vCache.slice(from, len), d.buf(Buf.ATT), c.heads(), c.kvHeads(),
                            c.headDim(), kvDim, pos + 1 - lo, a.scale(), a.softcap(), a.sinks(), a.kvType());
                }
                case Ffn f -> ffn(gpu, st, d, f, d.buf(Buf.FFN_OUT));
                case Experts e -> experts(gpu, st, d, e);
                case Add a -> gpu.add(st, d.buf(a.dst()), d.buf(a.src()), c.dim());
            }
        }
    }

    /**
     * Queues this layer's ops for {@code tokens} consecutive tokens from position {@code pos0} (token t's residual at
     * float t·n_embd of {@code Buf.X}): products through {@link GpuBackend#matMul} (GEMMs), norms, RoPE, biases and
     * adds over all rows at once, {@link GpuBackend#causalAttention} in one launch. The batch's K and V go into the
     * device cache and are queued for download into {@code hostK}/{@code hostV} (tokens × kv_dim each). Expert layers
     * (the router's choice is the host's) and neuron-major down projections run token by token over the batch's
     * rows; a layer that is not {@link #batchable} runs wholly so.
     */
    void runBatch(GpuBackend gpu, GpuStream st, BatchBuffers d, DeviceRope[] ropes, ModelConfig c, int pos0, int tokens, GpuBuffer kCache,
                  GpuBuffer vCache, java.lang.foreign.MemorySegment hostK, java.lang.foreign.MemorySegment hostV) {
        int kvDim = c.kvDim();
        long kv = 4L * kvDim;
        if (!batchable) {
            for (int t = 0; t < tokens; t++)
                run(gpu, st, d.token(t), ropes, c, pos0 + t, kCache, vCache, hostK.asSlice(t * kv, kv), hostV.asSlice(t * kv, kv));
            return;
        }
        for (DeviceOp op : ops) {
            switch (op) {
                case Rope r -> {
                    DeviceRope t = ropes[r.rope()];
                    gpu.rope(st, d.buf(r.buf()), tokens, r.heads() * c.headDim(), r.heads(), c.headDim(), t.dims(), pos0, t.invFreq(), t.mscale(), t.type());
                }
                case Attention a -> {
                    store(gpu, st, d.buf(Buf.K), d.buf(Buf.V), kCache, vCache, (long) a.elementBytes() * pos0 * kvDim, tokens * kvDim, a.kvType(),
                            hostK.asSlice(0, kv * tokens), hostV.asSlice(0, kv * tokens));
                    gpu.causalAttention(st, d.buf(Buf.Q), kCache, vCache, d.buf(Buf.ATT), c.heads(), c.kvHeads(), c.headDim(), kvDim, pos0 + tokens, tokens,
                            a.window(), a.scale(), a.softcap(), a.sinks(), a.kvType());
                }
                default -> batched(gpu, st, d, c, op, tokens);
            }
        }
    }

    /**
     * Queues this layer's ops for {@code n} rows of different sequences (a decode step of several sessions, maybe a
     * prompt chunk's consecutive rows among them): row t at position {@code pos[t]} of its own caches
     * {@code kCaches[t]}/{@code vCaches[t]}. The products, norms and the FFN run over all rows at once (one read of
     * the weights: a GEMM on CUDA from {@link GpuBackend#gemmFrom()} rows); RoPE, the K/V store and attention per
     * row, each over its own sequence's cache, in row order (a chunk's row sees the rows before it). With
     * {@code perToken} every row goes through the one-token path instead, which gives each row exactly its step alone.
     */
    void runSequences(GpuBackend gpu, GpuStream st, BatchBuffers d, DeviceRope[] ropes, ModelConfig c, int[] pos, int n, GpuBuffer[] kCaches,
                      GpuBuffer[] vCaches, java.lang.foreign.MemorySegment hostK, java.lang.foreign.MemorySegment hostV, boolean perToken) {
        int kvDim = c.kvDim();
        long kv = 4L * kvDim;
        if (perToken || !batchable) {
            for (int t = 0; t < n; t++)
                run(gpu, st, d.token(t), ropes, c, pos[t], kCaches[t], vCaches[t], hostK.asSlice(t * kv, kv), hostV.asSlice(t * kv, kv));
            return;
        }
        for (DeviceOp op : ops) {
            switch (op) {
                case Rope r -> {
                    DeviceRope rt = ropes[r.rope()];
                    for (int t = 0; t < n; t++)
                        gpu.rope(st, d.token(t).buf(r.buf()), 1, r.heads() * c.headDim(), r.heads(), c.headDim(), rt.dims(), pos[t], rt.invFreq(),
                                rt.mscale(), rt.type());
                }
                case Attention a -> {
                    int es = a.elementBytes();
                    for (int t = 0; t < n; t++) {
                        Buffers row = d.token(t);
                        store(gpu, st, row.buf(Buf.K), row.buf(Buf.V), kCaches[t], vCaches[t], (long) es * pos[t] * kvDim, kvDim, a.kvType(),
                                hostK.asSlice(t * kv, kv), hostV.asSlice(t * kv, kv));
                        int lo = a.window() > 0 ? Math.max(0, pos[t] - a.window() + 1) : 0;
                        long from = (long) es * lo * kvDim, len = (long) es * (pos[t] + 1 - lo) * kvDim;
                        gpu.attention(st, row.buf(Buf.Q), kCaches[t].slice(from, len), vCaches[t].slice(from, len), row.buf(Buf.ATT), c.heads(),
                                c.kvHeads(), c.headDim(), kvDim, pos[t] + 1 - lo, a.scale(), a.softcap(), a.sinks(), a.kvType());
                    }
                }
                default -> batched(gpu, st, d, c, op, n);
            }
        }
    }

    /** An op without positions over {@code tokens} rows: norms, products (GEMMs), biases, the FFN, experts per row, adds. */
    private void batched(GpuBackend gpu, GpuStream st, BatchBuffers d, ModelConfig c, DeviceOp op, int tokens) {
        switch (op) {
            case Norm n -> {
                if (n.layerNorm()) gpu.layerNorm(st, d.buf(n.in()), n.weight(), n.bias(), d.buf(n.out()), n.n(), tokens, n.eps());
                else {
                    gpu.rmsNorm(st, d.buf(n.in()), n.weight(), d.buf(n.out()), n.n(), tokens, n.eps());
                    if (n.bias() != null) gpu.addRows(st, d.buf(n.out()), n.bias(), n.n(), tokens);
                }
            }
            case Linear l -> {
                gpu.matMul(st, l.weight(), d.buf(l.in()), d.buf(l.out()), tokens);
                if (l.bias() != null) gpu.addRows(st, d.buf(l.out()), l.bias(), l.weight().rows(), tokens);
            }
            case HeadNorm h -> gpu.rmsNorm(st, d.buf(h.buf()), h.weight(), d.buf(h.buf()), h.headDim(), h.heads() * tokens, h.eps());
            case Ffn f -> ffnBatch(gpu, st, d, f, tokens);
            case Experts e -> {
                for (int t = 0; t < tokens; t++) experts(gpu, st, d.token(t), e);
            }
            case Add a -> gpu.add(st, d.buf(a.dst()), d.buf(a.src()), c.dim() * tokens);
            case Rope r -> throw new IllegalStateException("RoPE needs positions");
            case Attention a -> throw new IllegalStateException("attention needs its cache");
        }
    }

    /**
     * The first {@code n} floats of k and v into the caches at byte {@code at} (copied, or rounded to F16), and their
     * download into the host staging for the CPU's cache: the F32 rows, which the CPU cache rounds as the device did.
     */
    private static void store(GpuBackend gpu, GpuStream st, GpuBuffer k, GpuBuffer v, GpuBuffer kCache, GpuBuffer vCache, long at, int n,
                              GGMLType kvType, java.lang.foreign.MemorySegment hostK, java.lang.foreign.MemorySegment hostV) {
        if (kvType == GGMLType.F16) {
            gpu.toHalf(st, k, kCache.slice(at, 2L * n), n);
            gpu.toHalf(st, v, vCache.slice(at, 2L * n), n);
        } else {
            gpu.copy(st, k, 0, kCache, at, 4L * n);
            gpu.copy(st, v, 0, vCache, at, 4L * n);
        }
        gpu.download(st, k, 0, hostK);
        gpu.download(st, v, 0, hostV);
    }

    /** The dense MLP over a batch: gate and up as GEMMs into tokens × n_ff scratch, the activation over all of it, down. */
    private void ffnBatch(GpuBackend gpu, GpuStream st, Buffers d, Ffn f, int tokens) {
        GpuBuffer x = d.buf(Buf.XB), h = d.h(), h2 = d.h2(), y = d.buf(Buf.FFN_OUT);
        int ff = f.up().rows();
        if (f.gate() != null) {
            gpu.matMul(st, f.gate(), x, h, tokens);
            if (f.gateBias() != null) gpu.addRows(st, h, f.gateBias(), ff, tokens);
            gpu.matMul(st, f.up(), x, h2, tokens);
            if (f.upBias() != null) gpu.addRows(st, h2, f.upBias(), ff, tokens);
            gpu.activation(st, f.act(), h, h2, h, ff * tokens);
        } else {
            gpu.matMul(st, f.up(), x, h2, tokens);
            if (f.upBias() != null) gpu.addRows(st, h2, f.upBias(), ff, tokens);
            gpu.activation(st, f.act(), h2, null, h, ff * tokens);
        }
        gpu.matMul(st, f.down(), h, y, tokens);
        if (f.downBias() != null) gpu.addRows(st, y, f.downBias(), f.down().rows(), tokens);
    }

    /**
     * The expert layer for one token: router logits to the host (the one wait per expert layer), the host's choice,
     * then the chosen experts in index order (the CPU's summation order) and the shared expert, each into
     * {@code expertOut} and weighted into FFN_OUT.
     */
    private void experts(GpuBackend gpu, GpuStream st, Buffers d, Experts e) {
        GpuBuffer x = d.buf(Buf.XB), y = d.buf(Buf.FFN_OUT), out = d.expertOut(), logits = d.routerLogits();
        int n = e.experts().length, k = e.rule().expertsUsed();
        gpu.matVec(st, e.router(), x, logits, false);
        if (e.routerBias() != null) gpu.add(st, logits, e.routerBias(), n);
        int[] chosen = new int[k];
        float[] weights = new float[k];
        e.rule().route(gpu.downloadFloats(st, logits, 0, n), 0, chosen, weights, 0);
        gpu.zero(st, y);
        for (int ex = 0; ex < n; ex++)
            for (int j = 0; j < k; j++) {
                if (chosen[j] != ex) continue;
                ffn(gpu, st, d, e.experts()[ex], out);
                gpu.scaleAdd(st, y, out, weights[j], e.dim());
            }
        if (e.shared() != null) {
            float gate = 1f;
            if (e.sharedGate() != null) {
                gpu.matVec(st, e.sharedGate(), x, logits, false);
                gate = (float) (1.0 / (1.0 + Math.exp(-gpu.downloadFloats(st, logits, 0, 1)[0])));
            }
            ffn(gpu, st, d, e.shared(), out);
            gpu.scaleAdd(st, y, out, gate, e.dim());
        }
    }

    private void ffn(GpuBackend gpu, GpuStream st, Buffers d, Ffn f, GpuBuffer y) {
        GpuBuffer x = d.buf(Buf.XB), h = d.h(), h2 = d.h2();
        if (f.gate() != null) {
            gpu.matVec(st, f.gate(), x, h, false);
            if (f.gateBias() != null) gpu.add(st, h, f.gateBias(), ff);
            gpu.matVec(st, f.up(), x, h2, false);
            if (f.upBias() != null) gpu.add(st, h2, f.upBias(), ff);
            gpu.activation(st, f.act(), h, h2, h, ff);
        } else {
            gpu.matVec(st, f.up(), x, h2, false);
            if (f.upBias() != null) gpu.add(st, h2, f.upBias(), ff);
            gpu.activation(st, f.act(), h2, null, h, ff);
        }
        if (f.downNeuronMajor()) gpu.sparseAxpy(st, f.down(), h, y, false);   // Σ_r h_r·down_t[r,:]
        else gpu.matVec(st, f.down(), h, y, false);
        if (f.downBias() != null) gpu.add(st, y, f.downBias(), outDim(f));
    }

    /** n_embd: rows of {@code ffn_down}, columns of the neuron-major {@code ffn_down_t}. */
    private static int outDim(Ffn f) {
        return f.downNeuronMajor() ? f.down().cols() : f.down().rows();
    }
}
