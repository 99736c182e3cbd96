package org.powerinfer4j.engine.gpu;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.CopyOnWriteArrayList;
import org.powerinfer4j.bindings.cublas.Cublas;
import org.powerinfer4j.bindings.cuda.Cuda;
import org.powerinfer4j.bindings.cuda.CudaContext;
import org.powerinfer4j.bindings.cuda.CudaEvent;
import org.powerinfer4j.bindings.cuda.CudaStream;
import org.powerinfer4j.bindings.cuda.DeviceBuffer;
import org.powerinfer4j.bindings.cuda.Dim3;
import org.powerinfer4j.engine.gpu.PtxKernels.Spec;
import org.powerinfer4j.engine.model.RopeType;
import org.powerinfer4j.engine.tensor.GGMLType;

/**
 * {@link GpuBackend} on a CUDA device: the primary context of one device, the {@code cuda-kernels} PTX modules
 * (JIT-compiled by the driver at load) and one non-blocking CUDA stream per {@link GpuStream}. Launch shapes:
 * mat-vec one warp per row (8 rows per 256-thread block); axpy 512-column tiles × row splits chosen to give about
 * four blocks per multiprocessor, then a fixed-order reduction of the splits; attention one block per head × context
 * splits (flash-decoding) merged by a combine kernel, a prompt chunk's attention one block per 16 queries × head
 * (flash attention); prompt products through {@link CudaGemm}. Per-stream workspaces hold the split partials and the
 * GEMMs' F16 operands.
 */
public final class CudaBackend implements GpuBackend {
    static final int THREADS = 256;

    private final CudaContext ctx;
    private final PtxKernels.Loaded kernels;
    private final int multiprocessors;
    private final String name;
    private final CopyOnWriteArrayList<CudaGpuStream> streams = new CopyOnWriteArrayList<>();
    private final CudaGemm gemm = new CudaGemm(this);

    private CudaBackend(CudaContext ctx) {
        this.ctx = ctx;
        try {
            this.kernels = new PtxKernels.Loaded(ctx);
            this.multiprocessors = ctx.device().multiprocessorCount();
            this.name = "cuda:" + ctx.device().ordinal() + " (" + ctx.device().name() + ", sm_" + ctx.device().computeCapability().toString().replace(".", "") + ")";
        } catch (RuntimeException e) {
            ctx.close();
            throw e;
        }
    }

    /** True when a CUDA driver and device are usable. */
    public static boolean isAvailable() {
        return Cuda.available();
    }

    /** Why {@link #isAvailable()} is false (one line); empty otherwise. */
    public static String unavailableReason() {
        return Cuda.unavailableReason();
    }

    /** Free and total memory of device 0 in bytes ({@code {free, total}}), or null when CUDA is unusable. */
    public static long[] deviceMemory() {
        if (!isAvailable()) return null;
        try (org.powerinfer4j.bindings.cuda.CudaContext c = Cuda.device(0).retainPrimaryContext()) {
            org.powerinfer4j.bindings.cuda.CudaContext.MemoryInfo mi = c.memoryInfo();
            return new long[] {mi.free(), mi.total()};
        } catch (RuntimeException e) {
            return null;
        }
    }

    /** Retains device {@code ordinal}'s primary context and loads the kernels. */
    public static CudaBackend open(int ordinal) {
        return new CudaBackend(Cuda.device(ordinal).retainPrimaryContext());
    }

    public CudaContext context() {
        return ctx;
    }

    @Override
    public String name() {
        return name;
    }

    // --- memory ----------------------------------------------------------------------------------------------------

    private record CudaBuf(DeviceBuffer buffer) implements GpuBuffer {
        @Override
        public long byteSize() {
            return buffer.byteSize();
        }

        @Override
        public GpuBuffer slice(long offset, long bytes) {
            return new CudaBuf(buffer.slice(offset, bytes));
        }

        @Override
        public void close() {
            buffer.close();
        }
    }

