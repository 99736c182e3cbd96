package org.powerinfer4j.engine.model;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.List;
import org.powerinfer4j.engine.kernels.FixedMath;
import org.powerinfer4j.engine.kernels.FloatKernels;
import org.powerinfer4j.engine.kernels.Kernels;
import org.powerinfer4j.engine.kernels.MatrixOps;
import org.powerinfer4j.engine.kernels.WorkerPool;
import org.powerinfer4j.engine.model.LayerGraph.Op;
import org.powerinfer4j.engine.tensor.Tensor;

/**
 * The CPU executor of the {@link ModelGraph}: embedding, then each layer's ops in order, then the final norm and
 * head. A call processes a chunk of tokens at once (prefill) with matrix–matrix products, or one token (decode)
 * with matrix–vector products. Arithmetic follows ggml's choices where they affect results (RMSNorm sum in
 * double, RoPE angles {@code pos · base^(-2i/n_rot)}, softmax with max subtraction).
 */
public final class Transformer {
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private final ModelConfig c;
    private final ModelWeights w;
    private final FeedForward ffn;
    private final ModelGraph graph;
    private volatile FfnObserver ffnObserver;
    private volatile LayerOffload offload;

    public Transformer(ModelConfig c, ModelWeights w, FeedForward ffn) {
        this.c = c;
        this.w = w;
        this.ffn = ffn;
        this.graph = GraphBuilder.build(c, w);
    }

    public ModelConfig config() {
        return c;
    }

    public ModelWeights weights() {
        return w;
    }

    public ModelGraph graph() {
        return graph;
    }

    public FeedForward feedForward() {
        return ffn;
    }

    /** Runs the last layers (and maybe the output head) through {@code o}; null = everything on the CPU. */
    public void setLayerOffload(LayerOffload o) {
        this.offload = o;
    }

    /** Installs (or with null removes) an observer of FFN activations (of dense layers, and of MoE layers' routed experts). */
    public void setFfnObserver(FfnObserver observer) {
        this.ffnObserver = observer;
        if (ffn instanceof MoeFeedForward moe) moe.setObserver(observer);
    }

    /**
     * Runs {@code n} tokens at positions {@code startPos..startPos+n-1} through the model, filling the KV cache.
     * Afterwards {@code s.logits()} holds the logits after the last token (computed only if {@code wantLogits}).
     */
    public void forward(WorkerPool pool, InferenceState s, int[] tokens, int off, int n, int startPos, boolean wantLogits) {
        if (startPos < 0 || n < 0 || (long) startPos + n > s.kv.contextLength())
            throw new ModelException("context is full: " + ((long) startPos + n) + " tokens do not fit in the context of " + s.kv.contextLength());
        s.kv.reserve(startPos, startPos + n);   // a paged cache's blocks (the caller has usually reserved them)
        for (int done = 0; done < n; ) {
            int b = Math.min(s.maxBatch, n - done);
            forwardChunk(pool, s, tokens, off + done, b, startPos + done);
            done += b;
            if (done == n && wantLogits) logits(pool, s, b - 1);
        }
    }

    /**
     * As {@link #forward}, with the logits of every token: row {@code i} of {@code allLogits} ({@code n × vocab}) holds
     * the logits after token {@code off + i} (speculative decoding's verification); {@code s.logits()} gets the last row.
     * With {@code exact} on a model whose products all have a per-token form ({@link #supportsSequenceBatches}) every
     * product runs per token, so each row is bit-identical to a decode step of that token alone; otherwise the chunk
     * runs the prefill kernels (matrix–matrix), whose float rounding differs slightly from decode's.
     */
    public void forwardAllLogits(WorkerPool pool, InferenceState s, int[] tokens, int off, int n, int startPos, float[] allLogits, boolean exact) {
        if (startPos < 0 || n < 1 || (long) startPos + n > s.kv.contextLength())
            throw new ModelException("context is full: " + ((long) startPos + n) + " tokens do not fit in the context of " + s.kv.contextLength());
        s.kv.reserve(startPos, startPos + n);
        final int dim = c.dim(), vocab = c.vocabSize();
        if (allLogits.length < n * vocab) throw new IllegalArgumentException("logits buffer holds fewer than " + n + " rows");
        boolean perToken = exact && offload == null && ffn.supportsSequenceBatches();
        for (int done = 0; done < n; ) {
            int b = Math.min(s.maxBatch, n - done);
            s.perTokenChunk = perToken;
            try {
                forwardChunk(pool, s, tokens, off + done, b, startPos + done);
            } finally {
                s.perTokenChunk = false;
            }
            // final norm and head for every row (the device leaves s.x as the CPU would, so the head runs here)
            for (int r = 0; r < b; r++) norm(graph.outputNorm(), s.xb, r * dim, s.x, r * dim);
            float[] out = done == 0 ? allLogits : new float[b * vocab];
            if (perToken) MatrixOps.matVecBatch(pool, graph.output(), s.xb, b, out);
            else MatrixOps.matMul(pool, graph.output(), s.xb, b, out);
            if (out != allLogits) System.arraycopy(out, 0, allLogits, done * vocab, b * vocab);
            done += b;
        }
        float cap = graph.finalSoftcap();
        if (cap > 0f) for (int i = 0; i < n * vocab; i++) allLogits[i] = cap * (float) Math.tanh(allLogits[i] / cap);
        System.arraycopy(allLogits, (n - 1) * vocab, s.logits, 0, vocab);
    }

