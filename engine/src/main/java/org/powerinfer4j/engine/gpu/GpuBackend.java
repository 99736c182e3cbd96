package org.powerinfer4j.engine.gpu;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import org.powerinfer4j.engine.model.RopeType;
import org.powerinfer4j.engine.tensor.GGMLType;
import org.powerinfer4j.engine.tensor.Tensor;

/**
 * The GPU-side operators of the hybrid executor, on device buffers and streams. Two implementations compute the same
 * results: {@link CudaBackend} (CUDA driver + the PTX kernels of {@code cuda-kernels}) and {@link SimulatedBackend}
 * (plain Java on background threads, one per stream, so scheduling, index maps and result merging can be tested on
 * any machine).
 *
 * <p>Every operation is queued on the given stream and returns immediately; see {@link GpuStream} for ordering.
 * Buffers are F32 unless said otherwise; a mask holds one byte per neuron (non-zero = active); index buffers hold
 * int32. Sizes are checked when an operation is issued ({@link IllegalArgumentException}); device-side failures
 * surface at the next synchronisation. Freshly allocated memory has undefined contents.
 */
public interface GpuBackend extends AutoCloseable {
    String name();

    // --- memory ----------------------------------------------------------------------------------------------------

    GpuBuffer allocate(long bytes);

    /**
     * Bytes of the buffers {@link #allocate} handed out and not yet freed, each padded to 256 as the device pads it
     * (the backend's own scratch not included); -1 when this backend does not count.
     */
    default long bytesInUse() {
        return -1;
    }

    /** Queues a copy of all of {@code src} (native memory, unchanged until the stream passes the copy) to {@code dst}. */
    void upload(GpuStream s, MemorySegment src, GpuBuffer dst, long dstOffset);

    /** Queues a copy of {@code dst.byteSize()} bytes from {@code src} at {@code srcOffset} into native {@code dst}. */
    void download(GpuStream s, GpuBuffer src, long srcOffset, MemorySegment dst);

    void copy(GpuStream s, GpuBuffer src, long srcOffset, GpuBuffer dst, long dstOffset, long bytes);

    /** Queues zeroing {@code dst}. */
    void zero(GpuStream s, GpuBuffer dst);

    /** A whole tensor as a device matrix (rows = {@code t.rows()}); returns when the copy is done. */
    default GpuMatrix uploadMatrix(GpuStream s, Tensor t) {
        GgmlRows.requireSupported(t.type(), t.rowLength());
        long bytes = t.rowBytes() * t.rows();
        GpuBuffer b = allocate(bytes);
        upload(s, t.data().asSlice(0, bytes), b, 0);
        synchronize(s);
        return new GpuMatrix(b, t.type(), t.rows(), t.rowLength());
    }

    /**
     * The compact matrix of the listed rows of {@code t} (compact row j = row {@code rows[j]}): PowerInfer's hot
     * neurons of one layer, with {@code rows} its gpu_bucket. Returns when the copy is done.
     */
    default GpuMatrix uploadRows(GpuStream s, Tensor t, int[] rows, int count) {
        GgmlRows.requireSupported(t.type(), t.rowLength());
        GpuBuffer b = allocate(Math.max(1, t.rowBytes() * count));
        try (Arena a = Arena.ofConfined()) {
            upload(s, GgmlRows.gatherRows(t, rows, count, a), b, 0);
            synchronize(s);
        }
        return new GpuMatrix(b, t.type(), count, t.rowLength());
    }

    /** Floats to a new device buffer; returns when the copy is done. */
    default GpuBuffer uploadFloats(GpuStream s, float[] values) {
        GpuBuffer b = allocate(4L * Math.max(1, values.length));
        try (Arena a = Arena.ofConfined()) {
            upload(s, a.allocateFrom(java.lang.foreign.ValueLayout.JAVA_FLOAT, values), b, 0);
            synchronize(s);
        }
        return b;
    }

    /** Ints to a new device buffer; returns when the copy is done. */
    default GpuBuffer uploadInts(GpuStream s, int[] values) {
        GpuBuffer b = allocate(4L * Math.max(1, values.length));
        try (Arena a = Arena.ofConfined()) {
            upload(s, a.allocateFrom(java.lang.foreign.ValueLayout.JAVA_INT, values), b, 0);
            synchronize(s);
        }
        return b;
    }