    static DeviceBuffer dev(GpuBuffer b) {
        if (b == null) return null;
        if (b instanceof CudaBuf c) return c.buffer;
        throw new IllegalArgumentException("buffer " + b + " does not belong to a CUDA backend");
    }

    @Override
    public GpuBuffer allocate(long bytes) {
        return new CudaBuf(ctx.allocate(bytes));
    }

    @Override
    public void upload(GpuStream s, MemorySegment src, GpuBuffer dst, long dstOffset) {
        dev(dst).copyFromHost(src, dstOffset, cs(s));
    }

    @Override
    public void download(GpuStream s, GpuBuffer src, long srcOffset, MemorySegment dst) {
        dev(src).copyToHost(srcOffset, dst, cs(s));
    }

    @Override
    public void copy(GpuStream s, GpuBuffer src, long srcOffset, GpuBuffer dst, long dstOffset, long bytes) {
        dev(dst).copyFromDevice(dev(src), srcOffset, dstOffset, bytes, cs(s));
    }

    @Override
    public void zero(GpuStream s, GpuBuffer dst) {
        dev(dst).fill((byte) 0, cs(s));
    }

    // --- streams and events ----------------------------------------------------------------------------------------

    final class CudaGpuStream implements GpuStream {
        final CudaStream stream = ctx.createStream();
        private DeviceBuffer workspace;
        private Cublas blas;   // this stream's own handle: a handle's stream is state, and sessions run concurrently

        /** The cuBLAS handle issuing on this stream, created at the first GEMM. */
        Cublas blas() {
            if (blas == null) {
                Cublas b = Cublas.create(ctx);
                b.setStream(stream);
                blas = b;
            }
            return blas;
        }

        /** Scratch of at least {@code bytes} for split partials; grows (after draining the stream) when needed. */
        DeviceBuffer workspace(long bytes) {
            if (workspace == null || workspace.byteSize() < bytes) {
                if (workspace != null) {
                    stream.synchronize();
                    workspace.close();
                }
                workspace = ctx.allocate(Math.max(bytes, 1 << 20));
            }
            return workspace;
        }

        @Override
        public void close() {
            if (!streams.remove(this)) return;
            stream.synchronize();
            if (blas != null) blas.close();
            if (workspace != null) workspace.close();
            stream.close();
        }
    }

    private record CudaGpuEvent(CudaEvent event) implements GpuEvent {
        @Override
        public boolean isComplete() {
            return event.isComplete();
        }

        @Override
        public void close() {
            event.close();
        }
    }

    static CudaGpuStream st(GpuStream s) {
        if (s instanceof CudaGpuStream c) return c;
        throw new IllegalArgumentException("stream " + s + " does not belong to a CUDA backend");
    }

    private static CudaStream cs(GpuStream s) {
        return st(s).stream;
    }

    @Override
    public GpuStream createStream() {
        CudaGpuStream s = new CudaGpuStream();
        streams.add(s);
        return s;
    }

    @Override
    public GpuEvent createEvent(boolean timed) {
        return new CudaGpuEvent(ctx.createEvent(timed));
    }

    @Override
    public void record(GpuEvent e, GpuStream s) {
        if (!(e instanceof CudaGpuEvent c)) throw new IllegalArgumentException("event " + e + " does not belong to a CUDA backend");
        c.event().record(cs(s));
    }

    @Override
    public long elapsedNanos(GpuEvent from, GpuEvent to) {
        if (!(from instanceof CudaGpuEvent a) || !(to instanceof CudaGpuEvent b)) return -1;
        try {
            return Math.max(0, Math.round(b.event().elapsedMillisSince(a.event()) * 1e6));   // cuEventElapsedTime: ~0.5 µs resolution
        } catch (RuntimeException e) {
            return -1;   // not timed, or not both complete
        }
    }

    @Override
    public void wait(GpuStream s, GpuEvent e) {
        if (!(e instanceof CudaGpuEvent ce)) throw new IllegalArgumentException("event " + e + " does not belong to a CUDA backend");
        cs(s).waitEvent(ce.event);
    }

