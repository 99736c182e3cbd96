package org.powerinfer4j.engine.gpu;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import org.powerinfer4j.engine.model.RopeType;
import org.powerinfer4j.engine.tensor.GGMLType;

/**
 * A CPU implementation of {@link GpuBackend} with the device's semantics: "device" buffers are native memory owned
 * by the backend, and each stream is a worker thread that runs its queue in order, so work really runs
 * asynchronously and concurrently across streams. Code that reads a result before synchronising, or orders streams
 * without events, sees stale data here as it would on a GPU. With {@code asynchronous = false} every operation runs
 * on the calling thread when issued (for debugging).
 *
 * <p>The arithmetic is the kernels' arithmetic in plain Java: rows are decoded by {@link GgmlRows} and dotted
 * in float in row order, the axpy accumulates rows in index order from zero, and attention uses an exact softmax.
 */
public final class SimulatedBackend implements GpuBackend {
    private static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT;
    private static final ValueLayout.OfInt I = ValueLayout.JAVA_INT;
    private static final ValueLayout.OfShort H = ValueLayout.JAVA_SHORT;   // F16 bits
    private static final AtomicInteger STREAM_IDS = new AtomicInteger();

    private final boolean asynchronous;
    private final List<SimStream> streams = new CopyOnWriteArrayList<>();

    public SimulatedBackend() {
        this(true);
    }

    public SimulatedBackend(boolean asynchronous) {
        this.asynchronous = asynchronous;
    }

    @Override
    public String name() {
        return "simulated" + (asynchronous ? "" : " (synchronous)");
    }

    // --- memory ----------------------------------------------------------------------------------------------------

    private final java.util.concurrent.atomic.AtomicLong inUse = new java.util.concurrent.atomic.AtomicLong();

    @Override
    public long bytesInUse() {
        return inUse.get();
    }

    private static long padded(long bytes) {
        return (Math.max(1, bytes) + 255) / 256 * 256;
    }

    final class SimBuffer implements GpuBuffer {
        private final Arena arena;          // null for views
        private final MemorySegment segment;
        private final SimBuffer root;

        SimBuffer(Arena arena, MemorySegment segment, SimBuffer root) {
            this.arena = arena;
            this.segment = segment;
            this.root = root == null ? this : root;
        }

        MemorySegment segment() {
            if (!root.arena.scope().isAlive()) throw new IllegalStateException("simulated device buffer was freed");
            return segment;
        }

        @Override
        public long byteSize() {
            return segment.byteSize();
        }

        @Override
        public GpuBuffer slice(long offset, long bytes) {
            return new SimBuffer(null, segment().asSlice(offset, bytes), root);
        }

        @Override
        public void close() {
            if (root == this && arena.scope().isAlive()) {
                arena.close();
                inUse.addAndGet(-padded(segment.byteSize()));
            }
        }
    }

    private static SimBuffer sim(GpuBuffer b) {
        if (b instanceof SimBuffer s) return s;
        throw new IllegalArgumentException("buffer " + b + " does not belong to the simulated backend");
    }

    private static MemorySegment seg(GpuBuffer b) {
        return b == null ? null : sim(b).segment();
    }

    @Override
    public GpuBuffer allocate(long bytes) {
        Checks.nonNegative(bytes, "allocation size");
        Arena a = Arena.ofShared();
        MemorySegment m = a.allocate(Math.max(1, bytes), 256).asSlice(0, bytes);
        m.fill((byte) 0xff); // undefined contents: NaN floats, so use-before-write shows up in tests
        inUse.addAndGet(padded(bytes));
        return new SimBuffer(a, m, null);
    }

    @Override
    public void upload(GpuStream s, MemorySegment src, GpuBuffer dst, long dstOffset) {
        Objects.checkFromIndexSize(dstOffset, src.byteSize(), dst.byteSize());
        MemorySegment d = seg(dst), h = hostPointer(src);
        submit(s, () -> MemorySegment.copy(h, 0, d, dstOffset, h.byteSize()));
    }

    @Override
    public void download(GpuStream s, GpuBuffer src, long srcOffset, MemorySegment dst) {
        Objects.checkFromIndexSize(srcOffset, dst.byteSize(), src.byteSize());
        MemorySegment m = seg(src), h = hostPointer(dst);
        submit(s, () -> MemorySegment.copy(m, srcOffset, h, 0, h.byteSize()));
    }