    /**
     * Whether {@link #forwardSequences} can run this model: an FFN that takes sequence batches (dense, sparse), and
     * CPU layers or device layers that do ({@link LayerOffload#supportsSequenceBatches}: {@code -ngl}'s).
     */
    public boolean supportsSequenceBatches() {
        LayerOffload o = offload;
        return (o == null || o.supportsSequenceBatches()) && ffn.supportsSequenceBatches();
    }

    /**
     * One decode step of {@code n} sequences in one pass over the weights: token {@code tokens[i]} at position
     * {@code positions[i]} of {@code states[i]}'s KV cache; afterwards {@code states[i].logits()} holds its logits.
     * Attention runs per token over its own sequence's cache. With a per-token scratch
     * ({@link InferenceState#perTokenProducts}) every product runs per token ({@link MatrixOps#matVecBatch}), so
     * each sequence's logits are bit-identical to a {@link #forward} of that token alone; otherwise the products
     * (output head included) are one {@link MatrixOps#matMul} for all sequences, each weight panel dequantized once,
     * and the logits differ from the token alone by rounding only. {@code scratch} comes from
     * {@link InferenceState#forSequenceBatch}.
     */
    public void forwardSequences(WorkerPool pool, InferenceState scratch, InferenceState[] states, int[] tokens, int[] positions, int n) {
        forwardSequences(pool, scratch, states, tokens, positions, n, null);
    }

    /**
     * {@link #forwardSequences(WorkerPool, InferenceState, InferenceState[], int[], int[], int)} whose rows may also
     * hold prompt chunks: consecutive rows of one sequence at consecutive positions (the pass stores every row's
     * keys and values before any attends, so a chunk's tokens see each other causally, as in a chunk alone). Only
     * the rows in {@code logitRows} (increasing; null: all) go through the output head, each into its state's
     * logits. With prompt rows the products run as one matMul, repacked matrices included (a chunk's rows are
     * what matMul's tiles are for); logits then differ from the chunk alone by rounding only.
     */
    public void forwardSequences(WorkerPool pool, InferenceState scratch, InferenceState[] states, int[] tokens, int[] positions, int n,
                                 int[] logitRows) {
        if (!scratch.sequenceBatch()) throw new IllegalArgumentException("not a sequence-batch scratch state");
        if (!supportsSequenceBatches()) throw new ModelException("this model's layers cannot run sequence batches");
        if (n < 1 || n > scratch.maxBatch) throw new IllegalArgumentException(n + " sequences do not fit a batch of " + scratch.maxBatch);
        for (int i = 0; i < n; i++) {
            KVCache kv = states[i].kv;
            if (positions[i] < 0 || positions[i] >= kv.contextLength() || kv.contextLength() > scratch.scores[0].length)
                throw new ModelException("context is full: " + (positions[i] + 1L) + " tokens do not fit in the context of " + kv.contextLength());
            kv.reserve(positions[i], positions[i] + 1);
            scratch.tokenKv[i] = kv;
            scratch.tokenPos[i] = positions[i];
            scratch.tokenStates[i] = states[i];
        }
        scratch.promptRows = logitRows != null;
        scratch.sequenceRows = n;
        try {
            forwardChunk(pool, scratch, tokens, 0, n, 0);
            final int dim = c.dim(), vocab = c.vocabSize(), m = logitRows == null ? n : logitRows.length;
            // the wanted rows, normed into rows 0..m of xb (row j from row logitRows[j] >= j of x)
            for (int j = 0; j < m; j++) norm(graph.outputNorm(), scratch.xb, j * dim, scratch.x, (logitRows == null ? j : logitRows[j]) * dim);
            if (m > 0) project(pool, graph.output(), scratch.xb, m, scratch.logits, scratch.perTokenFor(graph.output()));
            float cap = graph.finalSoftcap();
            for (int j = 0; j < m; j++) {
                float[] out = states[logitRows == null ? j : logitRows[j]].logits;
                System.arraycopy(scratch.logits, j * vocab, out, 0, vocab);
                if (cap > 0f) for (int i = 0; i < vocab; i++) out[i] = cap * (float) Math.tanh(out[i] / cap);
            }
        } finally {
            java.util.Arrays.fill(scratch.tokenKv, null);   // the caches are the sessions', not the scratch's to keep alive
            java.util.Arrays.fill(scratch.tokenStates, null);
            scratch.promptRows = false;
            scratch.sequenceRows = 0;
        }
    }