    @Override
    public void synchronize(GpuStream s) {
        cs(s).synchronize();
    }

    @Override
    public void synchronize(GpuEvent e) {
        if (!(e instanceof CudaGpuEvent ce)) throw new IllegalArgumentException("event " + e + " does not belong to a CUDA backend");
        ce.event.synchronize();
    }

    // --- operators -------------------------------------------------------------------------------------------------

    static int blocks(long work, int perBlock) {
        return (int) Math.max(1, Math.min(Integer.MAX_VALUE, (work + perBlock - 1) / perBlock));
    }

    void launch(Spec k, Dim3 grid, int threads, GpuStream s, Object... args) {
        kernels.launch(k, grid, Dim3.of(threads), cs(s), args);
    }

    private static Spec matvecKernel(GGMLType t) {
        return switch (t) {
            case F32 -> Spec.MATVEC_F32;
            case F16 -> Spec.MATVEC_F16;
            case Q8_0 -> Spec.MATVEC_Q8_0;
            case Q4_0 -> Spec.MATVEC_Q4_0;
            case Q4_K -> Spec.MATVEC_Q4_K;
            case Q5_K -> Spec.MATVEC_Q5_K;
            case Q6_K -> Spec.MATVEC_Q6_K;
            default -> throw new IllegalArgumentException("no matvec kernel for " + t);
        };
    }

    private static Spec axpyKernel(GGMLType t) {
        return switch (t) {
            case F32 -> Spec.AXPY_F32;
            case F16 -> Spec.AXPY_F16;
            case Q8_0 -> Spec.AXPY_Q8_0;
            case Q4_0 -> Spec.AXPY_Q4_0;
            default -> throw new IllegalArgumentException("no axpy kernel for " + t);
        };
    }

    @Override
    public void matVec(GpuStream s, GpuMatrix w, GpuBuffer x, GpuBuffer out, boolean relu) {
        Checks.floats(x, w.cols(), "x");
        Checks.floats(out, w.rows(), "out");
        if (w.rows() == 0) return;
        launch(matvecKernel(w.type()), Dim3.of(blocks(w.rows(), PtxKernels.MATVEC_THREADS / 32)), PtxKernels.MATVEC_THREADS, s,
                dev(w.data()), dev(x), dev(out), w.rows(), w.cols(), null, null, relu ? 1 : 0);
    }

    @Override
    public void rowSparseMatVec(GpuStream s, GpuMatrix w, GpuBuffer x, GpuBuffer mask, GpuBuffer rowMap, GpuBuffer out) {
        Checks.floats(x, w.cols(), "x");
        Checks.floats(out, w.rows(), "out");
        Checks.bytes(mask, rowMap == null ? w.rows() : 1, "mask", "one byte per neuron");
        if (rowMap != null) Checks.ints(rowMap, w.rows(), "rowMap");
        if (w.rows() == 0) return;
        launch(matvecKernel(w.type()), Dim3.of(blocks(w.rows(), PtxKernels.MATVEC_THREADS / 32)), PtxKernels.MATVEC_THREADS, s,
                dev(w.data()), dev(x), dev(out), w.rows(), w.cols(), dev(mask), dev(rowMap), 0);
    }

    /** Row splits for the axpy: enough blocks to fill the device, each split at least one 256-row chunk. */
    int axpySplits(int rows, int dim) {
        int tiles = (dim + PtxKernels.AXPY_TILE - 1) / PtxKernels.AXPY_TILE;
        int want = Math.max(1, (4 * multiprocessors + tiles - 1) / tiles);
        int maxUseful = Math.max(1, (rows + PtxKernels.AXPY_THREADS - 1) / PtxKernels.AXPY_THREADS);
        return Math.min(Math.min(want, maxUseful), 65535);
    }

