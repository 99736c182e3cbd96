package org.powerinfer4j.engine.model.generator;

import java.util.Arrays;
import java.util.Objects;
import java.util.SplittableRandom;
import org.powerinfer4j.engine.model.FfnActivation;

/**
 * The planted activation structure of a generated ReLU-family (PowerInfer) model: which FFN neurons fire for
 * which tokens, and predictors that know it.
 *
 * <h2>Construction (per layer)</h2>
 * Let d = n_embd, k = H − 1 (H = predictor hidden size), u₀ = (1,…,1)/√d.
 * <ol>
 *   <li><b>Residual stream.</b> Every embedding row is e_t = g_t − mean(g_t) + κ·u₀ with g_t ~ N(0, σ_e²): an
 *       isotropic random part orthogonal to u₀ plus a constant component κ = σ_e·√d / 2 along u₀ that acts
 *       as a bias input (there are no bias tensors in llama). Attention and FFN outputs are kept small
 *       (attn_output and ffn_down_t are scaled so each block adds at most ~{@value #ATTN_SHARE} resp.
 *       ~{@value #FFN_SHARE} of σ_e per element), so the residual at every layer is the token's embedding plus
 *       small noise: x ≈ e_t, with per-element spread σ_x(l) = σ_e·√(1 + l·(0.05² + 0.1²)).</li>
 *   <li><b>Firing rates.</b> Neuron r gets a firing probability p_r = min(0.995, C·rank_r^(−α)) (a power law
 *       over a random permutation of ranks: a few hot neurons fire for almost every token, most rarely), C
 *       bisected so that the mean of p_r is 1 − sparsity.</li>
 *   <li><b>Gate rows.</b> P is k random orthonormal directions orthogonal to u₀. Gate row r is
 *       a·(Pᵀc_r + n_r + β_r·u₀) with c_r ~ N(0, I_k), n_r a random full-rank "unpredictable" part orthogonal
 *       to u₀ with |n_r| = η·|c_r| (η = {@code gateNoise}), and β_r = Φ⁻¹(p_r)·σ_x·|c_r|·√(1+η²)/κ. For an
 *       isotropic x, (Pᵀc_r + n_r)·x ~ N(0, σ_x²|c_r|²(1+η²)) and u₀·x = κ, so gate_r·x &gt; 0 with probability
 *       exactly p_r. RMSNorm scales x by a positive factor and the FFN norm weights are 1, so the sign — the
 *       ReLU decision — is the same on the normalised input the FFN sees.</li>
 *   <li><b>Predictor.</b> fc1 row j &lt; k is P_j/σ_x + 6·u₀/κ (the shift keeps relu in its linear range:
 *       h_j = z_j + 6·h_b with z_j = P_j·x/σ_x ~ N(0,1)); fc1 row k is u₀/κ (h_b = u₀·x/κ ≈ 1, the bias
 *       unit). fc2 row r is (c_r/|c_r|, Φ⁻¹(p_r)·√(1+η²) + m − 6·Σ_j c_rj/|c_r|), so
 *       logit_r = (c_r·Px/σ_x + β_r·κ·h_b/σ_x)/|c_r| + m: the gate pre-activation in units of its own spread,
 *       minus the n_r part the predictor cannot see, plus a margin m ({@code predictorMargin}) that trades
 *       precision for recall as trained predictors do. The predictor reads the pre-norm residual, which
 *       differs from the gate's normalised input only by a positive scale that leaves every sign unchanged.</li>
 *   <li><b>up</b> rows are random N(0, σ²) (ReGLU); for dReLU they are the gate row plus an independent
 *       random row of half its norm, so relu(up) is mostly positive where the gate fires.
 *       {@code ffn_down_t} rows are random with the spread that makes the FFN output ~{@value #FFN_SHARE}·σ_e.</li>
 * </ol>
 * <b>Falcon and OPT</b> (non-gated ReLU FFN behind a LayerNorm): the up rows take the gate rows' role
 * ({@link Layer#lnUpRows}). LayerNorm subtracts the mean, so κ·u₀ no longer reaches the FFN as a bias input; the
 * bias comes from a constant LayerNorm bias (Falcon, whose linears have none) or from {@code ffn_up.bias} (OPT).
 * The predictor is unchanged: it reads the pre-norm residual, where κ·u₀ still is, and LayerNorm's 1/std(x) is
 * the 1/σ_x it assumes.
 * Honest limits: the planted rates assume random tokens (each token's embedding is one draw of x); attention
 * and FFN contributions are estimated, not measured, so per-layer σ_x is approximate — tests check the
 * measured sparsity and recall on the running model.
 */