    private void forwardChunk(WorkerPool pool, InferenceState s, int[] tokens, int off, int batch, int startPos) {
        embed(s, tokens, off, batch, startPos);
        for (int r = 0; r < graph.ropes().length; r++) {   // one cos/sin table per position, reused by every head of every layer
            int size = batch * (graph.ropes()[r].dims() / 2);
            graph.ropes()[r].fill(s.ropeTable(s.ropeCos, r, size), s.ropeTable(s.ropeSin, r, size), s.tokenPos, startPos, batch);
        }
        LayerOffload device = offload;
        int cpuLayers = device == null ? c.layers() : device.firstLayer();
        for (int l = 0; l < c.layers(); l++) {
            // the device runs the rest; when it cannot, the CPU carries on from the same residuals
            if (l == cpuLayers && device.forward(s, batch, startPos)) break;
            LayerGraph g = graph.layers()[l];
            int from = 0;
            // the attention block on the device when it holds this layer's (hybrid mode), else here
            if (device != null && g.attentionEnd() >= 0 && device.attention(s, l, batch, startPos)) from = g.attentionEnd();
            for (int i = from; i < g.ops().size(); i++) {
                int end = sharedInputEnd(g.ops(), i, s, batch);
                if (end > i + 1) {
                    projectShared(g.ops(), i, end, pool, s, batch);
                    i = end - 1;
                } else {
                    run(g.ops().get(i), pool, s, l, batch, startPos);
                }
            }
        }
    }

    /**
     * End of the run of products from op i on that read one buffer and write others (q, k, v): one pass of
     * {@link MatrixOps#matMulShared} for a prompt chunk. i + 1 when there is none to share with.
     */
    private static int sharedInputEnd(List<Op> ops, int i, InferenceState s, int batch) {
        if (batch == 1 || !(ops.get(i) instanceof LayerGraph.Linear first) || s.perTokenFor(first.weight())) return i + 1;
        int end = i + 1;
        while (end < ops.size() && ops.get(end) instanceof LayerGraph.Linear li && li.in() == first.in() && !s.perTokenFor(li.weight())) end++;
        for (int a = i; a < end; a++) {
            LayerGraph.Buf out = ((LayerGraph.Linear) ops.get(a)).out();
            if (out == first.in()) return i + 1;
            for (int b = i; b < a; b++) if (((LayerGraph.Linear) ops.get(b)).out() == out) return i + 1;
        }
        return end;
    }

    private static void projectShared(List<Op> ops, int from, int to, WorkerPool pool, InferenceState s, int batch) {
        Tensor[] ws = new Tensor[to - from];
        float[][] outs = new float[to - from][];
        for (int i = from; i < to; i++) {
            LayerGraph.Linear li = (LayerGraph.Linear) ops.get(i);
            ws[i - from] = li.weight();
            outs[i - from] = s.buffer(li.out());
        }
        MatrixOps.matMulShared(pool, ws, s.buffer(((LayerGraph.Linear) ops.get(from)).in()), batch, outs);
        for (int i = from; i < to; i++) {
            LayerGraph.Linear li = (LayerGraph.Linear) ops.get(i);
            if (li.bias() != null) DenseFeedForward.addBias(outs[i - from], li.bias(), li.weight().rows(), batch);
        }
    }

