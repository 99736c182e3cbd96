package org.powerinfer4j.engine.tensor;

import java.util.Objects;

/**
 * Converts float rows to ggml's on-disk block formats, bit-for-bit as llama.cpp's reference quantizers
 * ({@code quantize_row_*_ref} in ggml-quants.c, which {@code llama-quantize} uses when no importance matrix is
 * given): F32, F16, BF16, Q8_0, Q4_0, Q4_1, and the K-quants Q4_K, Q5_K and Q6_K including their
 * {@code make_qkx2_quants} / {@code make_qx_quants} scale searches.
 *
 * <p>Float arithmetic follows the C code operation by operation in single precision (no fused multiply-adds,
 * which ggml-base, compiled without {@code -march} flags, does not use either), so outputs match llama.cpp's.
 * All methods are stateless and thread-safe; callers quantize disjoint rows in parallel.
 */
public final class Quantizer {
    private Quantizer() {}

    /** Super-block size of the K-quants. */
    public static final int QK_K = 256;
    private static final float GROUP_MAX_EPS = 1e-15f;

    /** Whether {@link #quantize} can produce {@code type}. */
    public static boolean supports(GGMLType type) {
        return switch (type) {
            case F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q4_K, Q5_K, Q6_K -> true;
            default -> false;
        };
    }

    /** Quantizes all of {@code src} (its length a multiple of the block size) into a new array. */
    public static byte[] quantize(GGMLType type, float[] src) {
        byte[] dst = new byte[Math.toIntExact(type.byteSize(src.length))];
        quantize(type, src, 0, src.length, dst, 0);
        return dst;
    }

    /**
     * Quantizes {@code n} floats from {@code src[srcOff..]} into {@code dst[dstOff..]}, writing
     * {@code type.byteSize(n)} bytes. {@code n} must be a multiple of the type's block size.
     */
    public static void quantize(GGMLType type, float[] src, int srcOff, int n, byte[] dst, int dstOff) {
        Objects.requireNonNull(type, "type");
        if (!supports(type)) throw new IllegalArgumentException("no quantizer for " + type);
        if (n % type.blockSize != 0)
            throw new IllegalArgumentException(n + " values are not a multiple of the " + type + " block size " + type.blockSize);
        Objects.checkFromIndexSize(srcOff, n, src.length);
        Objects.checkFromIndexSize(dstOff, Math.toIntExact(type.byteSize(n)), dst.length);
        int nb = n / type.blockSize;
        switch (type) {
            case F32 -> { for (int i = 0; i < n; i++) putF32(dst, dstOff + 4 * i, src[srcOff + i]); }
            case F16 -> { for (int i = 0; i < n; i++) putI16(dst, dstOff + 2 * i, fp16(src[srcOff + i])); }
            case BF16 -> { for (int i = 0; i < n; i++) putI16(dst, dstOff + 2 * i, bf16(src[srcOff + i])); }
            case Q8_0 -> { for (int b = 0; b < nb; b++) q8_0(src, srcOff + 32 * b, dst, dstOff + 34 * b); }
            case Q4_0 -> { for (int b = 0; b < nb; b++) q4_0(src, srcOff + 32 * b, dst, dstOff + 18 * b); }
            case Q4_1 -> { for (int b = 0; b < nb; b++) q4_1(src, srcOff + 32 * b, dst, dstOff + 20 * b); }
            case Q4_K -> { KScratch s = new KScratch(); for (int b = 0; b < nb; b++) q4_K(src, srcOff + QK_K * b, dst, dstOff + 144 * b, s); }
            case Q5_K -> { KScratch s = new KScratch(); for (int b = 0; b < nb; b++) q5_K(src, srcOff + QK_K * b, dst, dstOff + 176 * b, s); }
            case Q6_K -> { KScratch s = new KScratch(); for (int b = 0; b < nb; b++) q6_K(src, srcOff + QK_K * b, dst, dstOff + 210 * b, s); }
            default -> throw new AssertionError(type);
        }
    }

    // ---- scalar conversions -------------------------------------------------------------------------

    /** IEEE half, round to nearest even (as ggml's GGML_FP32_TO_FP16 and F16C). */
    public static short fp16(float f) {
        return Float.floatToFloat16(f);
    }

    public static float fp16ToFloat(short h) {
        return Float.float16ToFloat(h);
    }

