package org.powerinfer4j.engine.kernels;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Random;
import jdk.incubator.vector.FloatVector;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.FloatRange;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;

/**
 * {@link FixedMath}: accuracy against {@link Math} (or a double-precision reference), and vector == scalar bit for
 * bit — also after the vector code has been compiled by C2 (the kernels-scalar and kernels-vector-256 runs repeat
 * this class with the vector path off and at 256 bits).
 */
class FixedMathTest {
    private static final int FL = Simd.FL;

    /** Distance in ulps between two floats of the same sign (0 when bit-identical or both NaN). */
    static long ulps(float a, float b) {
        if (Float.isNaN(a) && Float.isNaN(b)) return 0;
        if (Float.isNaN(a) || Float.isNaN(b)) return Long.MAX_VALUE;
        int ia = Float.floatToIntBits(a), ib = Float.floatToIntBits(b);
        if (ia < 0) ia = Integer.MIN_VALUE - ia;
        if (ib < 0) ib = Integer.MIN_VALUE - ib;
        return Math.abs((long) ia - ib);
    }

    @Property(tries = 3000)
    void expIsWithinOneUlpOfMathExp(@ForAll @FloatRange(min = -103.9f, max = 88.72f) float x) {
        assertThat(ulps(FixedMath.exp(x), (float) Math.exp(x))).as("x = %s", x).isLessThanOrEqualTo(1);
    }

    @Test
    void expOnADenseGridIsWithinOneUlp() {
        long worst = 0;
        // every 97th float pattern from -103.9 to 88.72: about 22 million... too many; 1.5M evenly spaced values
        int steps = 1_500_000;
        for (int i = 0; i <= steps; i++) {
            float x = -103.9f + (88.72f + 103.9f) * i / steps;
            worst = Math.max(worst, ulps(FixedMath.exp(x), (float) Math.exp(x)));
        }
        assertThat(worst).isLessThanOrEqualTo(1);
    }

    @Test
    void expSpecialValues() {
        assertThat(FixedMath.exp(0f)).isEqualTo(1f);
        assertThat(FixedMath.exp(-0f)).isEqualTo(1f);
        assertThat(FixedMath.exp(Float.NaN)).isNaN();
        assertThat(FixedMath.exp(Float.POSITIVE_INFINITY)).isEqualTo(Float.POSITIVE_INFINITY);
        assertThat(FixedMath.exp(89f)).isEqualTo(Float.POSITIVE_INFINITY);
        assertThat(FixedMath.exp(Float.NEGATIVE_INFINITY)).isEqualTo(0f);
        assertThat(FixedMath.exp(-104f)).isEqualTo(0f);
        assertThat(FixedMath.exp(-100f)).isEqualTo((float) Math.exp(-100f));   // subnormal
    }

    @Property(tries = 2000)
    void tanhIsWithinTwoUlpsOfMathTanh(@ForAll @FloatRange(min = -12f, max = 12f) float x) {
        assertThat(ulps(FixedMath.tanh(x), (float) Math.tanh(x))).as("x = %s", x).isLessThanOrEqualTo(2);
    }

    @Property(tries = 2000)
    void erfcIsCloseToTheReference(@ForAll @FloatRange(min = -6f, max = 6f) float x) {
        double want = erfcReference(x);
        assertThat((double) FixedMath.erfc(x)).as("x = %s", x).isCloseTo(want, org.assertj.core.data.Offset.offset(2e-6 * want + 1e-37));
    }

    @Property(tries = 2000)
    void geluFormsAreCloseToTheirDefinitions(@ForAll @FloatRange(min = -12f, max = 12f) float x) {
        double u = Math.sqrt(2 / Math.PI) * (x + 0.044715 * x * x * x), z = x / Math.sqrt(2);
        double t = x / (1 + Math.exp(-2 * u));   // = 0.5·x·(1 + tanh u), without double's cancellation in 1 + tanh u
        if (Math.abs(u) < 10) assertThat(t).isCloseTo(0.5 * x * (1 + Math.tanh(u)), org.assertj.core.data.Offset.offset(1e-12));
        double e = 0.5 * x * erfcReference(-z);
        // for negative x the result is ~ x·e^{-2|u|} (x·e^{-z²}): the float rounding of the argument (relative 2^-24)
        // becomes a relative error of |2u|·2^-24 (2z²·2^-24) in the result — inherent to evaluating in float
        double eps = 0x1p-24;
        assertThat((double) FloatKernels.Scalar.gelu(x)).as("gelu(%s)", x)
                .isCloseTo(t, org.assertj.core.data.Offset.offset((8 + 4 * Math.abs(2 * u)) * eps * Math.abs(t) + 1e-37));
        assertThat((double) FloatKernels.Scalar.geluErf(x)).as("geluErf(%s)", x)
                .isCloseTo(e, org.assertj.core.data.Offset.offset((2e-6 + 4 * 2 * z * z * eps) * Math.abs(e) + 1e-37));
    }