public final class PlantedSparsity {
    /** Share of σ_e that attention may add per block (upper bound: attention focused on one position). */
    static final double ATTN_SHARE = 0.05;
    /** Share of σ_e the FFN adds per block. */
    static final double FFN_SHARE = 0.1;
    /** Ceiling of the firing probability of the hottest neurons. */
    static final double P_MAX = 0.995;
    /** Shift (in units of σ_x) that keeps the predictor's hidden units in relu's linear range. */
    static final double SHIFT = 6.0;

    /** User-facing parameters. */
    public record Spec(FfnActivation activation, double sparsity, double alpha, int predictorHidden, double gateNoise,
                       double predictorMargin) {
        public Spec {
            Objects.requireNonNull(activation, "activation");
            if (!activation.isRelu()) throw new IllegalArgumentException("planted sparsity needs reglu or drelu, not " + activation);
            if (!(sparsity > 1 - P_MAX && sparsity < 1 - 1e-3)) throw new IllegalArgumentException("sparsity must be in (0.005, 0.999), is " + sparsity);
            if (!(alpha >= 0 && alpha <= 4)) throw new IllegalArgumentException("power-law alpha must be in [0, 4], is " + alpha);
            if (predictorHidden != 0 && predictorHidden < 2) throw new IllegalArgumentException("predictor hidden size must be >= 2 (or 0 = auto)");
            if (!(gateNoise >= 0 && gateNoise <= 2)) throw new IllegalArgumentException("gate noise must be in [0, 2]");
            if (!Double.isFinite(predictorMargin)) throw new IllegalArgumentException("predictor margin must be finite");
        }

        /** ReGLU, 90% sparsity, α = 1, automatic predictor size, η = 0.25, margin 0.3 (recall ≈ 0.95, precision ≈ 0.75). */
        public static Spec defaults() {
            return new Spec(FfnActivation.REGLU, 0.9, 1.0, 0, 0.25, 0.3);
        }

        public Spec withActivation(FfnActivation a) { return new Spec(a, sparsity, alpha, predictorHidden, gateNoise, predictorMargin); }
        public Spec withSparsity(double s) { return new Spec(activation, s, alpha, predictorHidden, gateNoise, predictorMargin); }
        public Spec withAlpha(double a) { return new Spec(activation, sparsity, a, predictorHidden, gateNoise, predictorMargin); }
        public Spec withPredictorHidden(int h) { return new Spec(activation, sparsity, alpha, h, gateNoise, predictorMargin); }
        public Spec withGateNoise(double e) { return new Spec(activation, sparsity, alpha, predictorHidden, e, predictorMargin); }
        public Spec withPredictorMargin(double m) { return new Spec(activation, sparsity, alpha, predictorHidden, gateNoise, m); }

        /** H: as given, else max(64, n_embd/32), at most n_embd. */
        public int hidden(int dim) {
            int h = predictorHidden > 0 ? predictorHidden : Math.max(64, dim / 32);
            return Math.min(h, dim);
        }
    }

    private final Spec spec;
    private final int dim, ff, hidden, rank;
    private final float sigmaE, sigmaW;
    private final long seed;