    /** bfloat16 as ggml's {@code ggml_compute_fp32_to_bf16}: round to nearest even, NaNs kept quiet. */
    public static short bf16(float f) {
        int u = Float.floatToRawIntBits(f);
        if ((u & 0x7fffffff) > 0x7f800000) return (short) ((u >>> 16) | 64);
        return (short) ((u + (0x7fff + ((u >>> 16) & 1))) >>> 16);
    }

    public static float bf16ToFloat(short h) {
        return Float.intBitsToFloat((h & 0xffff) << 16);
    }

    /** ggml's {@code nearest_int}: round half to even via the 1.5·2^23 trick (valid for |f| ≤ 4194303). */
    static int nearestInt(float f) {
        float v = f + 12582912.f;
        return (Float.floatToRawIntBits(v) & 0x007fffff) - 0x00400000;
    }

    /** C {@code roundf}: half away from zero. Double arithmetic keeps {@code |x| + 0.5} exact. */
    static float roundf(float x) {
        return (float) Math.copySign(Math.floor(Math.abs((double) x) + 0.5), x);
    }

    // ---- 32-element block types ---------------------------------------------------------------------

    private static void q8_0(float[] x, int xo, byte[] y, int yo) {
        float amax = 0;
        for (int j = 0; j < 32; j++) amax = Math.max(amax, Math.abs(x[xo + j]));
        float d = amax / 127f;
        float id = d != 0 ? 1.0f / d : 0.0f;
        putI16(y, yo, fp16(d));
        for (int j = 0; j < 32; j++) y[yo + 2 + j] = (byte) (int) roundf(x[xo + j] * id);
    }

    private static void q4_0(float[] x, int xo, byte[] y, int yo) {
        float amax = 0, max = 0;
        for (int j = 0; j < 32; j++) {
            float v = x[xo + j];
            if (amax < Math.abs(v)) {
                amax = Math.abs(v);
                max = v;
            }
        }
        float d = max / -8;
        float id = d != 0 ? 1.0f / d : 0.0f;
        putI16(y, yo, fp16(d));
        for (int j = 0; j < 16; j++) {
            float x0 = x[xo + j] * id;
            float x1 = x[xo + 16 + j] * id;
            // (int8_t)(x + 8.5f) truncates toward zero; x ≥ -8 so the sum is positive
            int xi0 = Math.min(15, (byte) (int) (x0 + 8.5f));
            int xi1 = Math.min(15, (byte) (int) (x1 + 8.5f));
            y[yo + 2 + j] = (byte) (xi0 | (xi1 << 4));
        }
    }

    private static void q4_1(float[] x, int xo, byte[] y, int yo) {
        float min = Float.MAX_VALUE, max = -Float.MAX_VALUE;
        for (int j = 0; j < 32; j++) {
            float v = x[xo + j];
            if (v < min) min = v;
            if (v > max) max = v;
        }
        float d = (max - min) / 15;
        float id = d != 0 ? 1.0f / d : 0.0f;
        putI16(y, yo, fp16(d));
        putI16(y, yo + 2, fp16(min));
        for (int j = 0; j < 16; j++) {
            float x0 = (x[xo + j] - min) * id;
            float x1 = (x[xo + 16 + j] - min) * id;
            int xi0 = Math.min(15, (byte) (int) (x0 + 0.5f));
            int xi1 = Math.min(15, (byte) (int) (x1 + 0.5f));
            y[yo + 4 + j] = (byte) (xi0 | (xi1 << 4));
        }
    }

    // ---- K-quants -------------------------------------------------------------------------------------

    /** Per-call scratch so the K-quant loops allocate nothing per block. */
    private static final class KScratch {
        final int[] L = new int[QK_K];
        final int[] laux = new int[32];
        final float[] weights = new float[32];
        final float[] mins = new float[QK_K / 16];
        final float[] scales = new float[QK_K / 16];
        final float[] theMin = new float[1];
        final byte[] sc = new byte[12];
    }

