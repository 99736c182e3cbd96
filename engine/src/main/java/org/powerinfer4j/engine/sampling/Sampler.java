package org.powerinfer4j.engine.sampling;

import java.util.Arrays;
import java.util.SplittableRandom;
import org.powerinfer4j.engine.grammar.TokenConstraint;

/**
 * The sampler chain, in llama.cpp's order: repetition penalty → top-k → top-p → min-p → temperature → draw.
 * Greedy (temperature ≤ 0) is a plain argmax after the penalty. Draws come from a {@link SplittableRandom}
 * seeded once, so a fixed seed gives the same tokens whatever the thread count (logits do not depend on it).
 *
 * <p>With a {@link TokenConstraint} (grammar-constrained decoding) only tokens the grammar allows are returned, and
 * the full vocabulary is masked only when needed: greedy tries the tokens in order of logit and returns the first
 * allowed one (the argmax of the masked logits); sampling keeps the allowed candidates of the chain (top-k, top-p,
 * min-p) and draws among them renormalised. Only when none of those is allowed are the logits of every disallowed
 * token set to -inf and the chain run again.
 */
public final class Sampler {
    private final SamplingParams p;
    private final SplittableRandom random;
    private int[] idx = new int[0];
    private float[] work = new float[0];

    public Sampler(SamplingParams params) {
        this.p = params;
        this.random = new SplittableRandom(params.seed());
    }

    public SamplingParams params() {
        return p;
    }

    /**
     * Picks the next token. {@code history}/{@code historyLength} are the tokens so far (for the repetition
     * penalty). {@code logits} is not modified.
     */
    public int sample(float[] logits, int[] history, int historyLength) {
        return sample(logits, history, historyLength, null, Integer.MAX_VALUE);
    }

    /** How many of the top tokens greedy decoding checks against a constraint before it masks the whole vocabulary. */
    static final int GREEDY_CANDIDATES = 64;

    /**
     * {@link #sample(float[], int[], int)} restricted to the tokens {@code constraint} allows with {@code budget}
     * tokens left (this one included); a null constraint allows every token. The constraint is not advanced.
     */
    public int sample(float[] logits, int[] history, int historyLength, TokenConstraint constraint, int budget) {
        penalised(logits, history, historyLength);
        if (constraint == null) return p.greedy() ? argmax(work) : draw(distribution());
        if (p.greedy()) {
            int best = argmax(work);
            if (constraint.allows(best, budget)) return best;
            int c = topIndices(work, Math.min(GREEDY_CANDIDATES, work.length), idx);
            for (int i = 0; i < c; i++) if (constraint.allows(idx[i], budget)) return idx[i];
            mask(constraint, budget);
            return argmax(work);
        }
        double[] probs = distribution();
        double allowed = 0;
        for (int i = 0; i < count; i++) {
            if (constraint.allows(idx[i], budget)) allowed += probs[i];
            else probs[i] = 0;
        }
        if (allowed > 0) {
            for (int i = 0; i < count; i++) probs[i] /= allowed;
            return draw(probs);
        }
        mask(constraint, budget);
        return draw(distribution());
    }

    private boolean[] allowedMask = new boolean[0];

    /** Sets the logits of every token the constraint does not allow to -inf (ignoring the budget if it allows none). */
    private void mask(TokenConstraint constraint, int budget) {
        if (allowedMask.length != work.length) allowedMask = new boolean[work.length];
        if (constraint.allowedTokens(budget, allowedMask) == 0 && constraint.allowedTokens(Integer.MAX_VALUE, allowedMask) == 0)
            throw new IllegalStateException("no token of the vocabulary continues the grammar");
        for (int i = 0; i < work.length; i++) if (!allowedMask[i]) work[i] = Float.NEGATIVE_INFINITY;
    }

    /** Draws a candidate {@code idx[i]} with probability {@code probs[i]} (zero-probability candidates never). */
    private int draw(double[] probs) {
        double r = random.nextDouble();
        double cum = 0;
        for (int i = 0; i < count; i++) {
            cum += probs[i];
            if (r < cum) return idx[i];
        }
        for (int i = count - 1; i > 0; i--) if (probs[i] > 0) return idx[i];   // rounding at the very end of the sum
        return idx[0];
    }