    private void embed(InferenceState s, int[] tokens, int off, int batch, int startPos) {
        final int dim = c.dim();
        Tensor emb = w.tokenEmbd();
        var embK = Kernels.forType(emb.type());
        for (int b = 0; b < batch; b++) {
            int tok = tokens[off + b];
            if (tok < 0 || tok >= c.vocabSize()) throw new ModelException("token id " + tok + " is outside the vocabulary (0.." + (c.vocabSize() - 1) + ")");
            embK.dequantize(emb.data(), emb.rowOffset(tok), s.x, b * dim, dim);
        }
        float scale = graph.embeddingScale();
        if (scale != 1f) for (int i = 0; i < batch * dim; i++) s.x[i] *= scale;
        Tensor pe = graph.positionEmbd();
        if (pe != null) {
            var k = Kernels.forType(pe.type());
            for (int b = 0; b < batch; b++) {   // the position's row through xb, which is free until the first norm
                long p = (long) s.pos(b, startPos) + graph.positionOffset();
                if (p >= pe.rows()) throw new ModelException("position " + s.pos(b, startPos) + " is beyond the model's " + (pe.rows() - graph.positionOffset()) + " learned positions");
                k.dequantize(pe.data(), pe.rowOffset(p), s.xb, 0, dim);
                for (int i = 0; i < dim; i++) s.x[b * dim + i] += s.xb[i];
            }
        }
    }

    private void run(Op op, WorkerPool pool, InferenceState s, int layer, int batch, int startPos) {
        switch (op) {
            case LayerGraph.Norm n -> {
                float[] in = s.buffer(n.in()), out = s.buffer(n.out());
                int d = n.weight().rowLength();
                for (int b = 0; b < batch; b++) norm(n, out, b * d, in, b * d);
            }
            case LayerGraph.Linear li -> {
                float[] out = s.buffer(li.out());
                project(pool, li.weight(), s.buffer(li.in()), batch, out, s.perTokenFor(li.weight()));
                if (li.bias() != null) DenseFeedForward.addBias(out, li.bias(), li.weight().rows(), batch);
            }
            case LayerGraph.HeadNorm h -> {
                float[] buf = s.buffer(h.buf());
                int hd = h.weight().rowLength();
                for (int i = 0; i < batch * h.heads(); i++) rmsNorm(buf, i * hd, buf, i * hd, h.weight(), hd, h.eps());
            }
            case LayerGraph.Rope r -> {
                float[] buf = s.buffer(r.buf());
                RopeTables t = graph.ropes()[r.rope()];
                int half = t.dims() / 2, hd = c.headDim(), width = r.heads() * hd;
                float[] cos = s.ropeCos[r.rope()], sin = s.ropeSin[r.rope()];
                for (int b = 0; b < batch; b++)
                    for (int h = 0; h < r.heads(); h++) t.rotate(buf, b * width + h * hd, cos, sin, b * half);
            }
            case LayerGraph.Attention a -> {
                for (int b = 0; b < batch; b++) s.kvOf(b).store(layer, s.pos(b, startPos), s.k, b * c.kvDim(), s.v, b * c.kvDim());
                attention(pool, s, layer, batch, startPos, a);
            }
            case LayerGraph.Ffn f -> {
                LayerWeights lw = w.layers()[layer];
                ffn.compute(pool, layer, lw, s, batch); // reads s.xb (normed) and s.x (residual), writes s.xb2
                FfnObserver obs = ffnObserver;
                if (obs != null && lw.ffnUp() != null) obs.onFfn(layer, batch, s.x, c.dim(), s.hb, lw.ffnUp().rows());
            }
            case LayerGraph.Add a -> {
                float[] dst = s.buffer(a.dst()), src = s.buffer(a.src());
                for (int i = 0; i < batch * c.dim(); i++) dst[i] += src[i];
            }
        }
    }

    /** Final norm and output head for token {@code b} of the last chunk. */
    private void logits(WorkerPool pool, InferenceState s, int b) {
        LayerOffload off = offload;
        if (off != null && off.logits(s)) return;
        norm(graph.outputNorm(), s.xb, 0, s.x, b * c.dim());
        MatrixOps.matVec(pool, graph.output(), s.xb, 0, s.logits, 0);
        float cap = graph.finalSoftcap();
        if (cap > 0f)
            for (int i = 0; i < s.logits.length; i++) s.logits[i] = cap * (float) Math.tanh(s.logits[i] / cap);
    }