    /**
     * The host memory as the driver sees it: a raw address, usable from the stream's thread whatever arena owns it
     * (a confined one too). As on a GPU, the memory must stay allocated until the stream has passed the copy.
     */
    private static MemorySegment hostPointer(MemorySegment m) {
        if (!m.isNative()) throw new IllegalArgumentException("host memory for device copies must be native (off-heap), not a heap segment");
        return MemorySegment.ofAddress(m.address()).reinterpret(m.byteSize());
    }

    @Override
    public void copy(GpuStream s, GpuBuffer src, long srcOffset, GpuBuffer dst, long dstOffset, long bytes) {
        Objects.checkFromIndexSize(srcOffset, bytes, src.byteSize());
        Objects.checkFromIndexSize(dstOffset, bytes, dst.byteSize());
        MemorySegment a = seg(src), b = seg(dst);
        submit(s, () -> MemorySegment.copy(a, srcOffset, b, dstOffset, bytes));
    }

    @Override
    public void zero(GpuStream s, GpuBuffer dst) {
        MemorySegment d = seg(dst);
        submit(s, () -> d.fill((byte) 0));
    }

    // --- streams and events ----------------------------------------------------------------------------------------

    final class SimStream implements GpuStream {
        private final ExecutorService worker;
        private volatile Throwable failure;

        SimStream() {
            int id = STREAM_IDS.incrementAndGet();
            worker = asynchronous ? Executors.newSingleThreadExecutor(r -> {
                Thread t = new Thread(r, "simulated-gpu-stream-" + id);
                t.setDaemon(true);
                return t;
            }) : null;
        }

        /** Queues {@code op}; after a failure, later operations are skipped (CUDA's errors are sticky too). */
        void submit(Runnable op, boolean always) {
            Runnable task = () -> {
                if (failure != null && !always) return;
                try {
                    op.run();
                } catch (Throwable t) {
                    if (failure == null) failure = t;
                }
            };
            if (worker == null) task.run();
            else worker.execute(task);
        }

        SimulatedBackend backend() {
            return SimulatedBackend.this;
        }

        @Override
        public void close() {
            if (worker != null) worker.shutdown();
            streams.remove(this);
        }
    }

    static final class SimEvent implements GpuEvent {
        // replaced by each record: waiting means waiting for the latest recorded point (as with CUDA events)
        volatile CompletableFuture<Void> done = CompletableFuture.completedFuture(null);
        volatile long completedAt;   // System.nanoTime when the stream reached it

        @Override
        public boolean isComplete() {
            return done.isDone();
        }

        @Override
        public void close() {}
    }

    private SimStream stream(GpuStream s) {
        if (s instanceof SimStream st && st.backend() == this) return st;
        throw new IllegalArgumentException("stream " + s + " does not belong to the simulated backend");
    }

    private void submit(GpuStream s, Runnable op) {
        stream(s).submit(op, false);
    }

    @Override
    public GpuStream createStream() {
        SimStream s = new SimStream();
        streams.add(s);
        return s;
    }

    @Override
    public GpuEvent createEvent(boolean timed) {
        return new SimEvent();
    }

    @Override
    public void record(GpuEvent e, GpuStream s) {
        if (!(e instanceof SimEvent ev)) throw new IllegalArgumentException("event " + e + " does not belong to the simulated backend");
        CompletableFuture<Void> f = new CompletableFuture<>();
        ev.done = f;
        stream(s).submit(() -> {
            ev.completedAt = System.nanoTime();
            f.complete(null);
        }, true);
    }

    @Override
    public long elapsedNanos(GpuEvent from, GpuEvent to) {
        if (!(from instanceof SimEvent a) || !(to instanceof SimEvent b) || !a.done.isDone() || !b.done.isDone()) return -1;
        return Math.max(0, b.completedAt - a.completedAt);
    }

    @Override
    public void wait(GpuStream s, GpuEvent e) {
        if (!(e instanceof SimEvent ev)) throw new IllegalArgumentException("event " + e + " does not belong to the simulated backend");
        stream(s).submit(ev.done::join, true);
    }

    @Override
    public void synchronize(GpuStream s) {
        SimStream st = stream(s);
        ((SimEvent) record(s)).done.join();
        Throwable f = st.failure;
        if (f != null) throw new IllegalStateException("simulated device operation failed: " + f, f);
    }