    /**
     * ggml's {@code make_qkx2_quants}: the scale and (negated) min of an asymmetric {@code nmax}-level
     * quantization of {@code x[xo..xo+n)} minimizing the weighted squared error over a grid of trial scales.
     * Levels go to {@code L[lo..]}; the min to {@code theMin[0]}.
     */
    private static float makeQkx2Quants(int n, int nmax, float[] x, int xo, float[] weights, int[] L, int lo,
                                        float[] theMin, int[] laux, float rmin, float rdelta, int nstep) {
        float min = x[xo], max = x[xo];
        float sumW = weights[0];
        float sumX = sumW * x[xo];
        for (int i = 1; i < n; i++) {
            float xi = x[xo + i];
            if (xi < min) min = xi;
            if (xi > max) max = xi;
            float w = weights[i];
            sumW += w;
            sumX += w * xi;
        }
        if (min > 0) min = 0;
        if (max == min) {
            for (int i = 0; i < n; i++) L[lo + i] = 0;
            theMin[0] = -min;
            return 0.f;
        }
        float iscale = nmax / (max - min);
        float scale = 1 / iscale;
        float bestError = 0;
        for (int i = 0; i < n; i++) {
            int l = nearestInt(iscale * (x[xo + i] - min));
            l = Math.max(0, Math.min(nmax, l));
            L[lo + i] = l;
            float diff = scale * l + min - x[xo + i];
            diff = diff * diff;
            bestError += weights[i] * diff;
        }
        for (int is = 0; is <= nstep; is++) {
            iscale = (rmin + rdelta * is + nmax) / (max - min);
            float sumL = 0, sumL2 = 0, sumXL = 0;
            for (int i = 0; i < n; i++) {
                int l = nearestInt(iscale * (x[xo + i] - min));
                l = Math.max(0, Math.min(nmax, l));
                laux[i] = l;
                float w = weights[i];
                sumL += w * l;
                sumL2 += w * l * l;
                sumXL += w * l * x[xo + i];
            }
            float D = sumW * sumL2 - sumL * sumL;
            if (D > 0) {
                float thisScale = (sumW * sumXL - sumX * sumL) / D;
                float thisMin = (sumL2 * sumX - sumL * sumXL) / D;
                if (thisMin > 0) {
                    thisMin = 0;
                    thisScale = sumXL / sumL2;
                }
                float curError = 0;
                for (int i = 0; i < n; i++) {
                    float diff = thisScale * laux[i] + thisMin - x[xo + i];
                    diff = diff * diff;
                    curError += weights[i] * diff;
                }
                if (curError < bestError) {
                    System.arraycopy(laux, 0, L, lo, n);
                    bestError = curError;
                    scale = thisScale;
                    min = thisMin;
                }
            }
        }
        theMin[0] = -min;
        return scale;
    }

    /** ggml's {@code make_qx_quants} with {@code rmse_type} 1 (weights x²) and no importance weights. */
    private static float makeQxQuants(int n, int nmax, float[] x, int xo, int[] L, int lo) {
        float max = 0, amax = 0;
        for (int i = 0; i < n; i++) {
            float ax = Math.abs(x[xo + i]);
            if (ax > amax) {
                amax = ax;
                max = x[xo + i];
            }
        }
        if (amax < GROUP_MAX_EPS) {
            for (int i = 0; i < n; i++) L[lo + i] = 0;
            return 0.f;
        }
        float iscale = -nmax / max;
        float sumlx = 0, suml2 = 0;
        for (int i = 0; i < n; i++) {
            float xi = x[xo + i];
            int l = nearestInt(iscale * xi);
            l = Math.max(-nmax, Math.min(nmax - 1, l));
            L[lo + i] = l + nmax;
            float w = xi * xi;
            sumlx += w * xi * l;
            suml2 += w * l * l;
        }
        float scale = suml2 != 0 ? sumlx / suml2 : 0.0f;
        float best = scale * sumlx;
        for (int is = -9; is <= 9; is++) {
            if (is == 0) continue;
            iscale = -(nmax + 0.1f * is) / max;
            sumlx = suml2 = 0;
            for (int i = 0; i < n; i++) {
                float xi = x[xo + i];
                int l = nearestInt(iscale * xi);
                l = Math.max(-nmax, Math.min(nmax - 1, l));
                float w = xi * xi;
                sumlx += w * xi * l;
                suml2 += w * l * l;
            }
            if (suml2 > 0 && sumlx * sumlx > best * suml2) {
                for (int i = 0; i < n; i++) {
                    int l = nearestInt(iscale * x[xo + i]);
                    L[lo + i] = nmax + Math.max(-nmax, Math.min(nmax - 1, l));
                }
                scale = sumlx / suml2;
                best = scale * sumlx;
            }
        }
        return scale;
    }

