package org.powerinfer4j.engine.tensor;

/** Scalar dequantizers written from ggml's {@code dequantize_row_*}, independent of the engine's kernels. */
final class RefDequant {
    private RefDequant() {}

    static float[] dequantize(GGMLType type, byte[] b, int n) {
        float[] y = new float[n];
        switch (type) {
            case F32 -> { for (int i = 0; i < n; i++) y[i] = Float.intBitsToFloat(i32(b, 4 * i)); }
            case F16 -> { for (int i = 0; i < n; i++) y[i] = Float.float16ToFloat(i16(b, 2 * i)); }
            case BF16 -> { for (int i = 0; i < n; i++) y[i] = Float.intBitsToFloat((i16(b, 2 * i) & 0xffff) << 16); }
            case Q8_0 -> {
                for (int blk = 0; blk < n / 32; blk++) {
                    int o = 34 * blk;
                    float d = h(b, o);
                    for (int j = 0; j < 32; j++) y[32 * blk + j] = b[o + 2 + j] * d;
                }
            }
            case Q4_0 -> {
                for (int blk = 0; blk < n / 32; blk++) {
                    int o = 18 * blk;
                    float d = h(b, o);
                    for (int j = 0; j < 16; j++) {
                        int q = b[o + 2 + j] & 0xFF;
                        y[32 * blk + j] = ((q & 0xF) - 8) * d;
                        y[32 * blk + j + 16] = ((q >> 4) - 8) * d;
                    }
                }
            }
            case Q4_1 -> {
                for (int blk = 0; blk < n / 32; blk++) {
                    int o = 20 * blk;
                    float d = h(b, o), m = h(b, o + 2);
                    for (int j = 0; j < 16; j++) {
                        int q = b[o + 4 + j] & 0xFF;
                        y[32 * blk + j] = (q & 0xF) * d + m;
                        y[32 * blk + j + 16] = (q >> 4) * d + m;
                    }
                }
            }
            case Q4_K -> {
                for (int blk = 0; blk < n / 256; blk++) {
                    int o = 144 * blk, yo = 256 * blk;
                    float d = h(b, o), min = h(b, o + 2);
                    int q = o + 16, is = 0;
                    for (int j = 0; j < 256; j += 64) {
                        int sm1 = Quantizer.scaleMinK4(is, b, o + 4), sm2 = Quantizer.scaleMinK4(is + 1, b, o + 4);
                        float d1 = d * (sm1 & 0xFF), m1 = min * (sm1 >> 8), d2 = d * (sm2 & 0xFF), m2 = min * (sm2 >> 8);
                        for (int l = 0; l < 32; l++) y[yo++] = d1 * (b[q + l] & 0xF) - m1;
                        for (int l = 0; l < 32; l++) y[yo++] = d2 * ((b[q + l] & 0xFF) >> 4) - m2;
                        q += 32;
                        is += 2;
                    }
                }
            }
            case Q5_K -> {
                for (int blk = 0; blk < n / 256; blk++) {
                    int o = 176 * blk, yo = 256 * blk;
                    float d = h(b, o), min = h(b, o + 2);
                    int qh = o + 16, ql = o + 48, is = 0, u1 = 1, u2 = 2;
                    for (int j = 0; j < 256; j += 64) {
                        int sm1 = Quantizer.scaleMinK4(is, b, o + 4), sm2 = Quantizer.scaleMinK4(is + 1, b, o + 4);
                        float d1 = d * (sm1 & 0xFF), m1 = min * (sm1 >> 8), d2 = d * (sm2 & 0xFF), m2 = min * (sm2 >> 8);
                        for (int l = 0; l < 32; l++) y[yo++] = d1 * ((b[ql + l] & 0xF) + ((b[qh + l] & u1) != 0 ? 16 : 0)) - m1;
                        for (int l = 0; l < 32; l++) y[yo++] = d2 * (((b[ql + l] & 0xFF) >> 4) + ((b[qh + l] & u2) != 0 ? 16 : 0)) - m2;
                        ql += 32;
                        is += 2;
                        u1 <<= 2;
                        u2 <<= 2;
                    }
                }
            }
            case Q6_K -> {
                for (int blk = 0; blk < n / 256; blk++) {
                    int o = 210 * blk, yo = 256 * blk;
                    float d = h(b, o + 208);
                    int ql = o, qh = o + 128, sc = o + 192;
                    for (int nn = 0; nn < 256; nn += 128) {
                        for (int l = 0; l < 32; l++) {
                            int is = l / 16;
                            int hb = b[qh + l] & 0xFF;
                            int q1 = ((b[ql + l] & 0xF) | ((hb & 3) << 4)) - 32;
                            int q2 = ((b[ql + l + 32] & 0xF) | (((hb >> 2) & 3) << 4)) - 32;
                            int q3 = (((b[ql + l] & 0xFF) >> 4) | (((hb >> 4) & 3) << 4)) - 32;
                            int q4 = (((b[ql + l + 32] & 0xFF) >> 4) | (((hb >> 6) & 3) << 4)) - 32;
                            y[yo + nn + l] = d * b[sc + is] * q1;
                            y[yo + nn + l + 32] = d * b[sc + is + 2] * q2;
                            y[yo + nn + l + 64] = d * b[sc + is + 4] * q3;
                            y[yo + nn + l + 96] = d * b[sc + is + 6] * q4;
                        }
                        ql += 64;
                        qh += 32;
                        sc += 8;
                    }
                }
            }
            default -> throw new IllegalArgumentException(type.toString());
        }
        return y;
    }

    private static float h(byte[] b, int o) {
        return Float.float16ToFloat(i16(b, o));
    }

    private static short i16(byte[] b, int o) {
        return (short) ((b[o] & 0xFF) | (b[o + 1] << 8));
    }

    private static int i32(byte[] b, int o) {
        return (b[o] & 0xFF) | (b[o + 1] & 0xFF) << 8 | (b[o + 2] & 0xFF) << 16 | b[o + 3] << 24;
    }
}