    @Override
    public void sparseAxpy(GpuStream s, GpuMatrix w, GpuBuffer h, GpuBuffer y, boolean accumulate) {
        Checks.floats(h, w.rows(), "h");
        Checks.floats(y, w.cols(), "y");
        int rows = w.rows(), dim = w.cols();
        if (dim == 0) return;
        int tiles = (dim + PtxKernels.AXPY_TILE - 1) / PtxKernels.AXPY_TILE;
        int splits = axpySplits(rows, dim);
        int perSplit = Math.max(1, (rows + splits - 1) / splits);
        splits = Math.max(1, (rows + perSplit - 1) / perSplit);
        Spec k = axpyKernel(w.type());
        if (splits == 1) {
            launch(k, Dim3.of(tiles), PtxKernels.AXPY_THREADS, s, dev(w.data()), dev(h), dev(y), rows, dim, perSplit, accumulate ? 1 : 0);
            return;
        }
        DeviceBuffer partial = st(s).workspace(4L * splits * dim);
        launch(k, Dim3.of(tiles, splits), PtxKernels.AXPY_THREADS, s, dev(w.data()), dev(h), partial, rows, dim, perSplit, 0);
        launch(Spec.AXPY_REDUCE, Dim3.of(blocks(dim, THREADS)), THREADS, s, partial, splits, dim, dev(y), accumulate ? 1 : 0);
    }

    @Override
    public void thresholdMask(GpuStream s, GpuBuffer logits, int n, float threshold, GpuBuffer mask, GpuBuffer count) {
        Checks.floats(logits, n, "logits");
        Checks.bytes(mask, n, "mask", n + " bytes");
        if (count != null) Checks.ints(count, 1, "count");
        if (n == 0) return;
        launch(Spec.THRESHOLD_MASK, Dim3.of(blocks(n, THREADS)), THREADS, s, dev(logits), n, threshold, dev(mask), dev(count));
    }

    @Override
    public void activation(GpuStream s, GpuActivation act, GpuBuffer gate, GpuBuffer up, GpuBuffer out, int n) {
        Checks.activation(act, gate, up, out, n);
        if (n == 0) return;
        launch(Spec.FFN_ACT_F32, Dim3.of(blocks(n, THREADS)), THREADS, s, dev(gate), act == GpuActivation.RELU || up == null ? null : dev(up), dev(out), n,
                act.ordinal());
    }

    @Override
    public void gather(GpuStream s, GpuBuffer src, GpuBuffer idx, GpuBuffer dst, int n) {
        Checks.ints(idx, n, "idx");
        Checks.floats(dst, n, "dst");
        if (n == 0) return;
        launch(Spec.GATHER_F32, Dim3.of(blocks(n, THREADS)), THREADS, s, dev(src), dev(idx), dev(dst), n);
    }

    @Override
    public void scatterAdd(GpuStream s, GpuBuffer src, GpuBuffer idx, GpuBuffer dst, int n) {
        Checks.ints(idx, n, "idx");
        Checks.floats(src, n, "src");
        if (n == 0) return;
        launch(Spec.SCATTER_ADD_F32, Dim3.of(blocks(n, THREADS)), THREADS, s, dev(src), dev(idx), dev(dst), n);
    }

    @Override
    public void rmsNorm(GpuStream s, GpuBuffer x, GpuBuffer weight, GpuBuffer out, int n, int rows, float eps) {
        Checks.floats(x, (long) n * rows, "x");
        Checks.floats(weight, n, "weight");
        Checks.floats(out, (long) n * rows, "out");
        if (rows == 0) return;
        launch(Spec.RMS_NORM_F32, Dim3.of(rows), THREADS, s, dev(x), dev(weight), dev(out), n, rows, eps);
    }

    @Override
    public void layerNorm(GpuStream s, GpuBuffer x, GpuBuffer weight, GpuBuffer bias, GpuBuffer out, int n, int rows, float eps) {
        Checks.floats(x, (long) n * rows, "x");
        Checks.floats(weight, n, "weight");
        if (bias != null) Checks.floats(bias, n, "bias");
        Checks.floats(out, (long) n * rows, "out");
        if (rows == 0) return;
        launch(Spec.LAYER_NORM_F32, Dim3.of(rows), THREADS, s, dev(x), dev(weight), dev(bias), dev(out), n, rows, eps);
    }