    @Override
    public void synchronize(GpuEvent e) {
        if (!(e instanceof SimEvent ev)) throw new IllegalArgumentException("event " + e + " does not belong to the simulated backend");
        ev.done.join();
    }

    // --- operators -------------------------------------------------------------------------------------------------

    private static float[] read(MemorySegment m, int n) {
        float[] v = new float[n];
        MemorySegment.copy(m, F, 0, v, 0, n);
        return v;
    }

    private static void write(MemorySegment m, float[] v) {
        MemorySegment.copy(v, 0, m, F, 0, v.length);
    }

    @Override
    public void matVec(GpuStream s, GpuMatrix w, GpuBuffer x, GpuBuffer out, boolean relu) {
        Checks.floats(x, w.cols(), "x");
        Checks.floats(out, w.rows(), "out");
        MemorySegment W = seg(w.data()), X = seg(x), O = seg(out);
        submit(s, () -> matVec(w, W, X, O, null, null, relu));
    }

    @Override
    public void rowSparseMatVec(GpuStream s, GpuMatrix w, GpuBuffer x, GpuBuffer mask, GpuBuffer rowMap, GpuBuffer out) {
        Checks.floats(x, w.cols(), "x");
        Checks.floats(out, w.rows(), "out");
        Checks.bytes(mask, rowMap == null ? w.rows() : 1, "mask", "one byte per neuron");
        if (rowMap != null) Checks.ints(rowMap, w.rows(), "rowMap");
        MemorySegment W = seg(w.data()), X = seg(x), O = seg(out), M = seg(mask), R = seg(rowMap);
        submit(s, () -> matVec(w, W, X, O, M, R, false));
    }

    private static void matVec(GpuMatrix w, MemorySegment W, MemorySegment X, MemorySegment O, MemorySegment mask, MemorySegment rowMap, boolean relu) {
        int rows = w.rows(), n = w.cols();
        long rb = w.rowBytes();
        float[] x = read(X, n), row = new float[n], o = new float[rows];
        for (int j = 0; j < rows; j++) {
            if (mask != null) {
                long neuron = rowMap != null ? rowMap.getAtIndex(I, j) : j;
                Objects.checkIndex(neuron, mask.byteSize());
                if (mask.get(ValueLayout.JAVA_BYTE, neuron) == 0) continue; // o[j] stays 0
            }
            GgmlRows.dequantize(w.type(), W, j * rb, row, 0, n);
            float acc = 0f;
            for (int i = 0; i < n; i++) acc += row[i] * x[i];
            o[j] = relu ? Math.max(acc, 0f) : acc;
        }
        write(O, o);
    }

    @Override
    public void sparseAxpy(GpuStream s, GpuMatrix w, GpuBuffer h, GpuBuffer y, boolean accumulate) {
        Checks.floats(h, w.rows(), "h");
        Checks.floats(y, w.cols(), "y");
        MemorySegment W = seg(w.data()), H = seg(h), Y = seg(y);
        submit(s, () -> {
            int rows = w.rows(), dim = w.cols();
            long rb = w.rowBytes();
            float[] hv = read(H, rows), acc = new float[dim], row = new float[dim];
            for (int r = 0; r < rows; r++) {
                float a = hv[r];
                if (a == 0f) continue;
                GgmlRows.dequantize(w.type(), W, r * rb, row, 0, dim);
                for (int c = 0; c < dim; c++) acc[c] += a * row[c];
            }
            if (accumulate) {
                float[] yv = read(Y, dim);
                for (int c = 0; c < dim; c++) acc[c] = yv[c] + acc[c];
            }
            write(Y, acc);
        });
    }

    @Override
    public void thresholdMask(GpuStream s, GpuBuffer logits, int n, float threshold, GpuBuffer mask, GpuBuffer count) {
        Checks.floats(logits, n, "logits");
        Checks.bytes(mask, n, "mask", n + " bytes");
        if (count != null) Checks.ints(count, 1, "count");
        MemorySegment L = seg(logits), M = seg(mask), C = seg(count);
        submit(s, () -> {
            int active = 0;
            for (int i = 0; i < n; i++) {
                boolean a = L.getAtIndex(F, i) >= threshold;
                M.set(ValueLayout.JAVA_BYTE, i, (byte) (a ? 1 : 0));
                if (a) active++;
            }
            if (C != null) C.set(I, 0, C.get(I, 0) + active);
        });
    }

