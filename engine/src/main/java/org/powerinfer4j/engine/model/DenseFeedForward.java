package org.powerinfer4j.engine.model;

import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import org.powerinfer4j.engine.kernels.FloatKernels;
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
    public void compute(WorkerPool pool, int layer, LayerWeights w, InferenceState s, int batch) {
        compute(pool, activation, w.ffnGate(), w.ffnUp(), w.ffnDown(), w.ffnDownT(), w.get("ffn_gate.bias"), w.get("ffn_up.bias"),
                w.get("ffn_down.bias"), s.xb, batch, s.hb, s.hb2, s.xb2);
    }

    /** One (gated) MLP over {@code batch} rows of {@code x}; {@code hb}/{@code hb2} are scratch of batch·n_ff floats. */
    static void compute(WorkerPool pool, FfnActivation activation, Tensor gate, Tensor up, Tensor down, Tensor downT,
                        Tensor gateBias, Tensor upBias, Tensor downBias, float[] x, int batch, float[] hb, float[] hb2, float[] y) {
        int ff = up.rows();
        if (gate != null) Transformer.project(pool, gate, x, batch, hb);
        Transformer.project(pool, up, x, batch, hb2);
        if (gateBias != null) addBias(hb, gateBias, ff, batch);
        if (upBias != null) addBias(hb2, upBias, ff, batch);
        activate(activation, hb, hb2, batch * ff, gate != null);
        if (down != null) Transformer.project(pool, down, hb, batch, y);
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
        for (int i = 0; i < n; i++) {
            float u = up[i];
            if (!hasGate) {
                gate[i] = switch (a) {
                    case REGLU, DRELU -> Math.max(u, 0f);
                    case SWIGLU -> u / (1.0f + (float) Math.exp(-u));
                    case GELU -> gelu(u);
                    case GELU_TANH -> geluTanh(u);
                };
                continue;
            }
            float g = gate[i];
            gate[i] = switch (a) {
                case SWIGLU -> g / (1.0f + org.powerinfer4j.engine.kernels.FixedMath.exp(-g)) * u;
                case REGLU -> g > 0 ? g * u : 0f;
                case DRELU -> g > 0 && u > 0 ? g * u : 0f;
                case GELU -> gelu(g) * u;
                case GELU_TANH -> geluTanh(g) * u;
            };
        }
    }

    /** GELU with erf, evaluated in double: x/2 · (1 + erf(x/√2)). */
    static float gelu(float x) {
        return (float) (0.5 * x * (1.0 + erf(x * 0.7071067811865476)));
    }

    /** GELU's tanh approximation (PyTorch's {@code gelu(approximate="tanh")}), in double. */
    static float geluTanh(float x) {
        double v = x;
        return (float) (0.5 * v * (1.0 + Math.tanh(0.7978845608028654 * (v + 0.044715 * v * v * v))));
    }

    /** erf from the complementary error function's Chebyshev fit (Numerical Recipes erfcc: relative error < 1.2e-7). */
    static double erf(double x) {
        double z = Math.abs(x), t = 1.0 / (1.0 + 0.5 * z);
        double ans = t * Math.exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806
                + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))));
        return x >= 0 ? 1.0 - ans : ans - 1.0;
    }

    /** y[b] = Σ_r h[b][r] · downT[r,:] over every neuron (zero activations skipped), via the shared sparse axpy. */
    static void downTransposed(WorkerPool pool, Tensor downT, float[] h, int batch, float[] y) {
        int ff = downT.rows();
        SparseOps.sparseAxpy(pool, downT, allRows(ff), ff, h, ff, batch, y);
    }

    private static final java.util.concurrent.ConcurrentHashMap<Integer, int[]> ALL_ROWS = new java.util.concurrent.ConcurrentHashMap<>();

    /** 0..n-1, shared (read-only) per size. */
    private static int[] allRows(int n) {
        return ALL_ROWS.computeIfAbsent(n, k -> java.util.stream.IntStream.range(0, k).toArray());
    }
}
