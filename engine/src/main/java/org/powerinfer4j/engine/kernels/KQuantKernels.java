package org.powerinfer4j.engine.kernels;

import static org.powerinfer4j.engine.kernels.Blocks.bc;
import static org.powerinfer4j.engine.kernels.Blocks.f16;
import static org.powerinfer4j.engine.kernels.Blocks.i8;
import static org.powerinfer4j.engine.kernels.Blocks.u8;
import static org.powerinfer4j.engine.kernels.Simd.BL;
import static org.powerinfer4j.engine.kernels.Simd.BPARTS;
import static org.powerinfer4j.engine.kernels.Simd.F;
import static org.powerinfer4j.engine.kernels.Simd.FL;

import java.lang.foreign.MemorySegment;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorOperators;
import org.powerinfer4j.engine.tensor.GGMLType;

/**
 * The k-quants Q4_K, Q5_K and Q6_K: 256-element super-blocks with per-sub-block scales (ggml-common.h,
 * ggml-quants.c). Dequantization is bit-identical to ggml / gguf-py: the scale product {@code d * sc} is formed
 * in float first, then multiplied by the quant, then the min product subtracted — never fused.
 *
 * <p>Vector dots: per sub-block, a vector of Σ q·x (and Σ x where there is a min) is folded into accumulators with
 * the sub-block scale, so the per-element work is one int→float conversion and one FMA. Independent
 * accumulators per sub-block position keep several FMA chains in flight.
 */
final class KQuantKernels {
    private KQuantKernels() {}

    static final int QK_K = 256;
    static final int K_SCALE_SIZE = 12;

    /**
     * get_scale_min_k4: the j-th 6-bit scale and min packed in the 12 scale bytes:
     * <pre>
     * if (j < 4) { d = q[j] & 63;                          m = q[j + 4] & 63; }
     * else       { d = (q[j+4] & 0xF) | ((q[j-4] >> 6) << 4); m = (q[j+4] >> 4) | ((q[j-0] >> 6) << 4); }
     * </pre>
     * Returns {@code d | m << 8}.
     */
    static int scaleMin(MemorySegment s, long q, int j) {
        int d, m;
        if (j < 4) {
            d = u8(s, q + j) & 63;
            m = u8(s, q + j + 4) & 63;
        } else {
            d = (u8(s, q + j + 4) & 0xF) | ((u8(s, q + j - 4) >> 6) << 4);
            m = (u8(s, q + j + 4) >> 4) | ((u8(s, q + j) >> 6) << 4);
        }
        return d | m << 8;
    }

    // ================================================================== Q4_K
    // typedef struct {
    //     ggml_half d;                  // super-block scale for quantized scales
    //     ggml_half dmin;               // super-block scale for quantized mins
    //     uint8_t scales[K_SCALE_SIZE]; // scales and mins, quantized with 6 bits
    //     uint8_t qs[QK_K/2];           // 4-bit quants
    // } block_q4_K;                     // 144 bytes
    // dequantize_row_q4_K: for each 64 elements (j) with sub-blocks is, is+1:
    //     d1 = d * sc(is);   m1 = min * m(is);   y[l]      = d1 * (q[l] & 0xF) - m1;   (l < 32)
    //     d2 = d * sc(is+1); m2 = min * m(is+1); y[32 + l] = d2 * (q[l] >> 4)  - m2;
    //     q += 32; is += 2;
    static final int Q4_K_BYTES = 144;