    @Override
    public void activation(GpuStream s, GpuActivation act, GpuBuffer gate, GpuBuffer up, GpuBuffer out, int n) {
        Checks.activation(act, gate, up, out, n);
        MemorySegment G = seg(gate), U = act == GpuActivation.RELU || up == null ? null : seg(up), O = seg(out);
        submit(s, () -> {
            float[] g = read(G, n), r = new float[n];
            if (act == GpuActivation.GELU || act == GpuActivation.GELU_TANH) {
                r = g.clone();
                if (act == GpuActivation.GELU) org.powerinfer4j.engine.kernels.FloatKernels.geluErf(r, 0, n);
                else org.powerinfer4j.engine.kernels.FloatKernels.gelu(r, 0, n);
                if (U != null) for (int i = 0; i < n; i++) r[i] *= U.getAtIndex(F, i);
            } else {
                for (int i = 0; i < n; i++) {
                    float u = U == null ? 1f : U.getAtIndex(F, i);
                    r[i] = switch (act) {
                        case SWIGLU -> g[i] / (1.0f + (float) Math.exp(-g[i])) * u;
                        case REGLU -> g[i] > 0f ? g[i] * u : 0f;
                        case DRELU -> g[i] > 0f && u > 0f ? g[i] * u : 0f;
                        case RELU -> Math.max(g[i], 0f);
                        case SWIGLU_OAI -> {
                            float gc = Math.min(g[i], 7f), uc = Math.max(-7f, Math.min(u, 7f));
                            yield gc / (1.0f + (float) Math.exp(-1.702f * gc)) * (uc + 1f);
                        }
                        case GELU, GELU_TANH -> throw new AssertionError("handled above");
                    };
                }
            }
            MemorySegment.copy(r, 0, O, F, 0, n);
        });
    }

    @Override
    public void gather(GpuStream s, GpuBuffer src, GpuBuffer idx, GpuBuffer dst, int n) {
        Checks.ints(idx, n, "idx");
        Checks.floats(dst, n, "dst");
        MemorySegment S = seg(src), X = seg(idx), D = seg(dst);
        submit(s, () -> {
            for (int i = 0; i < n; i++) D.setAtIndex(F, i, S.getAtIndex(F, X.getAtIndex(I, i)));
        });
    }

    @Override
    public void scatterAdd(GpuStream s, GpuBuffer src, GpuBuffer idx, GpuBuffer dst, int n) {
        Checks.ints(idx, n, "idx");
        Checks.floats(src, n, "src");
        MemorySegment S = seg(src), X = seg(idx), D = seg(dst);
        submit(s, () -> {
            for (int i = 0; i < n; i++) {
                long j = X.getAtIndex(I, i);
                D.setAtIndex(F, j, D.getAtIndex(F, j) + S.getAtIndex(F, i));
            }
        });
    }

    @Override
    public void rmsNorm(GpuStream s, GpuBuffer x, GpuBuffer weight, GpuBuffer out, int n, int rows, float eps) {
        Checks.floats(x, (long) n * rows, "x");
        Checks.floats(weight, n, "weight");
        Checks.floats(out, (long) n * rows, "out");
        MemorySegment X = seg(x), W = seg(weight), O = seg(out);
        submit(s, () -> {
            float[] w = read(W, n);
            for (int r = 0; r < rows; r++) {
                float[] v = new float[n];
                MemorySegment.copy(X, F, 4L * r * n, v, 0, n);
                double ss = 0;
                for (float f : v) ss += (double) (f * f);
                float scale = 1.0f / (float) Math.sqrt((float) (ss / n) + eps);
                for (int i = 0; i < n; i++) v[i] = v[i] * scale * w[i];
                MemorySegment.copy(v, 0, O, F, 4L * r * n, n);
            }
        });
    }