    @Override
    public void rope(GpuStream s, GpuBuffer v, int tokens, int tokenStride, int heads, int headDim, int nRot, int pos0, GpuBuffer invFreq,
                     float mscale, RopeType type) {
        Checks.rope(heads, headDim, nRot, tokenStride, tokens);
        Checks.floats(v, tokens == 0 ? 0 : (long) (tokens - 1) * tokenStride + (long) heads * headDim, "v");
        Checks.floats(invFreq, nRot / 2, "invFreq");
        long pairs = (long) tokens * heads * (nRot / 2);
        if (pairs == 0) return;
        launch(Spec.ROPE_F32, Dim3.of(blocks(pairs, THREADS)), THREADS, s, dev(v), tokens, tokenStride, heads, headDim, nRot, pos0, dev(invFreq),
                10000f, mscale, type == RopeType.NEOX ? 1 : 0);
    }

    /** Context splits: about two blocks per multiprocessor over all heads, each split at least 128 positions. */
    int attentionSplits(int heads, int nKv) {
        int want = Math.max(1, (2 * multiprocessors + heads - 1) / heads);
        int maxUseful = Math.max(1, (nKv + 127) / 128);
        return Math.min(Math.min(want, maxUseful), 65535);
    }

    @Override
    public void attention(GpuStream s, GpuBuffer q, GpuBuffer k, GpuBuffer v, GpuBuffer out, int heads, int kvHeads, int headDim, int kvStride,
                          int nKv, float scale, float softcap, GpuBuffer sinks, GGMLType kvType) {
        Checks.attention(heads, kvHeads, headDim, kvStride, nKv);
        Checks.floats(q, (long) heads * headDim, "q");
        Checks.floats(out, (long) heads * headDim, "out");
        long cache = nKv == 0 ? 0 : (long) (nKv - 1) * kvStride + (long) kvHeads * headDim;
        Checks.kvCache(k, cache, kvType, "k cache");
        Checks.kvCache(v, cache, kvType, "v cache");
        if (sinks != null) Checks.floats(sinks, heads, "sinks");
        Spec kernel = attentionKernel(kvType);
        int splits = attentionSplits(heads, nKv);
        if (splits == 1) {
            launch(kernel, Dim3.of(heads), PtxKernels.ATTENTION_THREADS, s, dev(q), dev(k), dev(v), dev(out), null, heads, kvHeads,
                    headDim, kvStride, nKv, scale, softcap, dev(sinks), 1, 1, 0);
            return;
        }
        DeviceBuffer partial = st(s).workspace(4L * heads * splits * (headDim + 2));
        launch(kernel, Dim3.of(heads, splits), PtxKernels.ATTENTION_THREADS, s, dev(q), dev(k), dev(v), dev(out), partial, heads,
                kvHeads, headDim, kvStride, nKv, scale, softcap, null, splits, 1, 0);
        launch(Spec.ATTENTION_COMBINE_F32, Dim3.of(heads), PtxKernels.ATTENTION_THREADS, s, partial, dev(out), heads, headDim, dev(sinks), splits);
    }

    private static Spec attentionKernel(GGMLType kvType) {
        return attentionKernel(kvType, false);
    }

    /** The attention kernel for a cache of {@code kvType}: one query per block, or ({@code tiled}) a chunk's flash attention. */
    private static Spec attentionKernel(GGMLType kvType, boolean tiled) {
        return switch (kvType) {
            case F32 -> tiled ? Spec.FLASH_ATTENTION_F32 : Spec.ATTENTION_F32;
            case F16 -> tiled ? Spec.FLASH_ATTENTION_F16KV : Spec.ATTENTION_F16KV;
            default -> throw new IllegalArgumentException("the device KV cache is F32 or F16, not " + kvType);
        };
    }