    @Property(tries = 200)
    void vectorEqualsScalarBitForBit(@ForAll @IntRange(min = 0, max = 200) int n, @ForAll long seed) {
        float[] x = inputs(new Random(seed), n);
        assertSameBits(x);
    }

    /** The same comparison after some 10^5 vector calls: by then C2 has compiled the vector forms (intrinsics, not the fallback). */
    @Test
    void vectorEqualsScalarBitForBitWhenCompiled() {
        Random r = new Random(1);
        float[] x = inputs(r, 4 * FL + 3);
        float[] sink = new float[FL];
        for (int i = 0; i < 100_000; i++) {
            FloatVector v = FloatVector.fromArray(Simd.F, x, (i % 4) * FL);
            FixedMath.exp(v).add(FixedMath.tanh(v)).add(FixedMath.erfc(v)).intoArray(sink, 0);
            float[] g = x.clone(), u = x.clone();
            FloatKernels.Vector.siluMul(g, u, g.length);
            FloatKernels.Vector.gelu(g, 0, g.length);
            FloatKernels.Vector.geluErf(u, 0, u.length);
        }
        for (int k = 0; k < 50; k++) assertSameBits(inputs(r, 4 * FL + 3));
    }

    private static void assertSameBits(float[] x) {
        int n = x.length;
        for (int i = 0; i + FL <= n; i += FL) {
            float[] e = new float[FL], t = new float[FL], c = new float[FL];
            FloatVector v = FloatVector.fromArray(Simd.F, x, i);
            FixedMath.exp(v).intoArray(e, 0);
            FixedMath.tanh(v).intoArray(t, 0);
            FixedMath.erfc(v).intoArray(c, 0);
            for (int l = 0; l < FL; l++) {
                float xi = x[i + l];
                assertThat(Float.floatToIntBits(e[l])).as("exp(%s)", xi).isEqualTo(Float.floatToIntBits(FixedMath.exp(xi)));
                assertThat(Float.floatToIntBits(t[l])).as("tanh(%s)", xi).isEqualTo(Float.floatToIntBits(FixedMath.tanh(xi)));
                assertThat(Float.floatToIntBits(c[l])).as("erfc(%s)", xi).isEqualTo(Float.floatToIntBits(FixedMath.erfc(xi)));
            }
        }
        float[] u = x.clone();
        for (int i = 0; i < n; i++) u[i] = x[(i * 7 + 3) % Math.max(1, n)];
        float[] gv = x.clone(), gs = x.clone();
        FloatKernels.Vector.siluMul(gv, u, n);
        FloatKernels.Scalar.siluMul(gs, u, n);
        assertThat(gv).as("siluMul").isEqualTo(gs);
        gv = x.clone();
        gs = x.clone();
        FloatKernels.Vector.gelu(gv, 0, n);
        FloatKernels.Scalar.gelu(gs, 0, n);
        assertThat(gv).as("gelu").isEqualTo(gs);
        gv = x.clone();
        gs = x.clone();
        FloatKernels.Vector.geluErf(gv, 0, n);
        FloatKernels.Scalar.geluErf(gs, 0, n);
        assertThat(gv).as("geluErf").isEqualTo(gs);
    }

    /** Mostly Gaussian values of varied scale, with specials: ±0, ±Inf, NaN, overflow and underflow inputs, subnormals. */
    private static float[] inputs(Random r, int n) {
        float[] specials = {0f, -0f, Float.NaN, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY, 88.7f, 89f, -87.5f, -100f, -104f,
                1e-40f, -1e-40f, Float.MAX_VALUE, -Float.MAX_VALUE, 0.625f, -0.625f, 0.62499994f};
        float[] x = new float[n];
        for (int i = 0; i < n; i++) {
            int k = r.nextInt(20);
            x[i] = k < specials.length && r.nextInt(4) == 0 ? specials[k] : (float) (r.nextGaussian() * Math.pow(10, r.nextInt(4) - 1));
        }
        return x;
    }

    /** erfc in double: the power series of erf below 2.5, a continued fraction above; odd symmetry for x &lt; 0. */
    static double erfcReference(double x) {
        if (x < 0) return 2 - erfcReference(-x);
        if (x < 2.5) {
            double sum = 0, term = x;   // Σ (-1)^k x^(2k+1) / (k! (2k+1))
            for (int k = 0; k < 200; k++) {
                sum += term / (2 * k + 1);
                term *= -x * x / (k + 1);
                if (Math.abs(term) < 1e-20) break;
            }
            return 1 - 2 / Math.sqrt(Math.PI) * sum;
        }
        // erfc(x) = e^{-x²}/√π · 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + 2/(x + ...))))), evaluated bottom-up
        double f = x;
        for (int k = 60; k >= 1; k--) f = x + k / 2.0 / f;
        return Math.exp(-x * x) / Math.sqrt(Math.PI) / f;
    }
}
