package org.powerinfer4j.engine.model;

import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import org.powerinfer4j.engine.kernels.FixedMath;
import org.powerinfer4j.engine.kernels.FloatKernels;
import org.powerinfer4j.engine.kernels.MatrixOps;
import org.powerinfer4j.engine.kernels.SparseOps;
import org.powerinfer4j.engine.kernels.WorkerPool;
import org.powerinfer4j.engine.tensor.Tensor;

/**
 * Dense FFN: h = act(gate·x + b_g) ⊙ (up·x + b_u) for every neuron (h = act(up·x + b_u) without a gate), then
 * down·h + b_d (biases where the layer has them: OPT, gpt-oss). With a neuron-major down projection
 * ({@code ffn_down_t}, PowerInfer files) the product is y = Σ_r h_r · down_t[r,:], computed per thread over a
 * static slice of the output columns so the sum order is fixed (deterministic for any thread count).
 */
public final class DenseFeedForward implements FeedForward {
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private final FfnActivation activation;

    public DenseFeedForward(FfnActivation activation) {
        this.activation = activation;
    }

    @Override
    public boolean supportsSequenceBatches() {
        return true;
    }

    @Override
    public void compute(WorkerPool pool, int layer, LayerWeights w, InferenceState s, int batch) {
        compute(pool, activation, w.ffnGate(), w.ffnUp(), w.ffnDown(), w.ffnDownT(), w.get("ffn_gate.bias"), w.get("ffn_up.bias"),
                w.get("ffn_down.bias"), s.xb, batch, s.hb, s.hb2, s.xb2, s);
    }

    /** One (gated) MLP over {@code batch} rows of {@code x}; {@code hb}/{@code hb2} are scratch of batch·n_ff floats. */
    static void compute(WorkerPool pool, FfnActivation activation, Tensor gate, Tensor up, Tensor down, Tensor downT,
                        Tensor gateBias, Tensor upBias, Tensor downBias, float[] x, int batch, float[] hb, float[] hb2, float[] y) {
        compute(pool, activation, gate, up, down, downT, gateBias, upBias, downBias, x, batch, hb, hb2, y, null);
    }

    /**
     * As above; with a sequence batch's state {@code seq} (else null) each product runs per token where
     * {@link InferenceState#perTokenFor} says so (fused products, bit-identical to alone).
     */
    static void compute(WorkerPool pool, FfnActivation activation, Tensor gate, Tensor up, Tensor down, Tensor downT,
                        Tensor gateBias, Tensor upBias, Tensor downBias, float[] x, int batch, float[] hb, float[] hb2, float[] y,
                        InferenceState seq) {
        int ff = up.rows();
        boolean perToken = seq != null && (seq.perTokenFor(up) || (gate != null && seq.perTokenFor(gate)));
        if (gate != null && batch > 1 && !perToken) {   // a prompt chunk: both products in one pass, x transposed once
            MatrixOps.matMulShared(pool, new Tensor[] {gate, up}, x, batch, new float[][] {hb, hb2});
        } else {
            if (gate != null) Transformer.project(pool, gate, x, batch, hb, seq != null && seq.perTokenFor(gate));
            Transformer.project(pool, up, x, batch, hb2, seq != null && seq.perTokenFor(up));
        }
        if (gateBias != null) addBias(hb, gateBias, ff, batch);
        if (upBias != null) addBias(hb2, upBias, ff, batch);
        activate(activation, hb, hb2, batch * ff, gate != null);
        if (down != null) Transformer.project(pool, down, hb, batch, y, seq != null && seq.perTokenFor(down));
        else downTransposed(pool, downT, hb, batch, y);
        if (downBias != null) addBias(y, downBias, downBias.rowLength(), batch);
    }

    static void addBias(float[] out, Tensor bias, int rows, int batch) {
        var bd = bias.data();
        for (int b = 0; b < batch; b++)
            for (int r = 0; r < rows; r++) out[b * rows + r] += bd.getAtIndex(F32, r);
    }

    /** hb = act(hb (gate), hb2 (up)), in place into hb. Without a gate, hb = act(hb2). */
    static void activate(FfnActivation a, float[] gate, float[] up, int n, boolean hasGate) {
        if (hasGate && a == FfnActivation.SWIGLU) {
            FloatKernels.siluMul(gate, up, n);
            return;
        }
        if (a == FfnActivation.GELU || a == FfnActivation.GELU_TANH) {
            // fixed-bits vector GELU (FixedMath): the same logits for any JIT state and thread count
            if (!hasGate) System.arraycopy(up, 0, gate, 0, n);
            if (a == FfnActivation.GELU) FloatKernels.geluErf(gate, 0, n);
            else FloatKernels.gelu(gate, 0, n);
            if (hasGate) for (int i = 0; i < n; i++) gate[i] *= up[i];
            return;
        }
        if (a == FfnActivation.SWIGLU_OAI) {
            if (!hasGate) throw new ModelException("swiglu_oai needs a gated FFN (ffn_gate)");
            swigluOai(gate, up, n);
            return;
        }
        for (int i = 0; i < n; i++) {
            float u = up[i];
            if (!hasGate) {
                gate[i] = a == FfnActivation.SWIGLU ? u / (1.0f + FixedMath.exp(-u)) : Math.max(u, 0f);
                continue;
            }
            float g = gate[i];
            gate[i] = switch (a) {
                case SWIGLU -> g / (1.0f + FixedMath.exp(-g)) * u;
                case REGLU -> g > 0 ? g * u : 0f;
                case DRELU -> g > 0 && u > 0 ? g * u : 0f;
                case GELU, GELU_TANH, SWIGLU_OAI -> throw new AssertionError("handled above");
            };
        }
    }

    /** gpt-oss's clamped SwiGLU in place into {@code gate}, with the fixed-bits exp (deterministic, as SwiGLU). */
    static void swigluOai(float[] gate, float[] up, int n) {
        float limit = FfnActivation.OAI_LIMIT, alpha = FfnActivation.OAI_ALPHA;
        for (int i = 0; i < n; i++) {
            float g = Math.min(gate[i], limit);
            float u = Math.max(-limit, Math.min(up[i], limit));
            gate[i] = g / (1.0f + FixedMath.exp(-alpha * g)) * (u + 1f);
        }
    }

    /** y[b] = Σ_r h[b][r] · downT[r,:] over every neuron (zero activations skipped), via the shared sparse axpy. */
    static void downTransposed(WorkerPool pool, Tensor downT, float[] h, int batch, float[] y) {
        int ff = downT.rows();
        if (batch == 1) {   // list only the rows that fired: the axpy prefetches the rows it lists, and skipped ones cost reads
            int[] rows = FIRED.get();
            if (rows.length < ff) FIRED.set(rows = new int[ff]);
            int n = 0;
            for (int r = 0; r < ff; r++) if (h[r] != 0f) rows[n++] = r;
            SparseOps.sparseAxpy(pool, downT, rows, n, h, ff, 1, y);
            return;
        }
        SparseOps.sparseAxpy(pool, downT, allRows(ff), ff, h, ff, batch, y);
    }

    private static final ThreadLocal<int[]> FIRED = ThreadLocal.withInitial(() -> new int[0]);

    private static final java.util.concurrent.ConcurrentHashMap<Integer, int[]> ALL_ROWS = new java.util.concurrent.ConcurrentHashMap<>();

    /** 0..n-1, shared (read-only) per size. */
    private static int[] allRows(int n) {
        return ALL_ROWS.computeIfAbsent(n, k -> java.util.stream.IntStream.range(0, k).toArray());
    }
}