    @Override
    public void causalAttention(GpuStream s, GpuBuffer q, GpuBuffer k, GpuBuffer v, GpuBuffer out, int heads, int kvHeads, int headDim,
                                int kvStride, int nKv, int tokens, int window, float scale, float softcap, GpuBuffer sinks, GGMLType kvType) {
        Checks.attention(heads, kvHeads, headDim, kvStride, nKv);
        if (tokens < 0 || tokens > nKv) throw new IllegalArgumentException(tokens + " query tokens over a cache of " + nKv + " positions");
        Checks.floats(q, (long) tokens * heads * headDim, "q");
        Checks.floats(out, (long) tokens * heads * headDim, "out");
        long cache = nKv == 0 ? 0 : (long) (nKv - 1) * kvStride + (long) kvHeads * headDim;
        Checks.kvCache(k, cache, kvType, "k cache");
        Checks.kvCache(v, cache, kvType, "v cache");
        if (sinks != null) Checks.floats(sinks, heads, "sinks");
        if (tokens == 0) return;
        if (tiledAttention()) {   // one block per (tile of 16 queries, head), the tile's keys and values staged once
            long tiles = (tokens + PtxKernels.FLASH_QUERY_TILE - 1) / PtxKernels.FLASH_QUERY_TILE;
            launch(attentionKernel(kvType, true), Dim3.of(blocks(tiles * heads, 1)), PtxKernels.ATTENTION_THREADS, s,
                    dev(q), dev(k), dev(v), dev(out), heads, kvHeads, headDim, kvStride, nKv, scale, softcap, dev(sinks), tokens, window);
            return;
        }
        // one block per (token, head), no context splits: a batch has blocks enough
        launch(attentionKernel(kvType), Dim3.of(blocks((long) tokens * heads, 1)), PtxKernels.ATTENTION_THREADS, s, dev(q), dev(k), dev(v), dev(out), null,
                heads, kvHeads, headDim, kvStride, nKv, scale, softcap, dev(sinks), 1, tokens, window);
    }

    /**
     * Whether a prompt chunk's causal attention runs tiled ({@code -Dpowerinfer4j.gpu.attention=tiled}, the default:
     * flash attention, 16 queries sharing each staged key and value) or one block per query ({@code rows}, for
     * comparison).
     */
    static boolean tiledAttention() {
        String a = System.getProperty("powerinfer4j.gpu.attention", "tiled");
        return switch (a) {
            case "tiled" -> true;
            case "rows" -> false;
            default -> throw new IllegalArgumentException("powerinfer4j.gpu.attention is tiled or rows, not " + a);
        };
    }

    @Override
    public void addRows(GpuStream s, GpuBuffer y, GpuBuffer b, int n, int rows) {
        Checks.floats(y, (long) n * rows, "y");
        Checks.floats(b, n, "b");
        if ((long) n * rows == 0) return;
        launch(Spec.ADD_ROWS_F32, Dim3.of(blocks((long) n * rows, THREADS)), THREADS, s, dev(y), dev(b), n, rows);
    }

    /** From {@link GpuBackend#gemmFrom()} tokens a cuBLAS GEMM ({@link CudaGemm#matMul}), below mat-vecs per token. */
    @Override
    public void matMul(GpuStream s, GpuMatrix w, GpuBuffer x, GpuBuffer out, int tokens) {
        if (tokens < GpuBackend.gemmFrom() || !Cublas.available()) GpuBackend.super.matMul(s, w, x, out, tokens);
        else gemm.matMul(s, w, x, out, tokens, GpuBackend.gemmSplit());
    }

    /** As {@link #matMul}, its GEMMs in split precision. */
    @Override
    public void matMulPrecise(GpuStream s, GpuMatrix w, GpuBuffer x, GpuBuffer out, int tokens) {
        if (tokens < GpuBackend.gemmFrom() || !Cublas.available()) GpuBackend.super.matMul(s, w, x, out, tokens);
        else gemm.matMul(s, w, x, out, tokens, true);
    }

