package org.powerinfer4j.engine.model;

import java.util.Arrays;

/**
 * How one token's router logits become its chosen experts and their weights — the rule every executor applies
 * (the CPU's {@link MoeFeedForward} and the device's expert layers), so both pick the same experts: softmax over
 * all experts then top-k (Mixtral, Qwen), sigmoid per expert then top-k, or top-k of the raw logits then a softmax
 * over those k (gpt-oss); then the chosen weights are optionally renormalised to sum to 1. Ties go to the lower
 * expert index. One instance per thread (it holds scratch).
 */
public final class ExpertRouter {
    private final ArchParams a;
    private final float[] probs;
    private final boolean[] taken;

    public ExpertRouter(ArchParams a) {
        this.a = a;
        this.probs = new float[a.experts()];
        this.taken = new boolean[a.experts()];
    }

    public int expertsUsed() {
        return a.expertsUsed();
    }

    /**
     * Routes the token whose logits start at {@code logits[off]}: writes its {@code expertsUsed} chosen experts,
     * best first, to {@code chosen[outOff..]} and their weights to {@code weights[outOff..]}.
     */
    public void route(float[] logits, int off, int[] chosen, float[] weights, int outOff) {
        int experts = a.experts(), k = a.expertsUsed();
        float[] p = probs;
        switch (a.gating()) {
            case SIGMOID -> {
                for (int e = 0; e < experts; e++) p[e] = (float) (1.0 / (1.0 + Math.exp(-logits[off + e])));
            }
            case SOFTMAX_WEIGHT -> System.arraycopy(logits, off, p, 0, experts);   // choose on the raw logits
            case SOFTMAX -> {
                float max = Float.NEGATIVE_INFINITY;
                for (int e = 0; e < experts; e++) max = Math.max(max, logits[off + e]);
                double sum = 0;
                for (int e = 0; e < experts; e++) sum += p[e] = (float) Math.exp(logits[off + e] - max);
                for (int e = 0; e < experts; e++) p[e] = (float) (p[e] / sum);
            }
        }
        Arrays.fill(taken, false);
        double total = 0;
        for (int j = 0; j < k; j++) {
            int best = -1;
            for (int e = 0; e < experts; e++) if (!taken[e] && (best < 0 || p[e] > p[best])) best = e;
            taken[best] = true;
            chosen[outOff + j] = best;
            weights[outOff + j] = p[best];
            total += p[best];
        }
        if (a.gating() == ArchParams.Gating.SOFTMAX_WEIGHT) {   // softmax over the chosen logits (the first is the largest)
            float max = weights[outOff];
            double sum = 0;
            for (int j = 0; j < k; j++) sum += weights[outOff + j] = (float) Math.exp(weights[outOff + j] - max);
            total = 0;
            for (int j = 0; j < k; j++) total += weights[outOff + j] = (float) (weights[outOff + j] / sum);
        }
        if (a.expertWeightsNorm())
            for (int j = 0; j < k; j++) weights[outOff + j] = (float) (weights[outOff + j] / total);
    }
}