    /**
     * The shared first half of Q4_K and Q5_K: per 32-element sub-block scales and mins from make_qkx2_quants,
     * packed as 6-bit values into {@code s.sc} (ggml's 12-byte scales field); returns {d, dmin} as halves.
     */
    private static void kScalesMins(float[] x, int xo, int nmax, float rmin, int nstep, KScratch s, short[] dDmin) {
        float maxScale = 0, maxMin = 0;
        for (int j = 0; j < QK_K / 32; j++) {
            float sumX2 = 0;
            for (int l = 0; l < 32; l++) sumX2 += x[xo + 32 * j + l] * x[xo + 32 * j + l];
            float avX = (float) Math.sqrt(sumX2 / 32);
            for (int l = 0; l < 32; l++) s.weights[l] = avX + Math.abs(x[xo + 32 * j + l]);
            s.scales[j] = makeQkx2Quants(32, nmax, x, xo + 32 * j, s.weights, s.L, 32 * j, s.theMin, s.laux, rmin, 0.1f, nstep);
            s.mins[j] = s.theMin[0];
            if (s.scales[j] > maxScale) maxScale = s.scales[j];
            if (s.mins[j] > maxMin) maxMin = s.mins[j];
        }
        float invScale = maxScale > 0 ? 63.f / maxScale : 0.f;
        float invMin = maxMin > 0 ? 63.f / maxMin : 0.f;
        byte[] sc = s.sc;
        for (int j = 0; j < QK_K / 32; j++) {
            int ls = Math.min(63, nearestInt(invScale * s.scales[j]) & 0xFF);
            int lm = Math.min(63, nearestInt(invMin * s.mins[j]) & 0xFF);
            if (j < 4) {
                sc[j] = (byte) ls;
                sc[j + 4] = (byte) lm;
            } else {
                sc[j + 4] = (byte) ((ls & 0xF) | ((lm & 0xF) << 4));
                sc[j - 4] |= (byte) ((ls >> 4) << 6);
                sc[j] |= (byte) ((lm >> 4) << 6);
            }
        }
        dDmin[0] = fp16(maxScale / 63.f);
        dDmin[1] = fp16(maxMin / 63.f);
    }

    /** ggml's {@code get_scale_min_k4}: the 6-bit scale (low 8 bits) and min (next 8 bits) of sub-block j. */
    static int scaleMinK4(int j, byte[] q, int qo) {
        int d, m;
        if (j < 4) {
            d = q[qo + j] & 63;
            m = q[qo + j + 4] & 63;
        } else {
            d = (q[qo + j + 4] & 0xF) | (((q[qo + j - 4] & 0xFF) >> 6) << 4);
            m = ((q[qo + j + 4] & 0xFF) >> 4) | (((q[qo + j] & 0xFF) >> 6) << 4);
        }
        return d | (m << 8);
    }

    /** Final levels for Q4_K/Q5_K from the rounded (stored) scales, as ggml recomputes them. */
    private static void kLevels(float[] x, int xo, int nmax, KScratch s, short[] dDmin) {
        float dAll = fp16ToFloat(dDmin[0]), minAll = fp16ToFloat(dDmin[1]);
        for (int j = 0; j < QK_K / 32; j++) {
            int sm = scaleMinK4(j, s.sc, 0);
            float d = dAll * (sm & 0xFF);
            if (d == 0) continue;
            float dm = minAll * (sm >> 8);
            for (int ii = 0; ii < 32; ii++) {
                int l = nearestInt((x[xo + 32 * j + ii] + dm) / d);
                s.L[32 * j + ii] = Math.max(0, Math.min(nmax, l));
            }
        }
    }

    /** block_q4_K: d (f16), dmin (f16), scales[12], qs[128]. */
    private static void q4_K(float[] x, int xo, byte[] y, int yo, KScratch s) {
        short[] dDmin = new short[2];
        java.util.Arrays.fill(s.sc, (byte) 0);
        kScalesMins(x, xo, 15, -1f, 20, s, dDmin);
        kLevels(x, xo, 15, s, dDmin);
        putI16(y, yo, dDmin[0]);
        putI16(y, yo + 2, dDmin[1]);
        System.arraycopy(s.sc, 0, y, yo + 4, 12);
        int q = yo + 16;
        for (int j = 0; j < QK_K; j += 64) {
            for (int l = 0; l < 32; l++) y[q + l] = (byte) (s.L[j + l] | (s.L[j + l + 32] << 4));
            q += 32;
        }
    }