    PlantedSparsity(Spec spec, int dim, int ff, float sigmaE, float sigmaW, long seed) {
        this.spec = spec;
        this.dim = dim;
        this.ff = ff;
        this.hidden = spec.hidden(dim);
        this.rank = hidden - 1;
        this.sigmaE = sigmaE;
        this.sigmaW = sigmaW;
        this.seed = seed;
    }

    public int hidden() { return hidden; }

    /** κ: the embedding's constant component along u₀. */
    double kappa() {
        return sigmaE * Math.sqrt(dim) / 2;
    }

    /** Expected per-element spread of the residual's random part at layer l. */
    double sigmaX(int layer) {
        return sigmaE * Math.sqrt(1 + layer * (ATTN_SHARE * ATTN_SHARE + FFN_SHARE * FFN_SHARE));
    }

    /** Standard deviation of attn_output so that attention adds at most ATTN_SHARE·σ_e (v is at most σ_w·√d per element). */
    float attnOutputStddev() {
        return attnOutputStddev(1);
    }

    /** The same for an attention input of {@code inputRms} per element (Falcon's LayerNorm with bias b₀: √(1 + b₀²)). */
    float attnOutputStddev(double inputRms) {
        return (float) (ATTN_SHARE * sigmaE / (Math.sqrt(dim) * sigmaW * Math.sqrt(dim) * inputRms));
    }

    /** Embedding rows [r0, r0+n): random part orthogonal to u₀ plus κ·u₀. */
    float[] embeddingRows(long rowSeed, int n) {
        SplittableRandom rnd = new SplittableRandom(rowSeed);
        float[] out = new float[n * dim];
        float offset = (float) (kappa() / Math.sqrt(dim));
        for (int i = 0; i < n; i++) {
            int o = i * dim;
            double mean = 0;
            for (int j = 0; j < dim; j++) mean += out[o + j] = (float) (rnd.nextGaussian() * sigmaE);
            mean /= dim;
            for (int j = 0; j < dim; j++) out[o + j] = (float) (out[o + j] - mean) + offset;
        }
        return out;
    }

    /** One layer's plan: directions, rates, and everything the tensor rows are computed from. */
    Layer layer(int layer) {
        return new Layer(layer, 0);
    }

    /** Expert {@code expert}'s plan in a mixture-of-experts layer: its own directions and rates (expert 0's are the dense layer's). */
    Layer layer(int layer, int expert) {
        return new Layer(layer, expert);
    }

    final class Layer {
        final int index;
        final float[] p;          // P: rank × dim, orthonormal rows ⊥ u₀
        final double[] quantile;  // Φ⁻¹(p_r)
        final double[] rate;      // p_r
        final double sigmaX;
        private final long layerSeed;

        Layer(int index, int expert) {
            this.index = index;
            this.layerSeed = RandomModelGenerator.mix(seed, 0x5EED0000 + index, expert);
            this.sigmaX = sigmaX(index);
            this.p = orthonormal(new SplittableRandom(RandomModelGenerator.mix(layerSeed, 1, 0)));
            this.rate = rates(new SplittableRandom(RandomModelGenerator.mix(layerSeed, 2, 0)));
            this.quantile = new double[ff];
            for (int r = 0; r < ff; r++) quantile[r] = Normal.quantile(rate[r]);
        }

        /** rank random directions, Gram–Schmidt'ed against u₀ and each other. */
        private float[] orthonormal(SplittableRandom rnd) {
            double[][] v = new double[rank][dim];
            for (int i = 0; i < rank; i++) {
                double[] a = v[i];
                for (int j = 0; j < dim; j++) a[j] = rnd.nextGaussian();
                for (int pass = 0; pass < 2; pass++) {   // twice: classical Gram–Schmidt loses orthogonality once
                    double mean = 0;
                    for (double x : a) mean += x;
                    mean /= dim;
                    for (int j = 0; j < dim; j++) a[j] -= mean;
                    for (int q = 0; q < i; q++) {
                        double[] b = v[q];
                        double dot = 0;
                        for (int j = 0; j < dim; j++) dot += a[j] * b[j];
                        for (int j = 0; j < dim; j++) a[j] -= dot * b[j];
                    }
                }
                double norm = 0;
                for (double x : a) norm += x * x;
                norm = Math.sqrt(norm);
                for (int j = 0; j < dim; j++) a[j] /= norm;
            }
            float[] out = new float[rank * dim];
            for (int i = 0; i < rank; i++)
                for (int j = 0; j < dim; j++) out[i * dim + j] = (float) v[i][j];
            return out;
        }