    static final RowKernel Q4_K_SCALAR = new RowKernel() {
        public GGMLType type() { return GGMLType.Q4_K; }

        public void dequantize(MemorySegment s, long off, float[] y, int yo, int n) {
            Blocks.checkBlocks(n, QK_K);
            for (int i = 0; i < n / QK_K; i++) {
                long b = off + (long) i * Q4_K_BYTES;
                float d = f16(s, b), min = f16(s, b + 2);
                long scales = b + 4, q = b + 4 + K_SCALE_SIZE;
                int yi = yo + i * QK_K;
                for (int j = 0, is = 0; j < QK_K; j += 64, is += 2, q += 32) {
                    int sm1 = scaleMin(s, scales, is), sm2 = scaleMin(s, scales, is + 1);
                    float d1 = d * (sm1 & 0xFF), m1 = min * (sm1 >> 8);
                    float d2 = d * (sm2 & 0xFF), m2 = min * (sm2 >> 8);
                    for (int l = 0; l < 32; l++) y[yi + j + l] = d1 * (u8(s, q + l) & 0xF) - m1;
                    for (int l = 0; l < 32; l++) y[yi + j + 32 + l] = d2 * (u8(s, q + l) >> 4) - m2;
                }
            }
        }

        public float dot(MemorySegment s, long off, float[] x, int xo, int n) {
            Blocks.checkBlocks(n, QK_K);
            float sum = 0f;
            for (int i = 0; i < n / QK_K; i++) {
                long b = off + (long) i * Q4_K_BYTES;
                float d = f16(s, b), min = f16(s, b + 2);
                long scales = b + 4, q = b + 4 + K_SCALE_SIZE;
                int xi = xo + i * QK_K;
                for (int j = 0, is = 0; j < QK_K; j += 64, is += 2, q += 32) {
                    int sm1 = scaleMin(s, scales, is), sm2 = scaleMin(s, scales, is + 1);
                    float qx1 = 0f, qx2 = 0f, sx1 = 0f, sx2 = 0f;
                    for (int l = 0; l < 32; l++) {
                        int v = u8(s, q + l);
                        float x1 = x[xi + j + l], x2 = x[xi + j + 32 + l];
                        qx1 += (v & 0xF) * x1;
                        qx2 += (v >> 4) * x2;
                        sx1 += x1;
                        sx2 += x2;
                    }
                    // Σ (d1·q - m1)·x = d1·Σ q·x - m1·Σ x
                    sum += d * (sm1 & 0xFF) * qx1 - min * (sm1 >> 8) * sx1 + d * (sm2 & 0xFF) * qx2 - min * (sm2 >> 8) * sx2;
                }
            }
            return sum;
        }

        public void axpy(MemorySegment s, long off, float alpha, float[] y, int yo, int n) {
            BlockAxpy.axpy(this, Q4_K_BYTES, s, off, alpha, y, yo, n, false);
        }
    };

    static final RowKernel Q4_K_VECTOR = new RowKernel() {
        public GGMLType type() { return GGMLType.Q4_K; }

        public void dequantize(MemorySegment s, long off, float[] y, int yo, int n) {
            Blocks.checkBlocks(n, QK_K);
            for (int i = 0; i < n / QK_K; i++) {
                long b = off + (long) i * Q4_K_BYTES;
                float d = f16(s, b), min = f16(s, b + 2);
                long scales = b + 4, q = b + 4 + K_SCALE_SIZE;
                int yi = yo + i * QK_K;
                for (int j = 0, is = 0; j < QK_K; j += 64, is += 2, q += 32) {
                    int sm1 = scaleMin(s, scales, is), sm2 = scaleMin(s, scales, is + 1);
                    float d1 = d * (sm1 & 0xFF), m1 = min * (sm1 >> 8);
                    float d2 = d * (sm2 & 0xFF), m2 = min * (sm2 >> 8);
                    for (int l = 0; l < 32; l += BL) {
                        ByteVector qb = Blocks.loadBytes(s, q + l);
                        for (int p = 0; p < BPARTS; p++) {
                            IntVector v = Blocks.toInts(qb, p);
                            int e = yi + j + l + p * FL;
                            Blocks.toFloats(v.and(0xF)).mul(d1).sub(m1).intoArray(y, e);
                            Blocks.toFloats(v.lanewise(VectorOperators.LSHR, 4).and(0xF)).mul(d2).sub(m2).intoArray(y, e + 32);
                        }
                    }
                }
            }
        }

        public float dot(MemorySegment s, long off, float[] x, int xo, int n) {
            Blocks.checkBlocks(n, QK_K);
            FloatVector acc1 = FloatVector.zero(F), acc2 = acc1, accM1 = acc1, accM2 = acc1;
            for (int i = 0; i < n / QK_K; i++) {
                long b = off + (long) i * Q4_K_BYTES;
                float d = f16(s, b), min = f16(s, b + 2);
                long scales = b + 4, q = b + 4 + K_SCALE_SIZE;
                int xi = xo + i * QK_K;
                for (int j = 0, is = 0; j < QK_K; j += 64, is += 2, q += 32) {
                    FloatVector qx1 = FloatVector.zero(F), qx2 = qx1, sx1 = qx1, sx2 = qx1;
                    for (int l = 0; l < 32; l += BL) {
                        ByteVector qb = Blocks.loadBytes(s, q + l);
                        for (int p = 0; p < BPARTS; p++) {
                            IntVector v = Blocks.toInts(qb, p);
                            int e = xi + j + l + p * FL;
                            FloatVector x1 = FloatVector.fromArray(F, x, e), x2 = FloatVector.fromArray(F, x, e + 32);
                            qx1 = Blocks.toFloats(v.and(0xF)).fma(x1, qx1);
                            qx2 = Blocks.toFloats(v.lanewise(VectorOperators.LSHR, 4).and(0xF)).fma(x2, qx2);
                            sx1 = sx1.add(x1);
                            sx2 = sx2.add(x2);
                        }
                    }
                    int sm1 = scaleMin(s, scales, is), sm2 = scaleMin(s, scales, is + 1);
                    acc1 = qx1.fma(bc(d * (sm1 & 0xFF)), acc1);
                    acc2 = qx2.fma(bc(d * (sm2 & 0xFF)), acc2);
                    accM1 = sx1.fma(bc(min * (sm1 >> 8)), accM1);
                    accM2 = sx2.fma(bc(min * (sm2 >> 8)), accM2);
                }
            }
            return Simd.sum(acc1.add(acc2).sub(accM1.add(accM2)));
        }

        public void axpy(MemorySegment s, long off, float alpha, float[] y, int yo, int n) {
            BlockAxpy.axpy(this, Q4_K_BYTES, s, off, alpha, y, yo, n, true);
        }
    };

