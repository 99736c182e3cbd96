package org.powerinfer4j.engine.quality;

/**
 * Log-softmax pieces as llama-perplexity computes them (float differences and {@code expf}, summed in double), so
 * our figures and llama.cpp's differ by the models' logits only, not by the arithmetic around them.
 */
final class LogSoftmax {
    private LogSoftmax() {}

    /** {@code max + log Σ exp(l − max)}: subtracted from a logit it gives that token's log-probability. */
    static float maxPlusLogSumExp(float[] logits, int off, int n) {
        float max = max(logits, off, n);
        return max + logSumExp(logits, off, n, max);
    }

    /** {@code (float) log Σ exp(l − max)}. */
    static float logSumExp(float[] logits, int off, int n, float max) {
        return (float) Math.log(sumExp(logits, off, n, max));
    }

    /** {@code Σ expf(l − max)}, summed in double. */
    static double sumExp(float[] logits, int off, int n, float max) {
        double sum = 0;
        for (int i = 0; i < n; i++) sum += (float) Math.exp(logits[off + i] - max);
        return sum;
    }

    static float max(float[] v, int off, int n) {
        float max = v[off];
        for (int i = 1; i < n; i++) max = Math.max(max, v[off + i]);
        return max;
    }

    /** The first index of the largest logit. */
    static int argmax(float[] v, int off, int n) {
        int best = 0;
        for (int i = 1; i < n; i++) if (v[off + i] > v[off + best]) best = i;
        return best;
    }
}
