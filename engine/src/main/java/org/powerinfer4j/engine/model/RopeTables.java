package org.powerinfer4j.engine.model;

import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import org.powerinfer4j.engine.tensor.Tensor;

/**
 * One rotary embedding: pairing, rotated dimensions and the per-pair inverse frequencies with every scaling folded
 * in, so a position's table is {@code cos/sin(pos · invFreq[i]) · mscale}.
 *
 * <p>Frequencies follow ggml: {@code theta_scale = base^(-2/n_rot)} accumulated in float. Frequency factors (Llama
 * 3's {@code rope_freqs}, Phi-3's LongRoPE factors) divide them; linear scaling multiplies by {@code 1/factor};
 * YaRN (ggml's {@code rope_yarn}) mixes the interpolated and extrapolated frequency per dimension with the ramp
 * between the correction dimensions — linear in the angle, so it folds into {@code invFreq} — and scales the
 * magnitude by {@code attn_factor · (1 + 0.1 ln factor)}.
 */
public record RopeTables(RopeType type, int dims, float[] invFreq, float mscale, boolean scaled) {
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    public static RopeTables of(RopeType type, int dims, float base, ArchParams.RopeScaling scaling, Tensor freqFactors) {
        float[] inv = new float[dims / 2];
        float thetaScale = (float) Math.pow(base, -2.0f / dims);
        float f = 1f;
        for (int i = 0; i < inv.length; i++) {
            inv[i] = f;
            f *= thetaScale;
        }
        boolean scaled = false;
        if (freqFactors != null) {
            for (int i = 0; i < inv.length; i++) inv[i] /= freqFactors.data().getAtIndex(F32, i);
            scaled = true;
        }
        float mscale = 1f;
        if (scaling != null && !scaling.type().equals("none")) {
            float freqScale = 1f / scaling.factor();
            scaled = true;
            if (scaling.type().equals("linear")) {
                for (int i = 0; i < inv.length; i++) inv[i] *= freqScale;
            } else {   // yarn
                int orig = scaling.originalContext() > 0 ? scaling.originalContext() : 4096;
                double lo = Math.max(0, Math.floor(corrDim(dims, orig, scaling.yarnBetaFast(), base)));
                double hi = Math.min(dims - 1, Math.ceil(corrDim(dims, orig, scaling.yarnBetaSlow(), base)));
                float ext = scaling.yarnExtFactor();
                for (int i = 0; i < inv.length; i++) {
                    double y = (i - lo) / Math.max(0.001, hi - lo);
                    float ramp = (float) (1 - Math.min(1, Math.max(0, y))) * ext;
                    inv[i] = inv[i] * freqScale * (1 - ramp) + inv[i] * ramp;
                }
                mscale = scaling.yarnAttnFactor() * (ext != 0f ? 1.0f + 0.1f * (float) Math.log(1.0f / freqScale) : 1f);
            }
        }
        return new RopeTables(type, dims, inv, mscale, scaled);
    }

    /** ggml_rope_yarn_corr_dim: the dimension whose wavelength spans {@code nRot} turns over the original context. */
    private static double corrDim(int dims, int origCtx, float nRot, float base) {
        return dims * Math.log(origCtx / (nRot * 2 * Math.PI)) / (2 * Math.log(base));
    }

    /** Fills {@code cos/sin[b·half + i]} for the chunk's positions {@code startPos + b}. */
    public void fill(float[] cos, float[] sin, int startPos, int batch) {
        fill(cos, sin, null, startPos, batch);
    }

    /** Fills the rows for token positions {@code positions[b]} (tokens of several sequences), or startPos + b when null. */
    public void fill(float[] cos, float[] sin, int[] positions, int startPos, int batch) {
        int half = dims / 2;
        for (int b = 0; b < batch; b++) {
            int pos = positions != null ? positions[b] : startPos + b;
            for (int i = 0; i < half; i++) {
                float theta = pos * invFreq[i];
                cos[b * half + i] = (float) Math.cos(theta) * mscale;
                sin[b * half + i] = (float) Math.sin(theta) * mscale;
            }
        }
    }

    /** Rotates one head's first {@link #dims} dimensions in place with table row {@code t} (= b·half). */
    public void rotate(float[] v, int off, float[] cos, float[] sin, int t) {
        int half = dims / 2;
        boolean normal = type == RopeType.NORMAL;
        for (int i = 0; i < half; i++) {
            float c = cos[t + i], s = sin[t + i];
            int i0 = normal ? off + 2 * i : off + i;
            int i1 = normal ? i0 + 1 : i0 + half;
            float x0 = v[i0], x1 = v[i1];
            v[i0] = x0 * c - x1 * s;
            v[i1] = x0 * s + x1 * c;
        }
    }
}