    // ================================================================== Q5_K
    // typedef struct {
    //     ggml_half d;                  // super-block scale for quantized scales
    //     ggml_half dmin;               // super-block scale for quantized mins
    //     uint8_t scales[K_SCALE_SIZE]; // scales and mins, quantized with 6 bits
    //     uint8_t qh[QK_K/8];           // quants, high bit
    //     uint8_t qs[QK_K/2];           // quants, low 4 bits
    // } block_q5_K;                     // 176 bytes
    // dequantize_row_q5_K: for each 64 elements with sub-blocks is, is+1 and high-bit masks u1 = 1<<2k, u2 = 2<<2k:
    //     y[l]      = d1 * ((ql[l] & 0xF) + (qh[l] & u1 ? 16 : 0)) - m1;
    //     y[32 + l] = d2 * ((ql[l]  >> 4) + (qh[l] & u2 ? 16 : 0)) - m2;
    //     ql += 32; is += 2; u1 <<= 2; u2 <<= 2;
    static final int Q5_K_BYTES = 176;

    static final RowKernel Q5_K_SCALAR = new RowKernel() {
        public GGMLType type() { return GGMLType.Q5_K; }

        public void dequantize(MemorySegment s, long off, float[] y, int yo, int n) {
            Blocks.checkBlocks(n, QK_K);
            for (int i = 0; i < n / QK_K; i++) {
                long b = off + (long) i * Q5_K_BYTES;
                float d = f16(s, b), min = f16(s, b + 2);
                long scales = b + 4, qh = b + 16, ql = b + 48;
                int yi = yo + i * QK_K;
                int u1 = 1, u2 = 2;
                for (int j = 0, is = 0; j < QK_K; j += 64, is += 2, ql += 32, u1 <<= 2, u2 <<= 2) {
                    int sm1 = scaleMin(s, scales, is), sm2 = scaleMin(s, scales, is + 1);
                    float d1 = d * (sm1 & 0xFF), m1 = min * (sm1 >> 8);
                    float d2 = d * (sm2 & 0xFF), m2 = min * (sm2 >> 8);
                    for (int l = 0; l < 32; l++) y[yi + j + l] = d1 * ((u8(s, ql + l) & 0xF) + ((u8(s, qh + l) & u1) != 0 ? 16 : 0)) - m1;
                    for (int l = 0; l < 32; l++) y[yi + j + 32 + l] = d2 * ((u8(s, ql + l) >> 4) + ((u8(s, qh + l) & u2) != 0 ? 16 : 0)) - m2;
                }
            }
        }

        public float dot(MemorySegment s, long off, float[] x, int xo, int n) {
            Blocks.checkBlocks(n, QK_K);
            float sum = 0f;
            for (int i = 0; i < n / QK_K; i++) {
                long b = off + (long) i * Q5_K_BYTES;
                float d = f16(s, b), min = f16(s, b + 2);
                long scales = b + 4, qh = b + 16, ql = b + 48;
                int xi = xo + i * QK_K;
                int u1 = 1, u2 = 2;
                for (int j = 0, is = 0; j < QK_K; j += 64, is += 2, ql += 32, u1 <<= 2, u2 <<= 2) {
                    int sm1 = scaleMin(s, scales, is), sm2 = scaleMin(s, scales, is + 1);
                    float qx1 = 0f, qx2 = 0f, sx1 = 0f, sx2 = 0f;
                    for (int l = 0; l < 32; l++) {
                        int v = u8(s, ql + l), h = u8(s, qh + l);
                        float x1 = x[xi + j + l], x2 = x[xi + j + 32 + l];
                        qx1 += ((v & 0xF) + ((h & u1) != 0 ? 16 : 0)) * x1;
                        qx2 += ((v >> 4) + ((h & u2) != 0 ? 16 : 0)) * x2;
                        sx1 += x1;
                        sx2 += x2;
                    }
                    sum += d * (sm1 & 0xFF) * qx1 - min * (sm1 >> 8) * sx1 + d * (sm2 & 0xFF) * qx2 - min * (sm2 >> 8) * sx2;
                }
            }
            return sum;
        }

        public void axpy(MemorySegment s, long off, float alpha, float[] y, int yo, int n) {
            BlockAxpy.axpy(this, Q5_K_BYTES, s, off, alpha, y, yo, n, false);
        }
    };

