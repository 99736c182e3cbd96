package org.powerinfer4j.engine.kernels;

import static org.powerinfer4j.engine.kernels.Simd.I;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;

/**
 * exp, tanh and erfc in float with fixed bits: the same result in every execution mode (interpreter, C1, C2, the
 * Vector API's Java fallback) and for the vector and scalar forms. {@code FloatVector.lanewise(EXP)} does not have
 * that property (C2 calls a vendor library such as SVML, the fallback calls {@link Math#exp} per lane, and their last
 * bits differ), and neither do {@code Math.tanh}/{@code Math.exp} against a vector path. Everything here is built from
 * operations that IEEE 754 and the Java specification define exactly — add, subtract, multiply, divide, fused
 * multiply-add, comparisons, integer shifts and bit reinterpretation — done in the same order in both forms (the
 * scalar form uses {@link Math#fma} where the vector one uses {@code fma}), so the bits cannot differ.
 *
 * <p>exp: Cody–Waite range reduction {@code x = n·ln2 + r}, |r| ≤ ln2/2, then Cephes' degree-7 polynomial for
 * e^r and the scale 2^n applied as two exact power-of-two multiplications (so subnormal results round once, as an
 * IEEE multiply does). Measured within 1 ulp of {@code (float) Math.exp(x)} (see {@code FixedMathTest}).
 */
public final class FixedMath {
    private FixedMath() {}

    private static final float LOG2E = 1.44269504088896341f;
    private static final float LN2_HI = 0.693359375f, LN2_LO = -2.12194440e-4f;
    /** 1.5·2^23: adding it rounds a float of magnitude &lt; 2^22 to an integer held in the low mantissa bits. */
    private static final float ROUND = 12582912f;
    private static final int ROUND_BITS = 0x4B400000;
    /** Above: e^x overflows float. Below: e^x is under half the smallest subnormal. */
    private static final float EXP_HI = 88.72283935546875f, EXP_LO = -103.972084045410f;
    private static final float P0 = 1.9875691500e-4f, P1 = 1.3981999507e-3f, P2 = 8.3334519073e-3f,
            P3 = 4.1665795894e-2f, P4 = 1.6666665459e-1f, P5 = 5.0000001201e-1f;

    /** e^x with fixed bits (see the class comment); +Inf above ~88.72, 0 below ~-103.97, NaN for NaN. */
    public static float exp(float x) {
        if (x != x) return x;
        if (x > EXP_HI) return Float.POSITIVE_INFINITY;
        if (x < EXP_LO) return 0f;
        float t = x * LOG2E + ROUND;            // two roundings, as in the vector form (no fma here)
        int n = Float.floatToRawIntBits(t) - ROUND_BITS;
        float nf = t - ROUND;
        float r = Math.fma(-nf, LN2_HI, x);
        r = Math.fma(-nf, LN2_LO, r);
        float p = Math.fma(P0, r, P1);
        p = Math.fma(p, r, P2);
        p = Math.fma(p, r, P3);
        p = Math.fma(p, r, P4);
        p = Math.fma(p, r, P5);
        float y = Math.fma(p, r * r, r) + 1f;
        int n1 = n >> 1, n2 = n - n1;
        return y * Float.intBitsToFloat((n1 + 127) << 23) * Float.intBitsToFloat((n2 + 127) << 23);
    }

    /** {@link #exp(float)} lane by lane, bit for bit. {@code x} must be of {@link Simd#F}'s shape. */
    public static FloatVector exp(FloatVector x) {
        FloatVector t = x.mul(LOG2E).add(ROUND);
        IntVector n = ((IntVector) t.reinterpretShape(I, 0)).sub(ROUND_BITS);
        FloatVector nf = t.sub(ROUND);
        FloatVector r = nf.neg().fma(b(x, LN2_HI), x);
        r = nf.neg().fma(b(x, LN2_LO), r);
        FloatVector p = r.fma(b(x, P0), b(x, P1));   // P0·r + P1
        p = p.fma(r, b(x, P2));
        p = p.fma(r, b(x, P3));
        p = p.fma(r, b(x, P4));
        p = p.fma(r, b(x, P5));
        FloatVector y = p.fma(r.mul(r), r).add(1f);
        IntVector n1 = n.lanewise(VectorOperators.ASHR, 1), n2 = n.sub(n1);
        FloatVector s1 = (FloatVector) n1.add(127).lanewise(VectorOperators.LSHL, 23).reinterpretShape(x.species(), 0);
        FloatVector s2 = (FloatVector) n2.add(127).lanewise(VectorOperators.LSHL, 23).reinterpretShape(x.species(), 0);
        y = y.mul(s1).mul(s2);
        y = y.blend(Float.POSITIVE_INFINITY, x.compare(VectorOperators.GT, EXP_HI));
        y = y.blend(0f, x.compare(VectorOperators.LT, EXP_LO));
        return y.blend(x, x.test(VectorOperators.IS_NAN));
    }