    /** From {@link GpuBackend#gemmFrom()} tokens a transposed cuBLAS GEMM ({@link CudaGemm#axpyMatMul}), below axpys per token. */
    @Override
    public void axpyMatMul(GpuStream s, GpuMatrix w, GpuBuffer h, GpuBuffer y, int tokens) {
        if (tokens < GpuBackend.gemmFrom() || !Cublas.available() || w.rows() == 0) GpuBackend.super.axpyMatMul(s, w, h, y, tokens);
        else gemm.axpyMatMul(s, w, h, y, tokens);
    }

    @Override
    public void maskRows(GpuStream s, GpuBuffer h, GpuBuffer mask, GpuBuffer rowMap, int k, int tokens, int ff) {
        Checks.floats(h, (long) k * tokens, "h");
        Checks.bytes(mask, (long) tokens * ff, "mask", "one byte per neuron and token");
        if (rowMap != null) Checks.ints(rowMap, k, "rowMap");
        if ((long) k * tokens == 0) return;
        launch(Spec.MASK_ROWS_F32, Dim3.of(blocks((long) k * tokens, THREADS)), THREADS, s, dev(h), dev(mask), dev(rowMap), k, tokens, ff);
    }

    @Override
    public void add(GpuStream s, GpuBuffer y, GpuBuffer x, int n) {
        Checks.floats(y, n, "y");
        Checks.floats(x, n, "x");
        if (n == 0) return;
        launch(Spec.ADD_F32, Dim3.of(blocks(n, THREADS)), THREADS, s, dev(y), dev(x), n);
    }

    @Override
    public void maskedAdd(GpuStream s, GpuBuffer y, GpuBuffer x, GpuBuffer mask, GpuBuffer rowMap, int n) {
        Checks.floats(y, n, "y");
        Checks.floats(x, n, "x");
        if (rowMap != null) Checks.ints(rowMap, n, "rowMap");
        if (n == 0) return;
        launch(Spec.MASKED_ADD_F32, Dim3.of(blocks(n, THREADS)), THREADS, s, dev(y), dev(x), dev(mask), dev(rowMap), n);
    }

    @Override
    public void scaleAdd(GpuStream s, GpuBuffer y, GpuBuffer x, float alpha, int n) {
        Checks.floats(y, n, "y");
        Checks.floats(x, n, "x");
        if (n == 0) return;
        launch(Spec.SCALE_ADD_F32, Dim3.of(blocks(n, THREADS)), THREADS, s, dev(y), dev(x), alpha, n);
    }

    @Override
    public void toHalf(GpuStream s, GpuBuffer src, GpuBuffer dst, int n) {
        Checks.floats(src, n, "src");
        Checks.bytes(dst, 2L * n, "dst", n + " halves");
        if (n == 0) return;
        launch(Spec.CONVERT_F32_F16, Dim3.of(blocks(n, THREADS)), THREADS, s, dev(src), dev(dst), n);
    }

    /** Converts n F16 values to floats. */
    public void fromHalf(GpuStream s, GpuBuffer src, GpuBuffer dst, int n) {
        Checks.bytes(src, 2L * n, "src", n + " halves");
        Checks.floats(dst, n, "dst");
        if (n == 0) return;
        launch(Spec.CONVERT_F16_F32, Dim3.of(blocks(n, THREADS)), THREADS, s, dev(src), dev(dst), n);
    }

    /**
     * Closes the streams, unloads the kernels and releases the context. Buffers must have been closed. Best effort:
     * after a fatal device error every driver call fails, and the context must still be released.
     */
    @Override
    public void close() {
        RuntimeException first = null;
        for (CudaGpuStream s : streams) first = attempt(s::close, first);
        first = attempt(kernels::close, first);
        first = attempt(ctx::close, first);
        if (first != null) throw first;
    }

    private static RuntimeException attempt(Runnable r, RuntimeException first) {
        try {
            r.run();
            return first;
        } catch (RuntimeException e) {
            if (first != null) first.addSuppressed(e);
            return first != null ? first : e;
        }
    }
}