    static final RowKernel Q5_K_VECTOR = new RowKernel() {
        public GGMLType type() { return GGMLType.Q5_K; }

        public void dequantize(MemorySegment s, long off, float[] y, int yo, int n) {
            Blocks.checkBlocks(n, QK_K);
            for (int i = 0; i < n / QK_K; i++) {
                long b = off + (long) i * Q5_K_BYTES;
                float d = f16(s, b), min = f16(s, b + 2);
                for (int g = 0; g < 8; g++) { // sub-block g: same walk as dot below
                    long ql = b + 48 + 32 * (g >> 1), qh = b + 16;
                    int sm = scaleMin(s, b + 4, g);
                    float dg = d * (sm & 0xFF), mg = min * (sm >> 8);
                    int ye = yo + i * QK_K + 32 * g;
                    for (int l = 0; l < 32; l += BL) {
                        ByteVector qb = Blocks.loadBytes(s, ql + l), hb = Blocks.loadBytes(s, qh + l);
                        for (int p = 0; p < BPARTS; p++) {
                            Blocks.toFloats(q5(Blocks.toInts(qb, p), Blocks.toInts(hb, p), g)).mul(dg).sub(mg).intoArray(y, ye + l + p * FL);
                        }
                    }
                }
            }
        }

        public float dot(MemorySegment s, long off, float[] x, int xo, int n) {
            Blocks.checkBlocks(n, QK_K);
            FloatVector accD = FloatVector.zero(F), accM = accD;
            for (int i = 0; i < n / QK_K; i++) {
                long b = off + (long) i * Q5_K_BYTES;
                float d = f16(s, b), min = f16(s, b + 2);
                // one sub-block (32 elements) per iteration: a loop, not unrolled copies, keeps the compiled
                // method under C2's inlining budget so that every vector operation is intrinsified
                for (int g = 0; g < 8; g++) {
                    long ql = b + 48 + 32 * (g >> 1), qh = b + 16;
                    int xe = xo + i * QK_K + 32 * g;
                    FloatVector qx = FloatVector.zero(F), sx = qx;
                    for (int l = 0; l < 32; l += BL) {
                        ByteVector qb = Blocks.loadBytes(s, ql + l), hb = Blocks.loadBytes(s, qh + l);
                        for (int p = 0; p < BPARTS; p++) {
                            FloatVector xv = FloatVector.fromArray(F, x, xe + l + p * FL);
                            qx = Blocks.toFloats(q5(Blocks.toInts(qb, p), Blocks.toInts(hb, p), g)).fma(xv, qx);
                            sx = sx.add(xv);
                        }
                    }
                    int sm = scaleMin(s, b + 4, g);
                    accD = qx.fma(bc(d * (sm & 0xFF)), accD);
                    accM = sx.fma(bc(min * (sm >> 8)), accM);
                }
            }
            return Simd.sum(accD.sub(accM));
        }

        /** Quant of sub-block g: nibble (low for even g, high for odd g) plus 16 × bit g of qh. */
        private static IntVector q5(IntVector v, IntVector h, int g) {
            return v.lanewise(VectorOperators.LSHR, 4 * (g & 1)).and(0xF).or(h.lanewise(VectorOperators.LSHR, g).and(1).lanewise(VectorOperators.LSHL, 4));
        }

        public void axpy(MemorySegment s, long off, float alpha, float[] y, int yo, int n) {
            BlockAxpy.axpy(this, Q5_K_BYTES, s, off, alpha, y, yo, n, true);
        }
    };