    /** out[b][*] = W · in[b][*] for each token of the chunk: matrix–vector for one token, matrix–matrix for more. */
    static void project(WorkerPool pool, Tensor wt, float[] in, int batch, float[] out) {
        project(pool, wt, in, batch, out, false);
    }

    /** As above; with {@code perToken} (tokens of different sequences) one fused matrix–vector product per token. */
    static void project(WorkerPool pool, Tensor wt, float[] in, int batch, float[] out, boolean perToken) {
        if (batch == 1) MatrixOps.matVec(pool, wt, in, 0, out, 0);
        else if (perToken) MatrixOps.matVecBatch(pool, wt, in, batch, out);
        else MatrixOps.matMul(pool, wt, in, batch, out);
    }

    /** Query tokens per attention work unit: a prompt chunk's consecutive tokens of one head share key loads. */
    private static final int QUERY_BLOCK = 4;

    private void attention(WorkerPool pool, InferenceState s, int layer, int batch, int startPos, LayerGraph.Attention a) {
        final int hd = c.headDim(), group = c.heads() / c.kvHeads();
        final int blocks = (batch + QUERY_BLOCK - 1) / QUERY_BLOCK, ctx = s.scores[0].length / QUERY_BLOCK;
        pool.forRange(blocks * c.heads(), (from, to, thread) -> {
            float[] sc = s.scores[thread];   // QUERY_BLOCK rows of ctx scores
            for (int unit = from; unit < to; unit++) {
                // head-major: each thread's share holds every token of its heads, so the causal mask's growing
                // cost (token b reads startPos + b + 1 positions) is split evenly, not later tokens to the last thread
                int h = unit / blocks, b0 = unit % blocks * QUERY_BLOCK, b1 = Math.min(batch, b0 + QUERY_BLOCK), kvh = h / group;
                KVCache kv = s.kvOf(b0);
                int shared = 0;   // positions [0, shared) scored for the whole block at once
                // four queries of one sequence at consecutive positions (a prompt chunk), F16 cache without Inf/NaN,
                // no window: each key quad is converted once for the four (the same sums as one query at a time)
                if (b1 - b0 == QUERY_BLOCK && !s.sequenceBatch() && a.window() <= 0 && kv.type() == org.powerinfer4j.engine.tensor.GGMLType.F16
                        && !kv.nonFinite()) {
                    int pos0 = s.pos(b0, startPos);
                    long stride = kv.rowStride(), headBytes = (long) kv.elementBytes() * hd;
                    // quads start at multiples of 4, so each lies within one block of a paged cache
                    for (; shared + 3 <= pos0; shared += 4)
                        FloatKernels.dotF16x4q4(s.q, b0 * c.qDim() + h * hd, c.qDim(), kv.keys(), kv.offset(layer, shared) + kvh * headBytes,
                                stride, hd, sc, shared, ctx);
                }
                for (int b = b0; b < b1; b++) attendQuery(s, layer, b, h, startPos, a, sc, (b - b0) * ctx, shared);
            }
        });
    }