        /** Power-law rates over a random permutation of ranks, mean 1 − sparsity. */
        private double[] rates(SplittableRandom rnd) {
            int[] perm = new int[ff];
            for (int i = 0; i < ff; i++) perm[i] = i;
            for (int i = ff - 1; i > 0; i--) {
                int j = rnd.nextInt(i + 1);
                int t = perm[i];
                perm[i] = perm[j];
                perm[j] = t;
            }
            double target = 1 - spec.sparsity();
            double lo = 0, hi = 1;
            while (meanRate(hi) < target) hi *= 2;
            for (int it = 0; it < 100; it++) {
                double mid = (lo + hi) / 2;
                if (meanRate(mid) < target) lo = mid;
                else hi = mid;
            }
            double c = (lo + hi) / 2;
            double[] out = new double[ff];
            for (int r = 0; r < ff; r++) out[r] = rateOfRank(c, perm[r]);
            return out;
        }

        private double rateOfRank(double c, int rank) {
            return Math.min(P_MAX, c * Math.pow(rank + 1, -spec.alpha()));
        }

        private double meanRate(double c) {
            double s = 0;
            for (int r = 0; r < ff; r++) s += rateOfRank(c, r);
            return s / ff;
        }

        /** c_r: the neuron's coordinates in P, regenerated from its own seed. */
        private double[] coords(int r) {
            SplittableRandom rnd = new SplittableRandom(RandomModelGenerator.mix(layerSeed, 3, r));
            double[] c = new double[rank];
            for (int j = 0; j < rank; j++) c[j] = rnd.nextGaussian();
            return c;
        }

        private static double norm(double[] c) {
            double s = 0;
            for (double v : c) s += v * v;
            return Math.sqrt(s);
        }

        /** Gate rows [r0, r0+n) (see the class comment), scaled so entries have spread ≈ σ_w. */
        float[] gateRows(int r0, int n) {
            return selectorRows(r0, n, sigmaX / kappa());
        }

        /**
         * Up rows [r0, r0+n) of a non-gated FFN behind a LayerNorm (Falcon, OPT). LayerNorm removes the mean, so
         * its output x̂ is ⊥ u₀ with unit spread per element, and the bias input is a constant LayerNorm bias
         * b₀ per element (Falcon: {@code normBias} = b₀ &gt; 0, then u₀·b = b₀·√d) or, for {@code normBias} = 0, the
         * up bias itself ({@link #lnUpBias}, OPT). Either way up_r·x̂ + bias_r &gt; 0 with probability p_r.
         */
        float[] lnUpRows(int r0, int n, double normBias) {
            return selectorRows(r0, n, normBias > 0 ? 1 / (normBias * Math.sqrt(dim)) : 0);
        }

        /** OPT's ffn_up.bias: a·Φ⁻¹(p_r)·|c_r|·√(1+η²), the whole bias of neuron r's pre-activation. */
        float[] lnUpBias() {
            double eta = spec.gateNoise();
            float[] out = new float[ff];
            for (int r = 0; r < ff; r++) out[r] = (float) (rowScale() * quantile[r] * norm(coords(r)) * Math.sqrt(1 + eta * eta));
            return out;
        }

        private double rowScale() {
            double eta = spec.gateNoise();
            return sigmaW * Math.sqrt((double) dim / rank) / Math.sqrt(1 + eta * eta);
        }