    /** Reads {@code n} floats from {@code src} at float index {@code from}, waiting for the stream. */
    default float[] downloadFloats(GpuStream s, GpuBuffer src, long from, int n) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment m = a.allocate(4L * Math.max(1, n)).asSlice(0, 4L * n);
            download(s, src, 4 * from, m);
            synchronize(s);
            return m.toArray(java.lang.foreign.ValueLayout.JAVA_FLOAT);
        }
    }

    // --- streams and events ----------------------------------------------------------------------------------------

    GpuStream createStream();

    /**
     * A reusable event, not yet recorded (complete); {@code timed} ones work with {@link #elapsedNanos}. Recording an
     * existing event again ({@link #record(GpuEvent, GpuStream)}) saves creating one per use on hot paths.
     */
    GpuEvent createEvent(boolean timed);

    /** Records {@code e} at the current end of {@code s}; waiting on it afterwards waits for this point. */
    void record(GpuEvent e, GpuStream s);

    /** A new event recorded at the current end of {@code s}; the caller closes it when no longer needed. */
    default GpuEvent record(GpuStream s) {
        GpuEvent e = createEvent(false);
        record(e, s);
        return e;
    }

    /** Like {@link #record}, for an event {@link #elapsedNanos} can measure from or to. */
    default GpuEvent recordTimed(GpuStream s) {
        GpuEvent e = createEvent(true);
        record(e, s);
        return e;
    }

    /**
     * Device time from {@code from} to {@code to} (both from {@link #recordTimed}, both completed) in nanoseconds;
     * -1 when the device cannot say.
     */
    long elapsedNanos(GpuEvent from, GpuEvent to);

    /** Later work on {@code s} waits until {@code e} completes (the host does not block). */
    void wait(GpuStream s, GpuEvent e);

    /** Blocks until all work queued on {@code s} has finished; rethrows a failure of that work. */
    void synchronize(GpuStream s);

    /** Blocks until {@code e} completes. */
    void synchronize(GpuEvent e);

    // --- FFN operators ---------------------------------------------------------------------------------------------

    /** out[r] = W[r,:]·x for every row (relu: max(0, ·)). x: {@code w.cols()} floats, out: {@code w.rows()}. */
    void matVec(GpuStream s, GpuMatrix w, GpuBuffer x, GpuBuffer out, boolean relu);

    /**
     * Row-sparse product over a compact hot matrix: out[j] = W[j,:]·x if {@code mask[rowMap[j]]} is set, else 0
     * (rowMap null: neuron j). Skipped rows cost no weight reads.
     */
    void rowSparseMatVec(GpuStream s, GpuMatrix w, GpuBuffer x, GpuBuffer mask, GpuBuffer rowMap, GpuBuffer out);

    /**
     * y (+)= Σ_{r: h[r] ≠ 0} h[r]·W[r,:] over neuron-major rows (compact {@code down_t} rows; h: {@code w.rows()}
     * floats, y: {@code w.cols()}). Overwrites y unless {@code accumulate}. Deterministic for given shapes.
     */
    void sparseAxpy(GpuStream s, GpuMatrix w, GpuBuffer h, GpuBuffer y, boolean accumulate);

    /**
     * The activation predictor: hidden = relu(fc1·x), logits = fc2·hidden, mask[r] = logits[r] ≥ threshold. When
     * {@code count} (one int32) is given, the number of active neurons is added to it.
     */
    default void predictor(GpuStream s, GpuMatrix fc1, GpuMatrix fc2, GpuBuffer x, GpuBuffer hidden, GpuBuffer logits, float threshold,
                           GpuBuffer mask, GpuBuffer count) {
        if (fc2.cols() != fc1.rows()) throw new IllegalArgumentException("fc2 takes " + fc2.cols() + " inputs but fc1 has " + fc1.rows() + " outputs");
        matVec(s, fc1, x, hidden, true);
        matVec(s, fc2, hidden, logits, false);
        thresholdMask(s, logits, fc2.rows(), threshold, mask, count);
    }

    /** mask[i] = logits[i] ≥ threshold (NaN: 0) for i &lt; n; count (nullable int32) += number set. */
    void thresholdMask(GpuStream s, GpuBuffer logits, int n, float threshold, GpuBuffer mask, GpuBuffer count);

    /** out[i] = act(gate[i], up[i]) for i &lt; n; up unused (may be null) for {@link GpuActivation#RELU}. */
    void activation(GpuStream s, GpuActivation act, GpuBuffer gate, GpuBuffer up, GpuBuffer out, int n);

    /** dst[i] = src[idx[i]] for i &lt; n (compact ← neuron order). */
    void gather(GpuStream s, GpuBuffer src, GpuBuffer idx, GpuBuffer dst, int n);

    /** dst[idx[i]] += src[i] for i &lt; n, distinct indices (neuron order ← compact). */
    void scatterAdd(GpuStream s, GpuBuffer src, GpuBuffer idx, GpuBuffer dst, int n);

    // --- dense layer pieces ----------------------------------------------------------------------------------------

    /** out[r,:] = x[r,:] / sqrt(mean(x[r,:]²) + eps) ⊙ weight, rows of n floats. */
    void rmsNorm(GpuStream s, GpuBuffer x, GpuBuffer weight, GpuBuffer out, int n, int rows, float eps);

    /** out[r,:] = (x[r,:] − mean) / sqrt(var + eps) ⊙ weight (+ bias, nullable), rows of n floats (LayerNorm). */
    void layerNorm(GpuStream s, GpuBuffer x, GpuBuffer weight, GpuBuffer bias, GpuBuffer out, int n, int rows, float eps);

    /**
     * Rotary embedding in place: token t (at position pos0 + t) starts at float t·tokenStride and has {@code heads}
     * heads of {@code headDim}; the first nRot dimensions rotate by pos·invFreq[i] (the model's table, every scaling
     * folded in), with cos and sin scaled by {@code mscale} (YaRN; 1 otherwise).
     */
    void rope(GpuStream s, GpuBuffer v, int tokens, int tokenStride, int heads, int headDim, int nRot, int pos0, GpuBuffer invFreq, float mscale,
              RopeType type);

    /** {@link #rope(GpuStream, GpuBuffer, int, int, int, int, int, int, GpuBuffer, float, RopeType)} without magnitude scaling. */
    default void rope(GpuStream s, GpuBuffer v, int tokens, int tokenStride, int heads, int headDim, int nRot, int pos0, GpuBuffer invFreq, RopeType type) {
        rope(s, v, tokens, tokenStride, heads, headDim, nRot, pos0, invFreq, 1f, type);
    }

    /**
     * One query token's attention over positions 0..nKv-1 of a layer's F32 cache (position t, KV head g at float
     * t·kvStride + g·headDim of k and v), grouped-query: head h reads KV head h / (heads / kvHeads).
     * out = softmax(cap(q·kᵀ·scale))·v per head, cap(s) = softcap·tanh(s / softcap) when softcap &gt; 0; with
     * {@code sinks} (heads floats, nullable) head h's sink logit joins the softmax's denominator. A sliding window is
     * a slice of the cache starting at its first position. q, out: heads·headDim floats.
     */
    default void attention(GpuStream s, GpuBuffer q, GpuBuffer k, GpuBuffer v, GpuBuffer out, int heads, int kvHeads, int headDim, int kvStride,
                           int nKv, float scale, float softcap, GpuBuffer sinks) {
        attention(s, q, k, v, out, heads, kvHeads, headDim, kvStride, nKv, scale, softcap, sinks, GGMLType.F32);
    }

    /**
     * {@link #attention(GpuStream, GpuBuffer, GpuBuffer, GpuBuffer, GpuBuffer, int, int, int, int, int, float, float, GpuBuffer)}
     * over a cache of {@code kvType} elements: F32, or F16 (llama.cpp's default KV type: half the bytes, each value
     * widened to float as it is read; offsets and strides count elements either way).
     */
    void attention(GpuStream s, GpuBuffer q, GpuBuffer k, GpuBuffer v, GpuBuffer out, int heads, int kvHeads, int headDim, int kvStride,
                   int nKv, float scale, float softcap, GpuBuffer sinks, GGMLType kvType);

    /** dst[i] = src[i] rounded to F16 (to nearest, ties to even) for i &lt; n: keys and values into an F16 cache, GEMM operands. */
    void toHalf(GpuStream s, GpuBuffer src, GpuBuffer dst, int n);

    /** Bytes one element of a {@code kvType} cache takes (F32 or F16; anything else is refused). */
    static int kvElementBytes(GGMLType kvType) {
        return switch (kvType) {
            case F32 -> 4;
            case F16 -> 2;
            default -> throw new IllegalArgumentException("the device KV cache is F32 or F16, not " + kvType);
        };
    }

    /** Plain softmax attention: no soft-cap, no sinks. */
    default void attention(GpuStream s, GpuBuffer q, GpuBuffer k, GpuBuffer v, GpuBuffer out, int heads, int kvHeads, int headDim, int kvStride,
                           int nKv, float scale) {
        attention(s, q, k, v, out, heads, kvHeads, headDim, kvStride, nKv, scale, 0f, null);
    }

    // --- prompt batches --------------------------------------------------------------------------------------------

    /**
     * out[t·rows + r] = W[r,:]·x[t·cols ..] for every row r and each of {@code tokens} inputs (x: tokens × cols
     * floats, out: tokens × rows): one projection of a prompt batch. This default runs {@link #matVec} per token; the
     * CUDA backend, from {@link #gemmFrom()} tokens on, dequantizes W to F16 and calls cuBLAS GemmEx (F16 operands,
     * F32 accumulate), whose results differ from the mat-vec's by the operands' F16 rounding; a token's inputs are
     * first scaled by a power of two where they exceed 16384, and its outputs scaled back, so no input overflows F16.
     */
    default void matMul(GpuStream s, GpuMatrix w, GpuBuffer x, GpuBuffer out, int tokens) {
        Checks.floats(x, (long) tokens * w.cols(), "x");
        Checks.floats(out, (long) tokens * w.rows(), "out");
        long in = 4L * w.cols(), o = 4L * w.rows();
        for (int t = 0; t < tokens; t++) matVec(s, w, x.slice(t * in, in), out.slice(t * o, o), false);
    }

    /**
     * y[t·cols + c] = Σ_r h[t·rows + r]·W[r,c] for each of {@code tokens} rows of h (rows floats each; y: tokens ×
     * cols floats, overwritten): {@link #sparseAxpy} over a batch, zeros included. The hybrid FFN's down projection
     * of a prompt batch, whose inactive neurons' h are zeros already (PowerInfer switches its axpy to this transposed
     * GEMM for large batches). This default runs sparseAxpy per token; the CUDA backend, from {@link #gemmFrom()}
     * tokens on, runs cuBLAS GemmEx over W's rows in F16 slabs as {@link #matMul} does, h scaled into F16's range.
     */
    default void axpyMatMul(GpuStream s, GpuMatrix w, GpuBuffer h, GpuBuffer y, int tokens) {
        Checks.floats(h, (long) tokens * w.rows(), "h");
        Checks.floats(y, (long) tokens * w.cols(), "y");
        long in = 4L * w.rows(), o = 4L * w.cols();
        for (int t = 0; t < tokens; t++) sparseAxpy(s, w, h.slice(t * in, in), y.slice(t * o, o), false);
    }

    /**
     * h[t·k + j] = 0 for t &lt; tokens, j &lt; k where neuron {@code rowMap[j]} (j when rowMap is null) of token t is
     * inactive in {@code mask} (byte t·ff + neuron): the predictor's decision applied to a batch of hot rows computed
     * densely, so they equal the row-sparse product's (an inactive row's activation is 0 there too).
     */
    void maskRows(GpuStream s, GpuBuffer h, GpuBuffer mask, GpuBuffer rowMap, int k, int tokens, int ff);

    /**
     * {@link #matMul} in split precision whatever {@code -Dpowerinfer4j.gpu.gemm} says (on CUDA: each operand as a
     * high and a low F16 part, three GEMMs, about 22 bits): for products whose outputs are compared against a
     * threshold — the activation predictor of a batch — where F16 operands would move the decisions off the
     * mat-vec's. This default is {@link #matMul}.
     */
    default void matMulPrecise(GpuStream s, GpuMatrix w, GpuBuffer x, GpuBuffer out, int tokens) {
        matMul(s, w, x, out, tokens);
    }

    /** Tokens from which {@link #matMul} runs as a GEMM ({@code -Dpowerinfer4j.gpu.gemmFrom}, default 8: below, mat-vecs read the weights fewer times than dequantizing them). */
    static int gemmFrom() {
        return Math.max(1, Integer.getInteger("powerinfer4j.gpu.gemmFrom", 8));
    }

    /**
     * Tokens from which the hybrid FFN's device half runs a call's batch as GEMMs (predictor and hot rows over all
     * tokens, the mask applied to the activations) instead of row-sparse products per token
     * ({@code -Dpowerinfer4j.gpu.hybridDenseFrom}, default 32): with a tenth of the hot rows active per token, a
     * batch of 32 reads each hot row about three times token by token, and once as a GEMM.
     */
    static int hybridDenseFrom() {
        return Math.max(1, Integer.getInteger("powerinfer4j.gpu.hybridDenseFrom", 32));
    }

    /**
     * F16 weights one dequantized slab of a GEMM holds at most: 32 MiB ({@code -Dpowerinfer4j.gpu.gemmSlabHalves}, for
     * tests); larger matrices go through in row slabs.
     */
    static long gemmSlabHalves() {
        return Math.max(1, Long.getLong("powerinfer4j.gpu.gemmSlabHalves", 16L << 20));
    }

    /**
     * Stream scratch the CUDA backend's {@link #matMul} of {@code tokens} inputs over a rows × cols matrix of
     * {@code type} takes: the inputs in F16 (none for F32 weights, a float GEMM) and one dequantized slab of W (none
     * for F16 weights, used in place). 0 below {@link #gemmFrom()} tokens.
     */
    static long gemmScratchBytes(org.powerinfer4j.engine.tensor.GGMLType type, int rows, int cols, int tokens) {
        return gemmScratchBytes(type, rows, cols, tokens, gemmSplit());
    }

    /** The same in split precision ({@code split}, as {@link #matMulPrecise}) or not. */
    static long gemmScratchBytes(org.powerinfer4j.engine.tensor.GGMLType type, int rows, int cols, int tokens, boolean split) {
        return gemmScratchBytes(type, rows, cols, cols, tokens, split);
    }

    /** Scales, {@code inputs}-wide F16 inputs [hi, lo] and, for quantized W, one dequantized slab [hi, lo]. */
    private static long gemmScratchBytes(org.powerinfer4j.engine.tensor.GGMLType type, int rows, int cols, int inputs, int tokens, boolean split) {
        if (tokens < gemmFrom() || type == org.powerinfer4j.engine.tensor.GGMLType.F32) return 0;
        int parts = split ? 2 : 1;   // split precision: a high and a low F16 part of each operand
        long x = gemmScaleBytes(tokens) + parts * gemmInputBytes(tokens, inputs);
        return type == org.powerinfer4j.engine.tensor.GGMLType.F16 ? x : x + parts * 2L * gemmSlabRows(rows, cols) * cols;
    }

    /**
     * Stream scratch the CUDA backend's {@link #axpyMatMul} of {@code tokens} rows over a rows × cols neuron-major
     * matrix of {@code type} takes: h in F16 (tokens × rows) and one dequantized slab of W; 0 for F32 weights and
     * below {@link #gemmFrom()} tokens.
     */
    static long axpyGemmScratchBytes(org.powerinfer4j.engine.tensor.GGMLType type, int rows, int cols, int tokens) {
        return gemmScratchBytes(type, rows, cols, rows, tokens, gemmSplit());
    }

    /** Bytes of a GEMM's per-token input scales (a power of two each, keeping large rows inside F16's range), padded to 256. */
    static long gemmScaleBytes(int tokens) {
        return (4L * tokens + 255) / 256 * 256;
    }

    /** Bytes of one F16 copy of a GEMM's inputs, padded to 256. */
    static long gemmInputBytes(int tokens, int cols) {
        return (2L * tokens * cols + 255) / 256 * 256;
    }

    /**
     * Whether {@link #matMul}'s GEMMs run in split precision ({@code -Dpowerinfer4j.gpu.gemm=split}; default
     * {@code f16}): each operand as a high and a low F16 part, three GEMMs (hi·hi + hi·lo + lo·hi), about 22 bits
     * of the operands instead of 11, at three times the tensor-core work: float64-reference parity for prompts at
     * some prefill speed.
     */
    static boolean gemmSplit() {
        String p = System.getProperty("powerinfer4j.gpu.gemm", "f16");
        return switch (p) {
            case "f16" -> false;
            case "split" -> true;
            default -> throw new IllegalArgumentException("powerinfer4j.gpu.gemm is f16 or split, not " + p);
        };
    }

    /** Rows of W per dequantized slab. */
    static int gemmSlabRows(int rows, int cols) {
        return (int) Math.max(1, Math.min(rows, gemmSlabHalves() / Math.max(1, cols)));
    }

    /**
     * Causal attention of a batch of {@code tokens} consecutive queries over positions 0..nKv-1 of a layer's cache (the
     * batch's own keys already stored): token t is at position p = nKv − tokens + t and sees positions
     * {@code max(0, p − window + 1)}..p with a sliding window ({@code window} &gt; 0), else 0..p; otherwise as
     * {@link #attention(GpuStream, GpuBuffer, GpuBuffer, GpuBuffer, GpuBuffer, int, int, int, int, int, float, float, GpuBuffer)}.
     * q, out: tokens × heads·headDim floats. This default runs that method per token; CUDA runs the batch in one launch.
     */
    default void causalAttention(GpuStream s, GpuBuffer q, GpuBuffer k, GpuBuffer v, GpuBuffer out, int heads, int kvHeads, int headDim,
                                 int kvStride, int nKv, int tokens, int window, float scale, float softcap, GpuBuffer sinks) {
        causalAttention(s, q, k, v, out, heads, kvHeads, headDim, kvStride, nKv, tokens, window, scale, softcap, sinks, GGMLType.F32);
    }

    /** The same over a cache of {@code kvType} elements (F32 or F16, as {@link #attention}). */
    default void causalAttention(GpuStream s, GpuBuffer q, GpuBuffer k, GpuBuffer v, GpuBuffer out, int heads, int kvHeads, int headDim,
                                 int kvStride, int nKv, int tokens, int window, float scale, float softcap, GpuBuffer sinks, GGMLType kvType) {
        if (tokens < 0 || tokens > nKv) throw new IllegalArgumentException(tokens + " query tokens over a cache of " + nKv + " positions");
        long qd = 4L * heads * headDim, es = kvElementBytes(kvType);
        for (int t = 0; t < tokens; t++) {
            int pos = nKv - tokens + t, lo = window > 0 ? Math.max(0, pos - window + 1) : 0, n = pos + 1 - lo;
            long from = es * lo * kvStride, len = es * ((long) (n - 1) * kvStride + (long) kvHeads * headDim);
            attention(s, q.slice(t * qd, qd), k.slice(from, len), v.slice(from, len), out.slice(t * qd, qd), heads, kvHeads, headDim, kvStride, n,
                    scale, softcap, sinks, kvType);
        }
    }

    /** y[r·n + i] += b[i] for r &lt; rows, i &lt; n: a bias on every token of a batch. This default adds row by row. */
    default void addRows(GpuStream s, GpuBuffer y, GpuBuffer b, int n, int rows) {
        Checks.floats(y, (long) n * rows, "y");
        for (int r = 0; r < rows; r++) add(s, y.slice(4L * r * n, 4L * n), b, n);
    }

    /** y[i] += x[i] for i &lt; n. */
    void add(GpuStream s, GpuBuffer y, GpuBuffer x, int n);

    /**
     * y[j] += x[j] for j &lt; n where neuron {@code rowMap[j]} (j when rowMap is null) is active in {@code mask} (one
     * byte per neuron): the hybrid FFN's hot-row biases, added only to rows the row-sparse product computed.
     */
    void maskedAdd(GpuStream s, GpuBuffer y, GpuBuffer x, GpuBuffer mask, GpuBuffer rowMap, int n);

    /** y[i] += alpha·x[i] for i &lt; n (one fused multiply-add per element). */
    void scaleAdd(GpuStream s, GpuBuffer y, GpuBuffer x, float alpha, int n);

    /**
     * RoPE inverse frequencies as the CPU forward pass computes them (theta_scale = base^(−2/nRot) accumulated in
     * float), so both sides rotate by identical angles.
     */
    static float[] ropeInvFreq(int nRot, float base) {
        float[] f = new float[nRot / 2];
        float scale = (float) Math.pow(base, -2.0f / nRot), v = 1f;
        for (int i = 0; i < f.length; i++) {
            f[i] = v;
            v *= scale;
        }
        return f;
    }

    /** {@link CudaBackend} on device 0 when CUDA is usable, else a {@link SimulatedBackend}. */
    static GpuBackend open() {
        return CudaBackend.isAvailable() ? CudaBackend.open(0) : new SimulatedBackend();
    }

    @Override
    void close();
}