    // ================================================================== Q6_K
    // typedef struct {
    //     uint8_t ql[QK_K/2];      // quants, lower 4 bits
    //     uint8_t qh[QK_K/4];      // quants, upper 2 bits
    //     int8_t  scales[QK_K/16]; // scales, quantized with 8 bits
    //     ggml_half d;             // super-block scale
    // } block_q6_K;                // 210 bytes
    // dequantize_row_q6_K: for each 128 elements (n), l < 32, is = l/16:
    //     q1 = (int8_t)((ql[l +  0] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;   y[l +  0] = d * sc[is + 0] * q1;
    //     q2 = (int8_t)((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;   y[l + 32] = d * sc[is + 2] * q2;
    //     q3 = (int8_t)((ql[l +  0]  >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;   y[l + 64] = d * sc[is + 4] * q3;
    //     q4 = (int8_t)((ql[l + 32]  >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;   y[l + 96] = d * sc[is + 6] * q4;
    //     then y += 128; ql += 64; qh += 32; sc += 8;
    static final int Q6_K_BYTES = 210;

    static final RowKernel Q6_K_SCALAR = new RowKernel() {
        public GGMLType type() { return GGMLType.Q6_K; }

        public void dequantize(MemorySegment s, long off, float[] y, int yo, int n) {
            Blocks.checkBlocks(n, QK_K);
            for (int i = 0; i < n / QK_K; i++) {
                long b = off + (long) i * Q6_K_BYTES;
                float d = f16(s, b + 208);
                long ql = b, qh = b + 128, sc = b + 192;
                for (int h = 0; h < QK_K; h += 128, ql += 64, qh += 32, sc += 8) {
                    int yi = yo + i * QK_K + h;
                    for (int l = 0; l < 32; l++) {
                        int is = l / 16;
                        int a = u8(s, ql + l), c = u8(s, ql + l + 32), hb = u8(s, qh + l);
                        int q1 = ((a & 0xF) | (((hb >> 0) & 3) << 4)) - 32;
                        int q2 = ((c & 0xF) | (((hb >> 2) & 3) << 4)) - 32;
                        int q3 = ((a >> 4) | (((hb >> 4) & 3) << 4)) - 32;
                        int q4 = ((c >> 4) | (((hb >> 6) & 3) << 4)) - 32;
                        y[yi + l] = d * i8(s, sc + is) * q1;
                        y[yi + l + 32] = d * i8(s, sc + is + 2) * q2;
                        y[yi + l + 64] = d * i8(s, sc + is + 4) * q3;
                        y[yi + l + 96] = d * i8(s, sc + is + 6) * q4;
                    }
                }
            }
        }

        public float dot(MemorySegment s, long off, float[] x, int xo, int n) {
            Blocks.checkBlocks(n, QK_K);
            float sum = 0f;
            for (int i = 0; i < n / QK_K; i++) {
                long b = off + (long) i * Q6_K_BYTES;
                float d = f16(s, b + 208);
                long ql = b, qh = b + 128, sc = b + 192;
                for (int h = 0; h < QK_K; h += 128, ql += 64, qh += 32, sc += 8) {
                    int xi = xo + i * QK_K + h;
                    for (int is = 0; is < 2; is++) {
                        float p1 = 0f, p2 = 0f, p3 = 0f, p4 = 0f;
                        for (int l = 16 * is; l < 16 * is + 16; l++) {
                            int a = u8(s, ql + l), c = u8(s, ql + l + 32), hb = u8(s, qh + l);
                            p1 += (((a & 0xF) | (((hb >> 0) & 3) << 4)) - 32) * x[xi + l];
                            p2 += (((c & 0xF) | (((hb >> 2) & 3) << 4)) - 32) * x[xi + l + 32];
                            p3 += (((a >> 4) | (((hb >> 4) & 3) << 4)) - 32) * x[xi + l + 64];
                            p4 += (((c >> 4) | (((hb >> 6) & 3) << 4)) - 32) * x[xi + l + 96];
                        }
                        sum += d * (i8(s, sc + is) * p1 + i8(s, sc + is + 2) * p2 + i8(s, sc + is + 4) * p3 + i8(s, sc + is + 6) * p4);
                    }
                }
            }
            return sum;
        }

        public void axpy(MemorySegment s, long off, float alpha, float[] y, int yo, int n) {
            BlockAxpy.axpy(this, Q6_K_BYTES, s, off, alpha, y, yo, n, false);
        }
    };