    private static FloatVector b(FloatVector like, float c) {
        return FloatVector.broadcast(like.species(), c);
    }

    // tanh: an odd polynomial near 0 (Cephes' tanhf, |x| < 0.625), else 1 − 2/(e^{2|x|} + 1) with x's sign
    private static final float TANH_SMALL = 0.625f;
    private static final float T0 = -5.70498872745e-3f, T1 = 2.06390887954e-2f, T2 = -5.37397155531e-2f,
            T3 = 1.33314422036e-1f, T4 = -3.33332819422e-1f;

    /** tanh(x) with fixed bits, within a few ulp of {@link Math#tanh}. */
    public static float tanh(float x) {
        float a = Math.abs(x);
        if (a < TANH_SMALL) {
            float z = x * x;
            float p = Math.fma(T0, z, T1);
            p = Math.fma(p, z, T2);
            p = Math.fma(p, z, T3);
            p = Math.fma(p, z, T4);
            return Math.fma(p * z, x, x);
        }
        float big = 1f - 2f / (exp(2f * a) + 1f);
        return Math.copySign(big, x);            // NaN stays NaN
    }

    /** {@link #tanh(float)} lane by lane, bit for bit. */
    public static FloatVector tanh(FloatVector x) {
        FloatVector a = x.abs();
        FloatVector z = x.mul(x);
        FloatVector p = z.fma(b(x, T0), b(x, T1));
        p = p.fma(z, b(x, T2));
        p = p.fma(z, b(x, T3));
        p = p.fma(z, b(x, T4));
        FloatVector small = p.mul(z).fma(x, x);
        FloatVector big = FloatVector.broadcast(x.species(), 1f).sub(FloatVector.broadcast(x.species(), 2f).div(exp(a.mul(2f)).add(1f)));
        // copySign(big, x): big ≥ 0 (or NaN), so its bits with x's sign bit
        big = (FloatVector) ((IntVector) big.reinterpretShape(I, 0))
                .or(((IntVector) x.reinterpretShape(I, 0)).and(Integer.MIN_VALUE)).reinterpretShape(x.species(), 0);
        VectorMask<Float> isSmall = a.compare(VectorOperators.LT, TANH_SMALL);
        return big.blend(small, isSmall);
    }

    // erfc(a) for a ≥ 0 (Numerical Recipes' erfcc, Chebyshev fit, fractional error < 1.2e-7 everywhere)
    private static final float E0 = -1.26551223f, E1 = 1.00002368f, E2 = 0.37409196f, E3 = 0.09678418f, E4 = -0.18628806f,
            E5 = 0.27886807f, E6 = -1.13520398f, E7 = 1.48851587f, E8 = -0.82215223f, E9 = 0.17087277f;

    /** erfc(x) with fixed bits; relative error about 1e-6 (worse for x &gt; 4, where erfc &lt; 2e-8). */
    public static float erfc(float x) {
        float a = Math.abs(x);
        float t = 1f / Math.fma(0.5f, a, 1f);
        float p = Math.fma(E9, t, E8);
        p = Math.fma(p, t, E7);
        p = Math.fma(p, t, E6);
        p = Math.fma(p, t, E5);
        p = Math.fma(p, t, E4);
        p = Math.fma(p, t, E3);
        p = Math.fma(p, t, E2);
        p = Math.fma(p, t, E1);
        p = Math.fma(p, t, E0);
        float r = t * exp(Math.fma(-a, a, p));
        return x < 0f ? 2f - r : r;              // NaN: r is NaN, and so is the result
    }

    /** {@link #erfc(float)} lane by lane, bit for bit. */
    public static FloatVector erfc(FloatVector x) {
        FloatVector a = x.abs();
        FloatVector t = FloatVector.broadcast(x.species(), 1f).div(a.fma(b(x, 0.5f), b(x, 1f)));
        FloatVector p = t.fma(b(x, E9), b(x, E8));   // E9·t + E8
        p = p.fma(t, b(x, E7));
        p = p.fma(t, b(x, E6));
        p = p.fma(t, b(x, E5));
        p = p.fma(t, b(x, E4));
        p = p.fma(t, b(x, E3));
        p = p.fma(t, b(x, E2));
        p = p.fma(t, b(x, E1));
        p = p.fma(t, b(x, E0));
        FloatVector r = t.mul(exp(a.neg().fma(a, p)));
        return r.blend(FloatVector.broadcast(x.species(), 2f).sub(r), x.compare(VectorOperators.LT, 0f));
    }
}