        /** a·(Pᵀc_r + n_r + β_r·u₀) with β_r = Φ⁻¹(p_r)·|c_r|·√(1+η²)·{@code biasPerUnit}. */
        private float[] selectorRows(int r0, int n, double biasPerUnit) {
            float[] out = new float[n * dim];
            double eta = spec.gateNoise();
            double a = rowScale();
            double[] row = new double[dim];
            for (int i = 0; i < n; i++) {
                int r = r0 + i;
                double[] c = coords(r);
                double cn = norm(c);
                Arrays.fill(row, 0);
                for (int j = 0; j < rank; j++) {
                    double cj = c[j];
                    int po = j * dim;
                    for (int q = 0; q < dim; q++) row[q] += cj * p[po + q];
                }
                if (eta > 0) addNoise(row, r, eta * cn);
                double beta = quantile[r] * cn * Math.sqrt(1 + eta * eta) * biasPerUnit;
                double bias = beta / Math.sqrt(dim);   // β_r·u₀, per element
                for (int q = 0; q < dim; q++) out[i * dim + q] = (float) (a * (row[q] + bias));
            }
            return out;
        }

        /** A random vector ⊥ u₀ of norm {@code len} added to row. */
        private void addNoise(double[] row, int r, double len) {
            SplittableRandom rnd = new SplittableRandom(RandomModelGenerator.mix(layerSeed, 4, r));
            double[] v = new double[dim];
            double mean = 0;
            for (int q = 0; q < dim; q++) mean += v[q] = rnd.nextGaussian();
            mean /= dim;
            double ss = 0;
            for (int q = 0; q < dim; q++) {
                v[q] -= mean;
                ss += v[q] * v[q];
            }
            double s = len / Math.sqrt(ss);
            for (int q = 0; q < dim; q++) row[q] += s * v[q];
        }

        /** dReLU up rows: the gate row plus independent noise of half its (centred) norm. */
        float[] dreluUpRows(int r0, int n) {
            float[] g = gateRows(r0, n);
            float[] out = new float[n * dim];
            for (int i = 0; i < n; i++) {
                int o = i * dim;
                double mean = 0, ss = 0;
                for (int q = 0; q < dim; q++) mean += g[o + q];
                mean /= dim;
                for (int q = 0; q < dim; q++) ss += (g[o + q] - mean) * (g[o + q] - mean);
                SplittableRandom rnd = new SplittableRandom(RandomModelGenerator.mix(layerSeed, 5, r0 + i));
                double[] v = new double[dim];
                double vs = 0;
                for (int q = 0; q < dim; q++) vs += (v[q] = rnd.nextGaussian()) * v[q];
                double s = 0.5 * Math.sqrt(ss / vs);
                // the gate (bias included) plus noise: up > 0 mostly where gate > 0
                for (int q = 0; q < dim; q++) out[o + q] = (float) (g[o + q] + s * v[q]);
            }
            return out;
        }

        /** fc1 rows [r0, r0+n) of H: P_j/σ_x + SHIFT·u₀/κ for j &lt; k, then u₀/κ. */
        float[] fc1Rows(int r0, int n) {
            float[] out = new float[n * dim];
            float u0k = (float) (1 / (Math.sqrt(dim) * kappa()));
            for (int i = 0; i < n; i++) {
                int j = r0 + i;
                for (int q = 0; q < dim; q++)
                    out[i * dim + q] = j < rank ? (float) (p[j * dim + q] / sigmaX + SHIFT * u0k) : u0k;
            }
            return out;
        }

        /** fc2 rows [r0, r0+n) of n_ff, each of length H (see the class comment). */
        float[] fc2Rows(int r0, int n) {
            float[] out = new float[n * hidden];
            double eta = spec.gateNoise();
            for (int i = 0; i < n; i++) {
                int r = r0 + i;
                double[] c = coords(r);
                double cn = norm(c), sum = 0;
                for (int j = 0; j < rank; j++) {
                    out[i * hidden + j] = (float) (c[j] / cn);
                    sum += c[j] / cn;
                }
                out[i * hidden + rank] = (float) (quantile[r] * Math.sqrt(1 + eta * eta) + spec.predictorMargin() - SHIFT * sum);
            }
            return out;
        }