    static final RowKernel Q6_K_VECTOR = new RowKernel() {
        public GGMLType type() { return GGMLType.Q6_K; }

        public void dequantize(MemorySegment s, long off, float[] y, int yo, int n) {
            Blocks.checkBlocks(n, QK_K);
            for (int i = 0; i < n / QK_K; i++) {
                long b = off + (long) i * Q6_K_BYTES;
                float d = f16(s, b + 208);
                for (int sg = 0; sg < 16; sg++) { // same group walk as dot below
                    int h = sg >> 3, k = (sg >> 1) & 3, l0 = 16 * (sg & 1);
                    long ql = b + 64 * h + 32 * (k & 1) + l0, qh = b + 128 + 32 * h + l0;
                    float ds = d * i8(s, b + 192 + 8 * h + 2 * k + (sg & 1)); // (d * sc) first, as ggml
                    int ye = yo + i * QK_K + 16 * sg;
                    for (int c = 0; c < 16; c += BL) {
                        ByteVector lb = Blocks.loadBytes(s, ql + c), hb = Blocks.loadBytes(s, qh + c);
                        for (int part = 0; part < BPARTS; part++) {
                            IntVector q = q6(Blocks.toInts(lb, part), Blocks.toInts(hb, part), 4 * (k >> 1), 2 * k);
                            Blocks.toFloats(q).mul(ds).intoArray(y, ye + c + part * FL);
                        }
                    }
                }
            }
        }

        public float dot(MemorySegment s, long off, float[] x, int xo, int n) {
            Blocks.checkBlocks(n, QK_K);
            FloatVector acc = FloatVector.zero(F);
            for (int i = 0; i < n / QK_K; i++) {
                long b = off + (long) i * Q6_K_BYTES;
                float d = f16(s, b + 208);
                // one 16-element scale group per iteration (a loop keeps the method within C2's inlining budget).
                // Group sg covers y[16*sg ..]: half h = sg/8, quarter k = (sg/2)%4, l = 16*(sg%2) + c.
                for (int sg = 0; sg < 16; sg++) {
                    int h = sg >> 3, k = (sg >> 1) & 3, l0 = 16 * (sg & 1);
                    long ql = b + 64 * h + 32 * (k & 1) + l0, qh = b + 128 + 32 * h + l0;
                    int xe = xo + i * QK_K + 16 * sg;
                    FloatVector p = FloatVector.zero(F);
                    for (int c = 0; c < 16; c += BL) {
                        ByteVector lb = Blocks.loadBytes(s, ql + c), hb = Blocks.loadBytes(s, qh + c);
                        for (int part = 0; part < BPARTS; part++) {
                            IntVector q = q6(Blocks.toInts(lb, part), Blocks.toInts(hb, part), 4 * (k >> 1), 2 * k);
                            p = Blocks.toFloats(q).fma(FloatVector.fromArray(F, x, xe + c + part * FL), p);
                        }
                    }
                    acc = p.fma(bc(d * i8(s, b + 192 + 8 * h + 2 * k + (sg & 1))), acc);
                }
            }
            return Simd.sum(acc);
        }

        /** ((ql >> nibbleShift) & 0xF) | ((qh >> qhShift) & 3) << 4, minus 32. */
        private static IntVector q6(IntVector ql, IntVector qh, int nibbleShift, int qhShift) {
            IntVector hi = qh.lanewise(VectorOperators.LSHR, qhShift).lanewise(VectorOperators.LSHL, 4).and(0x30);
            return ql.lanewise(VectorOperators.LSHR, nibbleShift).and(0xF).or(hi).sub(32);
        }

        public void axpy(MemorySegment s, long off, float alpha, float[] y, int yo, int n) {
            BlockAxpy.axpy(this, Q6_K_BYTES, s, off, alpha, y, yo, n, true);
        }
    };
}