    /** block_q5_K: d (f16), dmin (f16), scales[12], qh[32], qs[128]. */
    private static void q5_K(float[] x, int xo, byte[] y, int yo, KScratch s) {
        short[] dDmin = new short[2];
        java.util.Arrays.fill(s.sc, (byte) 0);
        kScalesMins(x, xo, 31, -0.5f, 15, s, dDmin);
        kLevels(x, xo, 31, s, dDmin);
        putI16(y, yo, dDmin[0]);
        putI16(y, yo + 2, dDmin[1]);
        System.arraycopy(s.sc, 0, y, yo + 4, 12);
        int qh = yo + 16, ql = yo + 48;
        java.util.Arrays.fill(y, qh, qh + 32, (byte) 0);
        int m1 = 1, m2 = 2;
        for (int n = 0; n < QK_K; n += 64) {
            for (int j = 0; j < 32; j++) {
                int l1 = s.L[n + j];
                if (l1 > 15) {
                    l1 -= 16;
                    y[qh + j] |= (byte) m1;
                }
                int l2 = s.L[n + j + 32];
                if (l2 > 15) {
                    l2 -= 16;
                    y[qh + j] |= (byte) m2;
                }
                y[ql + j] = (byte) (l1 | (l2 << 4));
            }
            m1 <<= 2;
            m2 <<= 2;
            ql += 32;
        }
    }

    /** block_q6_K: ql[128], qh[64], scales[16] (int8), d (f16). */
    private static void q6_K(float[] x, int xo, byte[] y, int yo, KScratch s) {
        int[] L = s.L;
        float maxScale = 0, maxAbsScale = 0;
        for (int ib = 0; ib < QK_K / 16; ib++) {
            float scale = makeQxQuants(16, 32, x, xo + 16 * ib, L, 16 * ib);
            s.scales[ib] = scale;
            float abs = Math.abs(scale);
            if (abs > maxAbsScale) {
                maxAbsScale = abs;
                maxScale = scale;
            }
        }
        if (maxAbsScale < GROUP_MAX_EPS) {
            java.util.Arrays.fill(y, yo, yo + 210, (byte) 0);
            return;
        }
        float iscale = -128.f / maxScale;
        short d16 = fp16(1 / iscale);
        putI16(y, yo + 208, d16);
        int scOff = yo + 192;
        for (int ib = 0; ib < QK_K / 16; ib++) y[scOff + ib] = (byte) Math.min(127, nearestInt(iscale * s.scales[ib]));
        float dAll = fp16ToFloat(d16);
        for (int j = 0; j < QK_K / 16; j++) {
            float d = dAll * y[scOff + j];
            if (d == 0) continue;
            for (int ii = 0; ii < 16; ii++) {
                int l = nearestInt(x[xo + 16 * j + ii] / d);
                l = Math.max(-32, Math.min(31, l));
                L[16 * j + ii] = l + 32;
            }
        }
        int ql = yo, qh = yo + 128;
        for (int j = 0; j < QK_K; j += 128) {
            for (int l = 0; l < 32; l++) {
                int q1 = L[j + l] & 0xF, q2 = L[j + l + 32] & 0xF, q3 = L[j + l + 64] & 0xF, q4 = L[j + l + 96] & 0xF;
                y[ql + l] = (byte) (q1 | (q3 << 4));
                y[ql + l + 32] = (byte) (q2 | (q4 << 4));
                y[qh + l] = (byte) ((L[j + l] >> 4) | ((L[j + l + 32] >> 4) << 2) | ((L[j + l + 64] >> 4) << 4) | ((L[j + l + 96] >> 4) << 6));
            }
            ql += 64;
            qh += 32;
        }
    }

    // ---- little-endian stores -----------------------------------------------------------------------

    private static void putI16(byte[] b, int off, short v) {
        b[off] = (byte) v;
        b[off + 1] = (byte) (v >> 8);
    }

    private static void putF32(byte[] b, int off, float f) {
        int v = Float.floatToRawIntBits(f);
        b[off] = (byte) v;
        b[off + 1] = (byte) (v >> 8);
        b[off + 2] = (byte) (v >> 16);
        b[off + 3] = (byte) (v >> 24);
    }
}