        /**
         * Standard deviation of ffn_down_t so the FFN output has spread FFN_SHARE·σ_e: E‖h‖² summed analytically
         * over neurons (gate pre-activation ~ N(Φ⁻¹(p_r)·s, s²), up ~ N(0, s_u²)), with s the spread of the
         * normalised input.
         */
        float downStddev() {
            double kap2 = kappa() * kappa() / dim;
            double s = sigmaX / Math.sqrt(sigmaX * sigmaX + kap2);       // random part of the normalised input
            double sg = sigmaW * Math.sqrt(dim) * s;                    // gate pre-activation spread
            double su = sigmaW * Math.sqrt(dim);                        // up pre-activation spread (‖xn‖ = √d)
            double sum = 0;
            for (int r = 0; r < ff; r++) {
                double t = quantile[r];
                double relu2 = ((t * t + 1) * Normal.cdf(t) + t * Normal.pdf(t)) * sg * sg;
                sum += relu2 * (spec.activation() == FfnActivation.DRELU ? sg * sg : su * su);
            }
            return (float) (FFN_SHARE * sigmaE / Math.sqrt(Math.max(sum, 1e-30)));
        }

        /**
         * ffn_down_t's standard deviation for a non-gated ReLU FFN behind a LayerNorm: the pre-activation of neuron r
         * is ~ N(Φ⁻¹(p_r)·s, s²) with s = σ_w·√d (x̂ has unit spread), so E‖h‖² = s²·Σ((t²+1)Φ(t) + tφ(t)).
         */
        float lnDownStddev() {
            double s2 = (double) sigmaW * sigmaW * dim, sum = 0;
            for (int r = 0; r < ff; r++) {
                double t = quantile[r];
                sum += ((t * t + 1) * Normal.cdf(t) + t * Normal.pdf(t)) * s2;
            }
            return (float) (FFN_SHARE * sigmaE / Math.sqrt(Math.max(sum, 1e-30)));
        }

        /** Mean planted firing rate (= 1 − sparsity). */
        double meanRate() {
            double s = 0;
            for (double v : rate) s += v;
            return s / ff;
        }
    }

    /** Standard normal Φ, φ and Φ⁻¹ (Acklam's rational approximation, relative error &lt; 1.2e-9). */
    static final class Normal {
        private Normal() {}

        static double pdf(double x) {
            return Math.exp(-0.5 * x * x) / Math.sqrt(2 * Math.PI);
        }

        static double cdf(double x) {
            return 0.5 * erfc(-x / Math.sqrt(2));
        }

        /** erfc with Numerical Recipes' Chebyshev fit (relative error &lt; 1.2e-7). */
        static double erfc(double x) {
            double z = Math.abs(x), t = 1 / (1 + 0.5 * z);
            double r = t * Math.exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806
                    + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))));
            return x >= 0 ? r : 2 - r;
        }

        static double quantile(double p) {
            if (p <= 0) return Double.NEGATIVE_INFINITY;
            if (p >= 1) return Double.POSITIVE_INFINITY;
            double[] a = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02, 1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00};
            double[] b = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02, 6.680131188771972e+01, -1.328068155288572e+01};
            double[] c = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00, -2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00};
            double[] d = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00, 3.754408661907416e+00};
            double q, x;
            if (p < 0.02425) {
                q = Math.sqrt(-2 * Math.log(p));
                x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
            } else if (p > 1 - 0.02425) {
                q = Math.sqrt(-2 * Math.log(1 - p));
                x = -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
            } else {
                q = p - 0.5;
                double r = q * q;
                x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q
                        / (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
            }
            return x;
        }
    }
}