    @Override
    public void layerNorm(GpuStream s, GpuBuffer x, GpuBuffer weight, GpuBuffer bias, GpuBuffer out, int n, int rows, float eps) {
        Checks.floats(x, (long) n * rows, "x");
        Checks.floats(weight, n, "weight");
        if (bias != null) Checks.floats(bias, n, "bias");
        Checks.floats(out, (long) n * rows, "out");
        MemorySegment X = seg(x), W = seg(weight), B = bias == null ? null : seg(bias), O = seg(out);
        submit(s, () -> {
            float[] w = read(W, n), b = B == null ? null : read(B, n);
            for (int r = 0; r < rows; r++) {
                float[] v = new float[n];
                MemorySegment.copy(X, F, 4L * r * n, v, 0, n);
                double sum = 0, var = 0;
                for (float f : v) sum += f;
                float mean = (float) (sum / n);
                for (float f : v) var += (double) ((f - mean) * (f - mean));
                float scale = 1.0f / (float) Math.sqrt((float) (var / n) + eps);
                for (int i = 0; i < n; i++) v[i] = (v[i] - mean) * scale * w[i] + (b == null ? 0f : b[i]);
                MemorySegment.copy(v, 0, O, F, 4L * r * n, n);
            }
        });
    }

    @Override
    public void rope(GpuStream s, GpuBuffer v, int tokens, int tokenStride, int heads, int headDim, int nRot, int pos0, GpuBuffer invFreq,
                     float mscale, RopeType type) {
        Checks.rope(heads, headDim, nRot, tokenStride, tokens);
        Checks.floats(v, tokens == 0 ? 0 : (long) (tokens - 1) * tokenStride + (long) heads * headDim, "v");
        Checks.floats(invFreq, nRot / 2, "invFreq");
        MemorySegment V = seg(v), IF = seg(invFreq);
        submit(s, () -> {
            int half = nRot / 2;
            for (int t = 0; t < tokens; t++)
                for (int h = 0; h < heads; h++) {
                    long base = (long) t * tokenStride + (long) h * headDim;
                    for (int i = 0; i < half; i++) {
                        float theta = (pos0 + t) * IF.getAtIndex(F, i);
                        float cos = (float) Math.cos(theta) * mscale, sin = (float) Math.sin(theta) * mscale;
                        long i0 = base + (type == RopeType.NORMAL ? 2L * i : i), i1 = type == RopeType.NORMAL ? i0 + 1 : i0 + half;
                        float x0 = V.getAtIndex(F, i0), x1 = V.getAtIndex(F, i1);
                        V.setAtIndex(F, i0, x0 * cos - x1 * sin);
                        V.setAtIndex(F, i1, x0 * sin + x1 * cos);
                    }
                }
        });
    }

    @Override
    public void attention(GpuStream s, GpuBuffer q, GpuBuffer k, GpuBuffer v, GpuBuffer out, int heads, int kvHeads, int headDim, int kvStride,
                          int nKv, float scale, float softcap, GpuBuffer sinks, GGMLType kvType) {
        Checks.attention(heads, kvHeads, headDim, kvStride, nKv);
        if (sinks != null) Checks.floats(sinks, heads, "sinks");
        MemorySegment SK = sinks == null ? null : seg(sinks);
        Checks.floats(q, (long) heads * headDim, "q");
        Checks.floats(out, (long) heads * headDim, "out");
        long cache = nKv == 0 ? 0 : (long) (nKv - 1) * kvStride + (long) kvHeads * headDim;
        Checks.kvCache(k, cache, kvType, "k cache");
        Checks.kvCache(v, cache, kvType, "v cache");
        boolean half = kvType == GGMLType.F16;
        MemorySegment Q = seg(q), K = seg(k), V = seg(v), O = seg(out);
        submit(s, () -> {
            int group = heads / kvHeads;
            float[] sc = new float[nKv];
            for (int h = 0; h < heads; h++) {
                long kvOff = (long) (h / group) * headDim;
                float[] qh = new float[headDim], o = new float[headDim];
                MemorySegment.copy(Q, F, 4L * h * headDim, qh, 0, headDim);
                float max = Float.NEGATIVE_INFINITY;
                for (int t = 0; t < nKv; t++) {
                    float d = 0f;
                    for (int i = 0; i < headDim; i++) d += qh[i] * kv(K, t * (long) kvStride + kvOff + i, half);
                    sc[t] = d * scale;
                    if (softcap > 0f) sc[t] = softcap * (float) Math.tanh(sc[t] / softcap);
                    max = Math.max(max, sc[t]);
                }
                float sink = SK == null ? Float.NEGATIVE_INFINITY : SK.getAtIndex(F, h);
                max = Math.max(max, sink);
                double sum = SK == null ? 0 : Math.exp(sink - max);
                for (int t = 0; t < nKv; t++) {
                    sc[t] = (float) Math.exp(sc[t] - max);
                    sum += sc[t];
                }
                float inv = (float) (1.0 / sum);
                for (int t = 0; t < nKv; t++) {
                    float p = sc[t] * inv;
                    for (int i = 0; i < headDim; i++) o[i] += p * kv(V, t * (long) kvStride + kvOff + i, half);
                }
                MemorySegment.copy(o, 0, O, F, 4L * h * headDim, headDim);
            }
        });
    }

