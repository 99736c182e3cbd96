package org.powerinfer4j.engine.sampling;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/**
 * {@link Sampler#verify} (speculative sampling with a deterministic draft) emits tokens from the same distribution as
 * {@link Sampler#sample}: accepted with the target's probability of the draft, else drawn from the rest.
 */
class SamplerVerifyTest {
    private static final float[] LOGITS = {2.0f, 1.5f, 1.2f, 0.3f, -0.5f, 0.9f, -2f, 1.4f};
    private static final int TRIALS = 200_000;

    @Test
    void verifiedTokensHaveTheSamplersDistribution() {
        SamplingParams p = SamplingParams.DEFAULT.withTopK(6).withMinP(0.02f).withTemperature(0.9f).withRepeatPenalty(1.3f);
        int[] history = {1, 1, 5};
        for (int draft : new int[]{0, 1, 7, 6}) {   // the favourite, others, one cut by top-k
            double[] plain = frequencies(p, history, -1, 11), verified = frequencies(p, history, draft, 12);
            for (int t = 0; t < LOGITS.length; t++)
                assertThat(verified[t]).as("token %d, draft %d", t, draft).isCloseTo(plain[t], org.assertj.core.data.Offset.offset(0.006));
        }
    }

    @Test
    void greedyVerificationIsTheArgmax() {
        Sampler s = new Sampler(SamplingParams.GREEDY);
        assertThat(s.verify(LOGITS, null, 0, 0)).isEqualTo(0);
        assertThat(s.verify(LOGITS, null, 0, 3)).isEqualTo(0);
    }

    private static double[] frequencies(SamplingParams p, int[] history, int draft, long seed) {
        Sampler s = new Sampler(p.withSeed(seed));
        double[] f = new double[LOGITS.length];
        for (int i = 0; i < TRIALS; i++) f[draft < 0 ? s.sample(LOGITS, history, history.length) : s.verify(LOGITS, history, history.length, draft)]++;
        for (int i = 0; i < f.length; i++) f[i] /= TRIALS;
        return f;
    }
}
