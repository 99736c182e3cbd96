package org.powerinfer4j.engine.model;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import org.powerinfer4j.engine.kernels.FloatKernels;
import org.powerinfer4j.engine.kernels.Kernels;
import org.powerinfer4j.engine.kernels.MatrixOps;
import org.powerinfer4j.engine.kernels.WorkerPool;
import org.powerinfer4j.engine.tensor.Tensor;

/**
 * The llama-family forward pass on the CPU: per layer RMSNorm → Q/K/V → RoPE → causal GQA attention over the
 * KV cache → output projection → residual; RMSNorm → FFN → residual; final norm → logits. A call processes a
 * chunk of tokens at once (prefill) with matrix–matrix products, or one token (decode) with matrix–vector
 * products. Arithmetic follows ggml's choices where they affect results (RMSNorm sum in double, RoPE angles
 * {@code pos · base^(-2i/n_rot)}, softmax with max subtraction).
 */
public final class Transformer {
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private final ModelConfig c;
    private final ModelWeights w;
    private final FeedForward ffn;
    private final float[] ropeInvFreq;
    private volatile FfnObserver ffnObserver;
    private volatile LayerOffload offload;

    public Transformer(ModelConfig c, ModelWeights w, FeedForward ffn) {
        this.c = c;
        this.w = w;
        this.ffn = ffn;
        // ggml: theta_scale = powf(base, -2/n_rot); theta_i = pos · theta_scale^i, accumulated in float
        ropeInvFreq = new float[c.ropeDim() / 2];
        float thetaScale = (float) Math.pow(c.ropeFreqBase(), -2.0f / c.ropeDim());
        float f = 1f;
        for (int i = 0; i < ropeInvFreq.length; i++) {
            ropeInvFreq[i] = f;
            f *= thetaScale;
        }
    }

    public ModelConfig config() {
        return c;
    }

    public ModelWeights weights() {
        return w;
    }

    public FeedForward feedForward() {
        return ffn;
    }

    /** Runs the last layers (and maybe the output head) through {@code o}; null = everything on the CPU. */
    public void setLayerOffload(LayerOffload o) {
        this.offload = o;
    }

    /** Installs (or with null removes) an observer of FFN activations. */
    public void setFfnObserver(FfnObserver observer) {
        this.ffnObserver = observer;
    }

    /**
     * Runs {@code n} tokens at positions {@code startPos..startPos+n-1} through the model, filling the KV cache.
     * Afterwards {@code s.logits()} holds the logits after the last token (computed only if {@code wantLogits}).
     */
    public void forward(WorkerPool pool, InferenceState s, int[] tokens, int off, int n, int startPos, boolean wantLogits) {
        if (startPos < 0 || n < 0 || (long) startPos + n > s.kv.contextLength())
            throw new ModelException("context is full: " + ((long) startPos + n) + " tokens do not fit in the context of " + s.kv.contextLength());
        for (int done = 0; done < n; ) {
            int b = Math.min(s.maxBatch, n - done);
            forwardChunk(pool, s, tokens, off + done, b, startPos + done);
            done += b;
            if (done == n && wantLogits) logits(pool, s, b - 1);
        }
    }

    private void forwardChunk(WorkerPool pool, InferenceState s, int[] tokens, int off, int batch, int startPos) {
        final int dim = c.dim(), qDim = c.qDim(), kvDim = c.kvDim();
        var embK = Kernels.forType(w.tokenEmbd().type());
        for (int b = 0; b < batch; b++) {
            int tok = tokens[off + b];
            if (tok < 0 || tok >= c.vocabSize()) throw new ModelException("token id " + tok + " is outside the vocabulary (0.." + (c.vocabSize() - 1) + ")");
            embK.dequantize(w.tokenEmbd().data(), w.tokenEmbd().rowOffset(tok), s.x, b * dim, dim);
        }
        int half = c.ropeDim() / 2;
        for (int b = 0; b < batch; b++) {     // one cos/sin table per position, reused by every head of every layer
            int pos = startPos + b;
            for (int i = 0; i < half; i++) {
                float theta = pos * ropeInvFreq[i];
                s.ropeCos[b * half + i] = (float) Math.cos(theta);
                s.ropeSin[b * half + i] = (float) Math.sin(theta);
            }
        }
        LayerOffload device = offload;
        int cpuLayers = device == null ? c.layers() : device.firstLayer();
        for (int l = 0; l < c.layers(); l++) {
            // the device runs the rest; when it cannot, the CPU carries on from the same residuals
            if (l == cpuLayers && device.forward(s, batch, startPos)) break;
            LayerWeights lw = w.layers()[l];
            // the attention block on the device when it holds this layer's (hybrid mode), else here
            if (device == null || !device.attention(s, l, batch, startPos)) {
                for (int b = 0; b < batch; b++) rmsNorm(s.xb, b * dim, s.x, b * dim, lw.attnNorm(), dim);
                project(pool, lw.wq(), s.xb, batch, s.q);
                project(pool, lw.wk(), s.xb, batch, s.k);
                project(pool, lw.wv(), s.xb, batch, s.v);
                for (int b = 0; b < batch; b++) {
                    int pos = startPos + b;
                    for (int h = 0; h < c.heads(); h++) rope(s.q, b * qDim + h * c.headDim(), s, b * half);
                    for (int h = 0; h < c.kvHeads(); h++) rope(s.k, b * kvDim + h * c.headDim(), s, b * half);
                    s.kv.store(l, pos, s.k, b * kvDim, s.v, b * kvDim);
                }
                attention(pool, s, l, batch, startPos);
                project(pool, lw.wo(), s.att, batch, s.xb2);
                for (int i = 0; i < batch * dim; i++) s.x[i] += s.xb2[i];
            }

            for (int b = 0; b < batch; b++) rmsNorm(s.xb, b * dim, s.x, b * dim, lw.ffnNorm(), dim);
            ffn.compute(pool, l, lw, s, batch); // reads s.xb (normed) and s.x (residual), writes s.xb2
            FfnObserver obs = ffnObserver;
            if (obs != null) obs.onFfn(l, batch, s.x, dim, s.hb, lw.ffnUp().rows());
            for (int i = 0; i < batch * dim; i++) s.x[i] += s.xb2[i];
        }
    }