    /**
     * Speculative decoding's check of a proposed token (a deterministic draft: prompt lookup or a draft model's
     * argmax): returns {@code draft} when the target accepts it, else the token to emit in its place. Greedy: the
     * argmax (accepted exactly when it equals the draft). Sampling: accepted with probability p(draft) under the
     * distribution {@link #sample} draws from; on rejection a draw from that distribution without the draft,
     * renormalised — so the returned token is distributed exactly as {@link #sample}'s (the random stream differs).
     */
    public int verify(float[] logits, int[] history, int historyLength, int draft) {
        penalised(logits, history, historyLength);
        if (p.greedy()) return argmax(work);
        double[] probs = distribution();
        double pd = 0;
        for (int i = 0; i < count; i++) if (idx[i] == draft) pd = probs[i];
        if (random.nextDouble() < pd) return draft;
        double r = random.nextDouble() * (1 - pd), cum = 0;
        int last = -1;
        for (int i = 0; i < count; i++) {
            if (idx[i] == draft) continue;
            cum += probs[i];
            last = idx[i];
            if (r < cum) return idx[i];
        }
        return last >= 0 ? last : draft;   // rounding at the very end of the cumulative sum
    }

    private int count;

    /** Copies the logits into {@code work} with the repetition penalty applied. */
    private void penalised(float[] logits, int[] history, int historyLength) {
        int n = logits.length;
        if (work.length != n) {
            work = new float[n];
            idx = new int[n];
        }
        System.arraycopy(logits, 0, work, 0, n);
        applyRepetitionPenalty(work, history, historyLength);
    }

    /** The sampling distribution over {@code work}: candidates {@code idx[0..count)} and their probabilities. */
    private double[] distribution() {
        int n = work.length;
        // candidates sorted by logit, cut to top-k
        int k = p.topK() > 0 ? Math.min(p.topK(), n) : n;
        count = topIndices(work, k, idx);
        while (count > 1 && work[idx[count - 1]] == Float.NEGATIVE_INFINITY) count--;   // masked tokens are no candidates

        // softmax over the candidates (before temperature, as llama.cpp's top-p/min-p see them)
        double[] probs = softmax(work, idx, count, 1f);
        if (p.topP() < 1f) {
            double cum = 0;
            int keep = count;
            for (int i = 0; i < count; i++) {
                cum += probs[i];
                if (cum >= p.topP()) {
                    keep = i + 1;
                    break;
                }
            }
            count = Math.max(1, keep);
        }
        if (p.minP() > 0f) {
            double threshold = probs[0] * p.minP();
            int keep = 1;
            while (keep < count && probs[keep] >= threshold) keep++;
            count = keep;
        }
        return softmax(work, idx, count, p.temperature());
    }

    private void applyRepetitionPenalty(float[] l, int[] history, int len) {
        if (p.repeatPenalty() == 1f || p.repeatLastN() == 0 || history == null) return;
        int from = Math.max(0, len - p.repeatLastN());
        // penalise each distinct token once, like llama.cpp's token-count map
        int[] seen = Arrays.copyOfRange(history, from, len);
        Arrays.sort(seen);
        for (int i = 0; i < seen.length; i++) {
            if (i > 0 && seen[i] == seen[i - 1]) continue;
            int t = seen[i];
            if (t < 0 || t >= l.length) continue;
            l[t] = l[t] > 0 ? l[t] / p.repeatPenalty() : l[t] * p.repeatPenalty();
        }
    }

    /** Index of the largest value; ties go to the lowest index (as llama.cpp's greedy sampler). */
    public static int argmax(float[] v) {
        int best = 0;
        for (int i = 1; i < v.length; i++) if (v[i] > v[best]) best = i;
        return best;
    }

    /** Fills {@code out[0..k)} with the indices of the k largest values, in descending order. */
    static int topIndices(float[] v, int k, int[] out) {
        int n = v.length;
        if (k == n) {
            Integer[] boxed = new Integer[n];
            for (int i = 0; i < n; i++) boxed[i] = i;
            Arrays.sort(boxed, (a, b) -> v[a] != v[b] ? Float.compare(v[b], v[a]) : Integer.compare(a, b));
            for (int i = 0; i < n; i++) out[i] = boxed[i];
            return n;
        }
        // insertion into a small sorted buffer: O(n·log k) comparisons for the usual k ≤ 100
        int size = 0;
        for (int i = 0; i < n; i++) {
            float x = v[i];
            if (size == k && x <= v[out[size - 1]]) continue;
            int pos = size == k ? k - 1 : size++;
            while (pos > 0 && v[out[pos - 1]] < x) {
                out[pos] = out[pos - 1];
                pos--;
            }
            out[pos] = i;
        }
        return size;
    }

    private static double[] softmax(float[] l, int[] idx, int count, float temperature) {
        double[] pr = new double[count];
        double max = l[idx[0]] / temperature, sum = 0;
        for (int i = 0; i < count; i++) {
            pr[i] = Math.exp(l[idx[i]] / temperature - max);
            sum += pr[i];
        }
        for (int i = 0; i < count; i++) pr[i] /= sum;
        return pr;
    }
}
