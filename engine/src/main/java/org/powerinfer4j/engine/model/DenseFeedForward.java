package org.powerinfer4j.engine.model;

import org.powerinfer4j.engine.kernels.FloatKernels;
import org.powerinfer4j.engine.kernels.Kernels;
import org.powerinfer4j.engine.kernels.SparseOps;
import org.powerinfer4j.engine.kernels.WorkerPool;
import org.powerinfer4j.engine.tensor.Tensor;

/**
 * Dense FFN: h = act(gate·x, up·x) for every neuron, then down·h. With a neuron-major down projection
 * ({@code ffn_down_t}, PowerInfer files) the product is y = Σ_r h_r · down_t[r,:], computed per thread over a
 * static slice of the output columns so the sum order is fixed (deterministic for any thread count).
 */
public final class DenseFeedForward implements FeedForward {
    private final FfnActivation activation;

    public DenseFeedForward(FfnActivation activation) {
        this.activation = activation;
    }

    @Override
    public void compute(WorkerPool pool, int layer, LayerWeights w, InferenceState s, int batch) {
        int ff = w.ffnUp().rows();
        if (w.ffnGate() != null) Transformer.project(pool, w.ffnGate(), s.xb, batch, s.hb);
        Transformer.project(pool, w.ffnUp(), s.xb, batch, s.hb2);
        activate(activation, s.hb, s.hb2, batch * ff, w.ffnGate() != null);
        if (w.ffnDown() != null) Transformer.project(pool, w.ffnDown(), s.hb, batch, s.xb2);
        else downTransposed(pool, w.ffnDownT(), s.hb, batch, s.xb2);
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
                gate[i] = Math.max(u, 0f);
                continue;
            }
            float g = gate[i];
            gate[i] = switch (a) {
                case SWIGLU -> g / (1.0f + org.powerinfer4j.engine.kernels.FixedMath.exp(-g)) * u;
                case REGLU -> g > 0 ? g * u : 0f;
                case DRELU -> g > 0 && u > 0 ? g * u : 0f;
            };
        }
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