    /** Element i of a KV cache: a float, or a half widened to float. */
    private static float kv(MemorySegment m, long i, boolean half) {
        return half ? Float.float16ToFloat(m.getAtIndex(H, i)) : m.getAtIndex(F, i);
    }

    @Override
    public void toHalf(GpuStream s, GpuBuffer src, GpuBuffer dst, int n) {
        Checks.floats(src, n, "src");
        Checks.bytes(dst, 2L * n, "dst", n + " halves");
        MemorySegment S = seg(src), D = seg(dst);
        submit(s, () -> {
            for (int i = 0; i < n; i++) D.setAtIndex(H, i, Float.floatToFloat16(S.getAtIndex(F, i)));   // nearest, ties to even: __float2half_rn
        });
    }

    @Override
    public void add(GpuStream s, GpuBuffer y, GpuBuffer x, int n) {
        Checks.floats(y, n, "y");
        Checks.floats(x, n, "x");
        MemorySegment Y = seg(y), X = seg(x);
        submit(s, () -> {
            for (int i = 0; i < n; i++) Y.setAtIndex(F, i, Y.getAtIndex(F, i) + X.getAtIndex(F, i));
        });
    }

    @Override
    public void maskedAdd(GpuStream s, GpuBuffer y, GpuBuffer x, GpuBuffer mask, GpuBuffer rowMap, int n) {
        Checks.floats(y, n, "y");
        Checks.floats(x, n, "x");
        if (rowMap != null) Checks.ints(rowMap, n, "rowMap");
        MemorySegment Y = seg(y), X = seg(x), M = seg(mask), R = rowMap == null ? null : seg(rowMap);
        submit(s, () -> {
            for (int j = 0; j < n; j++) {
                int neuron = R == null ? j : R.getAtIndex(java.lang.foreign.ValueLayout.JAVA_INT, j);
                if (M.get(java.lang.foreign.ValueLayout.JAVA_BYTE, neuron) != 0) Y.setAtIndex(F, j, Y.getAtIndex(F, j) + X.getAtIndex(F, j));
            }
        });
    }

    @Override
    public void maskRows(GpuStream s, GpuBuffer h, GpuBuffer mask, GpuBuffer rowMap, int k, int tokens, int ff) {
        Checks.floats(h, (long) k * tokens, "h");
        Checks.bytes(mask, (long) tokens * ff, "mask", "one byte per neuron and token");
        if (rowMap != null) Checks.ints(rowMap, k, "rowMap");
        MemorySegment H = seg(h), M = seg(mask), R = rowMap == null ? null : seg(rowMap);
        submit(s, () -> {
            for (int t = 0; t < tokens; t++)
                for (int j = 0; j < k; j++) {
                    int neuron = R == null ? j : R.getAtIndex(java.lang.foreign.ValueLayout.JAVA_INT, j);
                    if (M.get(java.lang.foreign.ValueLayout.JAVA_BYTE, (long) t * ff + neuron) == 0) H.setAtIndex(F, (long) t * k + j, 0f);
                }
        });
    }

    @Override
    public void scaleAdd(GpuStream s, GpuBuffer y, GpuBuffer x, float alpha, int n) {
        Checks.floats(y, n, "y");
        Checks.floats(x, n, "x");
        MemorySegment Y = seg(y), X = seg(x);
        submit(s, () -> {
            for (int i = 0; i < n; i++) Y.setAtIndex(F, i, Math.fma(alpha, X.getAtIndex(F, i), Y.getAtIndex(F, i)));
        });
    }

    /** Stops the stream threads (queued work is finished first). */
    @Override
    public void close() {
        for (SimStream s : streams) s.close();
    }
}
