package org.powerinfer4j.engine.quality;

import java.util.Arrays;

/**
 * KL divergence of a model's next-token distributions from a base model's, position by position, with the
 * statistics llama-perplexity reports (same formulas, so the two tools' figures compare): KL(base ‖ model) summed
 * over the tokens whose base log-probability is above −16, the perplexities of both and their ratio, how often
 * both pick the same top token, and Δp, the change in the probability of the actual next token.
 */
public final class KlDivergence {
    private double sumNll, sumNll2, sumNllBase, sumNllBase2, sumNllNllBase, sumKld, sumKld2, sumPDiff, sumPDiff2, sumPDiff4;
    private long sameTop, count;
    private float[] klds = new float[256], pDiffs = new float[256];

    /** A mean and its standard error (0 with 10 or fewer samples, as llama-perplexity prints). */
    public record Estimate(double value, double uncertainty) {}

    /**
     * The summary of a run. {@code ppl}/{@code pplBase}: perplexity of the model / of the base over the scored
     * tokens; {@code logPplRatio}: mean ln(PPL/PPL_base); {@code sameTop}: fraction of positions where both argmaxes
     * agree; {@code pDiffRms}: root mean square of Δp.
     */
    public record Summary(long positions, Estimate ppl, Estimate pplBase, double logPplCorrelation, Estimate logPplRatio,
                          Estimate kld, float maxKld, float kld99, float kld999, float medianKld, float minKld,
                          Estimate pDiff, float maxPDiff, float medianPDiff, float minPDiff, Estimate pDiffRms, Estimate sameTop) {}

    /**
     * Adds one position: {@code logits[off..off+vocab)} of the model, the base's log-probabilities, and the token
     * that actually follows.
     */
    public void add(float[] logits, int off, float[] baseLogProbs, int vocab, int nextToken) {
        int imax = LogSoftmax.argmax(logits, off, vocab);
        float max = logits[off + imax];
        float lse = max + LogSoftmax.logSumExp(logits, off, vocab, max);
        float nll = lse - logits[off + nextToken];
        float nllBase = -baseLogProbs[nextToken];
        sumNll += nll;
        sumNll2 += (double) nll * nll;
        sumNllBase += nllBase;
        sumNllBase2 += (double) nllBase * nllBase;
        sumNllNllBase += (double) nll * nllBase;
        double kl = 0;
        int imaxBase = 0;
        for (int i = 0; i < vocab; i++) {
            float lb = baseLogProbs[i];
            if (lb > baseLogProbs[imaxBase]) imaxBase = i;
            if (lb > -16f) kl += (float) Math.exp(lb) * (lb - (logits[off + i] - lse));
        }
        sumKld += kl;
        sumKld2 += kl * kl;
        if (imax == imaxBase) sameTop++;
        float pDiff = (float) Math.exp(-nll) - (float) Math.exp(-nllBase);
        sumPDiff += pDiff;
        double p2 = (double) pDiff * pDiff;
        sumPDiff2 += p2;
        sumPDiff4 += p2 * p2;
        if (count == klds.length) {
            klds = Arrays.copyOf(klds, klds.length * 2);
            pDiffs = Arrays.copyOf(pDiffs, pDiffs.length * 2);
        }
        klds[(int) count] = (float) kl;
        pDiffs[(int) count] = pDiff;
        count++;
    }

    public long count() {
        return count;
    }

    /** The statistics so far; at least one position must have been added. */
    public Summary summary() {
        if (count == 0) throw new IllegalStateException("no positions scored");
        Estimate logPpl = mean(sumNll, sumNll2), logPplBase = mean(sumNllBase, sumNllBase2);
        double cov = covariance(sumNll, sumNllBase, sumNllNllBase);
        double corr = logPpl.uncertainty() * logPplBase.uncertainty() > 0 ? cov / (logPpl.uncertainty() * logPplBase.uncertainty()) : Double.NaN;
        Estimate ratio = new Estimate(logPpl.value() - logPplBase.value(),
                Math.sqrt(Math.max(0, sq(logPpl.uncertainty()) + sq(logPplBase.uncertainty()) - 2 * cov)));
        Estimate mse = mean(sumPDiff2, sumPDiff4);
        double rms = Math.sqrt(mse.value());
        double top = (double) sameTop / count;
        float[] k = Arrays.copyOf(klds, (int) count), p = Arrays.copyOf(pDiffs, (int) count);
        Arrays.sort(k);
        Arrays.sort(p);
        return new Summary(count, exp(logPpl), exp(logPplBase), corr, ratio, mean(sumKld, sumKld2),
                k[k.length - 1], percentile(k, 0.99f), percentile(k, 0.999f), median(k), k[0],
                mean(sumPDiff, sumPDiff2), p[p.length - 1], median(p), p[0],
                new Estimate(rms, rms > 0 ? 0.5 / rms * mse.uncertainty() : 0),
                new Estimate(top, count > 1 ? Math.sqrt(top * (1 - top) / (count - 1)) : 0));
    }

    private Estimate mean(double sum, double sum2) {
        double f = sum / count, df = sum2 / count - f * f;
        return new Estimate(f, df > 0 && count > 10 ? Math.sqrt(df / (count - 1)) : 0);
    }

    private double covariance(double a, double b, double ab) {
        return count < 10 ? 0 : (ab / count - (a / count) * (b / count)) / (count - 1);
    }

    private static Estimate exp(Estimate log) {
        double v = Math.exp(log.value());
        return new Estimate(v, v * log.uncertainty());
    }

    private static double sq(double x) {
        return x * x;
    }

    static float median(float[] sorted) {
        int n = sorted.length;
        return n % 2 == 0 ? 0.5f * (sorted[n / 2] + sorted[n / 2 - 1]) : sorted[n / 2];
    }

    /** Linear interpolation between the sorted values, as llama-perplexity's {@code percentile}. */
    static float percentile(float[] sorted, float fraction) {
        if (fraction <= 0) return sorted[0];
        if (fraction >= 1) return sorted[sorted.length - 1];
        float p = fraction * (sorted.length - 1);
        int ip = (int) p;
        p -= ip;
        return (1 - p) * sorted[ip] + p * sorted[Math.min(ip + 1, sorted.length - 1)];
    }
}