    /**
     * One query token's attention for head h: scores (those of positions below {@code scored} are in sc already),
     * softmax, values into s.att. sc[so + t] holds position t's score.
     */
    private void attendQuery(InferenceState s, int layer, int b, int h, int startPos, LayerGraph.Attention a, float[] sc, int so, int scored) {
        final int hd = c.headDim(), kvh = h / (c.heads() / c.kvHeads());
        final float scale = a.scale(), cap = a.softcap();
        final KVCache kv = s.kvOf(b);   // the token's own sequence's cache (one cache unless a sequence batch)
        final MemorySegment keys = kv.keys(), values = kv.values();
        final boolean f16 = kv.type() == org.powerinfer4j.engine.tensor.GGMLType.F16;
        final long headBytes = (long) kv.elementBytes() * hd;
        int pos = s.pos(b, startPos);
        int lo = a.window() > 0 ? Math.max(0, pos - a.window() + 1) : 0;   // a window of W sees itself and W-1 before
        int qOff = b * c.qDim() + h * hd;
        float max = Float.NEGATIVE_INFINITY;
        int t = Math.max(lo, scored);
        // F16 cache without Inf/NaN: four positions per call (one lane-sum tree, y loaded once, lean conversion),
        // run by run (a paged cache's block; a contiguous cache is one run)
        boolean four = f16 && !kv.nonFinite();
        long stride = kv.rowStride();
        while (t <= pos) {
            int end = Math.min(pos + 1, kv.runEnd(t));
            long ko = kv.offset(layer, t) + kvh * headBytes;
            if (four) for (; t + 4 <= end; t += 4, ko += 4 * stride) FloatKernels.dotF16x4(s.q, qOff, keys, ko, stride, hd, sc, so + t);
            for (; t < end; t++, ko += stride)
                sc[so + t] = f16 ? FloatKernels.dotF16(s.q, qOff, keys, ko, hd) : FloatKernels.dot(s.q, qOff, keys, ko, hd);
        }
        if (cap > 0f) {
            for (t = lo; t <= pos; t++) {
                float d = cap * (float) Math.tanh(sc[so + t] * scale / cap);
                sc[so + t] = d;
                if (d > max) max = d;
            }
        } else {
            max = FloatKernels.scaleMax(sc, so + lo, so + pos + 1, scale);
        }
        MemorySegment sinks = a.sinks() == null ? null : a.sinks().data();
        float sink = sinks == null ? Float.NEGATIVE_INFINITY : sinks.getAtIndex(F32, h);
        if (sink > max) max = sink;
        // softmax numerators by FixedMath.exp, vectorized (Math.exp one score at a time was an eighth of a
        // 512-token prefill); the sink takes its share of the weight and no value
        float sum = (sinks == null ? 0f : FixedMath.exp(sink - max)) + FloatKernels.expSum(sc, so + lo, so + pos + 1, max);
        float inv = 1f / sum;
        java.util.Arrays.fill(s.att, qOff, qOff + hd, 0f);
        t = lo;
        while (t <= pos) {
            int end = Math.min(pos + 1, kv.runEnd(t));
            long vo = kv.offset(layer, t) + kvh * headBytes;
            if (four)
                for (; t + 4 <= end; t += 4, vo += 4 * stride)
                    FloatKernels.axpyF16x4(sc[so + t] * inv, sc[so + t + 1] * inv, sc[so + t + 2] * inv, sc[so + t + 3] * inv, values,
                            vo, stride, s.att, qOff, hd);
            for (; t < end; t++, vo += stride) {
                if (f16) FloatKernels.axpyF16(sc[so + t] * inv, values, vo, s.att, qOff, hd);
                else FloatKernels.axpy(sc[so + t] * inv, values, vo, s.att, qOff, hd);
            }
        }
    }

    private void norm(LayerGraph.Norm n, float[] out, int outOff, float[] x, int xOff) {
        int d = n.weight().rowLength();
        if (n.layerNorm()) layerNorm(out, outOff, x, xOff, n.weight(), n.bias(), d, n.eps());
        else {
            rmsNorm(out, outOff, x, xOff, n.weight(), d, n.eps());
            if (n.bias() != null) for (int i = 0; i < d; i++) out[outOff + i] += n.bias().data().getAtIndex(F32, i);
        }
    }

    /** out = x / sqrt(mean(x²) + eps) ⊙ weight; the sum of squares is accumulated in double as ggml does. */
    static void rmsNorm(float[] out, int outOff, float[] x, int xOff, Tensor weight, int n, float eps) {
        double ss = 0;
        for (int i = 0; i < n; i++) ss += (double) (x[xOff + i] * x[xOff + i]);
        float mean = (float) (ss / n);
        float scale = 1.0f / (float) Math.sqrt(mean + eps);
        MemorySegment wd = weight.data();
        for (int i = 0; i < n; i++) out[outOff + i] = x[xOff + i] * scale * wd.getAtIndex(F32, i);
    }

    /** out = (x − mean) / sqrt(var + eps) ⊙ weight + bias, mean and variance accumulated in double (ggml_norm). */
    static void layerNorm(float[] out, int outOff, float[] x, int xOff, Tensor weight, Tensor bias, int n, float eps) {
        double sum = 0;
        for (int i = 0; i < n; i++) sum += x[xOff + i];
        float mean = (float) (sum / n);
        double var = 0;
        for (int i = 0; i < n; i++) {
            float d = x[xOff + i] - mean;
            var += (double) (d * d);
        }
        float scale = 1.0f / (float) Math.sqrt((float) (var / n) + eps);
        MemorySegment wd = weight.data(), bd = bias == null ? null : bias.data();
        for (int i = 0; i < n; i++) {
            float v = (x[xOff + i] - mean) * scale * wd.getAtIndex(F32, i);
            out[outOff + i] = bd == null ? v : v + bd.getAtIndex(F32, i);
        }
    }
}