    /** Final norm and output head for token {@code b} of the last chunk. */
    private void logits(WorkerPool pool, InferenceState s, int b) {
        LayerOffload off = offload;
        if (off != null && off.logits(s)) return;
        rmsNorm(s.xb, 0, s.x, b * c.dim(), w.outputNorm(), c.dim());
        MatrixOps.matVec(pool, w.output(), s.xb, 0, s.logits, 0);
    }

    /** out[b][*] = W · in[b][*] for each token of the chunk: matrix–vector for one token, matrix–matrix for more. */
    static void project(WorkerPool pool, Tensor wt, float[] in, int batch, float[] out) {
        if (batch == 1) MatrixOps.matVec(pool, wt, in, 0, out, 0);
        else MatrixOps.matMul(pool, wt, in, batch, out);
    }

    private void attention(WorkerPool pool, InferenceState s, int layer, int batch, int startPos) {
        final int hd = c.headDim(), qDim = c.qDim(), group = c.heads() / c.kvHeads();
        final float scale = (float) (1.0 / Math.sqrt(hd));
        final MemorySegment keys = s.kv.keys(), values = s.kv.values();
        final boolean f16 = s.kv.type() == org.powerinfer4j.engine.tensor.GGMLType.F16;
        final long headBytes = (long) s.kv.elementBytes() * hd;
        pool.forRange(batch * c.heads(), (from, to, thread) -> {
            float[] sc = s.scores[thread];
            for (int bh = from; bh < to; bh++) {
                int b = bh / c.heads(), h = bh % c.heads(), kvh = h / group;
                int pos = startPos + b;
                int qOff = b * qDim + h * hd;
                float max = Float.NEGATIVE_INFINITY;
                int t = 0;
                // F16 cache without Inf/NaN: four positions per call (one lane-sum tree, y loaded once, lean conversion)
                boolean four = f16 && !s.kv.nonFinite();
                long stride = s.kv.offset(layer, 1) - s.kv.offset(layer, 0);
                if (four) {
                    for (; t + 3 <= pos; t += 4) FloatKernels.dotF16x4(s.q, qOff, keys, s.kv.offset(layer, t) + kvh * headBytes, stride, hd, sc, t);
                }
                for (; t <= pos; t++) {
                    long ko = s.kv.offset(layer, t) + kvh * headBytes;
                    sc[t] = f16 ? FloatKernels.dotF16(s.q, qOff, keys, ko, hd) : FloatKernels.dot(s.q, qOff, keys, ko, hd);
                }
                for (t = 0; t <= pos; t++) {
                    float d = sc[t] * scale;
                    sc[t] = d;
                    if (d > max) max = d;
                }
                double sum = 0;
                for (t = 0; t <= pos; t++) {
                    float e = (float) Math.exp(sc[t] - max);
                    sc[t] = e;
                    sum += e;
                }
                float inv = (float) (1.0 / sum);
                java.util.Arrays.fill(s.att, qOff, qOff + hd, 0f);
                t = 0;
                if (four) {
                    for (; t + 3 <= pos; t += 4)
                        FloatKernels.axpyF16x4(sc[t] * inv, sc[t + 1] * inv, sc[t + 2] * inv, sc[t + 3] * inv, values,
                                s.kv.offset(layer, t) + kvh * headBytes, stride, s.att, qOff, hd);
                }
                for (; t <= pos; t++) {
                    long vo = s.kv.offset(layer, t) + kvh * headBytes;
                    if (f16) FloatKernels.axpyF16(sc[t] * inv, values, vo, s.att, qOff, hd);
                    else FloatKernels.axpy(sc[t] * inv, values, vo, s.att, qOff, hd);
                }
            }
        });
    }

    /** Rotates one head's first {@code ropeDim} dimensions in place with the token's cos/sin table at {@code t}. */
    private void rope(float[] v, int off, InferenceState s, int t) {
        int half = c.ropeDim() / 2;
        boolean normal = c.ropeType() == RopeType.NORMAL;
        for (int i = 0; i < half; i++) {
            float cos = s.ropeCos[t + i], sin = s.ropeSin[t + i];
            int i0 = normal ? off + 2 * i : off + i;
            int i1 = normal ? i0 + 1 : i0 + half;
            float x0 = v[i0], x1 = v[i1];
            v[i0] = x0 * cos - x1 * sin;
            v[i1] = x0 * sin + x1 * cos;
        }
    }

    /** out = x / sqrt(mean(x²) + eps) ⊙ weight; the sum of squares is accumulated in double as ggml does. */
    void rmsNorm(float[] out, int outOff, float[] x, int xOff, Tensor weight, int n) {
        double ss = 0;
        for (int i = 0; i < n; i++) ss += (double) (x[xOff + i] * x[xOff + i]);
        float mean = (float) (ss / n);
        float scale = 1.0f / (float) Math.sqrt(mean + c.rmsEps());
        MemorySegment wd = weight.data();
        for (int i = 0; i < n; i++) out[outOff + i] = x[xOff + i] * scale * wd.getAtIndex(F32, i);
    }
}
