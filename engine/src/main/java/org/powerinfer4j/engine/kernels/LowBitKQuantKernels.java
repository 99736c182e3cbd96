package org.powerinfer4j.engine.kernels;

import static org.powerinfer4j.engine.kernels.Blocks.bc;
import static org.powerinfer4j.engine.kernels.Blocks.f16;
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
 * The 2- and 3-bit k-quants Q2_K and Q3_K: 256-element super-blocks of sixteen 16-element groups, each with its
 * own 4- or 6-bit scale (ggml-common.h, ggml-quants.c). Dequantization is bit-identical to ggml / gguf-py: the
 * group scale {@code d * sc} is rounded to float first, then multiplied by the quant, then the min product
 * subtracted (Q2_K) — never fused.
 *
 * <p>Both pack four 2-bit planes into 32 bytes per 128 elements: element {@code 128n + 32j + l} (l &lt; 32) is bits
 * {@code 2j, 2j+1} of byte {@code 32n + l}. So group g = 8n + 2j + h (h = l / 16) reads 16 consecutive bytes at one
 * shift, which the vector path does one group per iteration (a loop, not unrolled copies, keeps the methods under
 * C2's inlining budget so every vector operation is intrinsified): Σ q·x (and Σ x for Q2_K's min) as vectors,
 * folded into the accumulators with the group's scale. axpy is fused the same way, rounding w as dequantize does.
 */
final class LowBitKQuantKernels {
    private LowBitKQuantKernels() {}

    static final int QK_K = 256;

    // ================================================================== Q2_K
    // typedef struct {
    //     uint8_t scales[QK_K/16]; // scales and mins, quantized with 4 bits
    //     uint8_t qs[QK_K/4];      // quants
    //     ggml_half d;             // super-block scale for quantized scales
    //     ggml_half dmin;          // super-block scale for quantized mins
    // } block_q2_K;                // 84 bytes
    // dequantize_row_q2_K: for n in {0, 128}, j < 4 (shift = 2j), two groups of 16:
    //     sc = scales[is++]; dl = d * (sc & 0xF); ml = min * (sc >> 4);
    //     y[l] = dl * ((int8_t)((q[l] >> shift) & 3)) - ml;          l < 16, then the same with q[l + 16]
    //     q += 32 after each n
    static final int Q2_K_BYTES = 84;

    static final RowKernel Q2_K_SCALAR = new RowKernel() {
        public GGMLType type() { return GGMLType.Q2_K; }

        public void dequantize(MemorySegment s, long off, float[] y, int yo, int n) {
            Blocks.checkBlocks(n, QK_K);
            for (int i = 0; i < n / QK_K; i++) {
                long b = off + (long) i * Q2_K_BYTES;
                float d = f16(s, b + 80), min = f16(s, b + 82);
                long q = b + 16;
                int yi = yo + i * QK_K, is = 0;
                for (int nn = 0; nn < QK_K; nn += 128, q += 32) {
                    for (int j = 0, shift = 0; j < 4; j++, shift += 2) {
                        int sc = u8(s, b + is++);
                        float dl = d * (sc & 0xF), ml = min * (sc >> 4);
                        for (int l = 0; l < 16; l++) y[yi++] = dl * ((u8(s, q + l) >> shift) & 3) - ml;
                        sc = u8(s, b + is++);
                        dl = d * (sc & 0xF);
                        ml = min * (sc >> 4);
                        for (int l = 0; l < 16; l++) y[yi++] = dl * ((u8(s, q + l + 16) >> shift) & 3) - ml;
                    }
                }
            }
        }

        public float dot(MemorySegment s, long off, float[] x, int xo, int n) {
            Blocks.checkBlocks(n, QK_K);
            float sum = 0f;
            for (int i = 0; i < n / QK_K; i++) {
                long b = off + (long) i * Q2_K_BYTES;
                float d = f16(s, b + 80), min = f16(s, b + 82);
                for (int g = 0; g < 16; g++) {
                    long q = b + 16 + 32 * (g >> 3) + 16 * (g & 1);
                    int shift = 2 * ((g >> 1) & 3), xe = xo + i * QK_K + 16 * g;
                    float qx = 0f, sx = 0f;
                    for (int l = 0; l < 16; l++) {
                        qx += ((u8(s, q + l) >> shift) & 3) * x[xe + l];
                        sx += x[xe + l];
                    }
                    // Σ (dl·q - ml)·x = dl·Σ q·x - ml·Σ x
                    int sc = u8(s, b + g);
                    sum += d * (sc & 0xF) * qx - min * (sc >> 4) * sx;
                }
            }
            return sum;
        }

        public void axpy(MemorySegment s, long off, float alpha, float[] y, int yo, int n) {
            Blocks.checkBlocks(n, QK_K);
            for (int i = 0; i < n / QK_K; i++) {
                long b = off + (long) i * Q2_K_BYTES;
                float d = f16(s, b + 80), min = f16(s, b + 82);
                for (int g = 0; g < 16; g++) {
                    long q = b + 16 + 32 * (g >> 3) + 16 * (g & 1);
                    int shift = 2 * ((g >> 1) & 3), ye = yo + i * QK_K + 16 * g, sc = u8(s, b + g);
                    float dl = d * (sc & 0xF), ml = min * (sc >> 4);
                    for (int l = 0; l < 16; l++) y[ye + l] += alpha * (dl * ((u8(s, q + l) >> shift) & 3) - ml);
                }
            }
        }
    };

    static final RowKernel Q2_K_VECTOR = new RowKernel() {
        public GGMLType type() { return GGMLType.Q2_K; }

        public void dequantize(MemorySegment s, long off, float[] y, int yo, int n) {
            Blocks.checkBlocks(n, QK_K);
            for (int i = 0; i < n / QK_K; i++) {
                long b = off + (long) i * Q2_K_BYTES;
                float d = f16(s, b + 80), min = f16(s, b + 82);
                for (int g = 0; g < 16; g++) {
                    long q = b + 16 + 32 * (g >> 3) + 16 * (g & 1);
                    int shift = 2 * ((g >> 1) & 3), ye = yo + i * QK_K + 16 * g, sc = u8(s, b + g);
                    float dl = d * (sc & 0xF), ml = min * (sc >> 4);
                    for (int c = 0; c < 16; c += BL) {
                        ByteVector qb = Blocks.loadBytes(s, q + c);
                        for (int p = 0; p < BPARTS; p++) {
                            IntVector v = Blocks.toInts(qb, p).lanewise(VectorOperators.LSHR, shift).and(3);
                            Blocks.toFloats(v).mul(dl).sub(ml).intoArray(y, ye + c + p * FL);
                        }
                    }
                }
            }
        }

        public float dot(MemorySegment s, long off, float[] x, int xo, int n) {
            Blocks.checkBlocks(n, QK_K);
            FloatVector accD = FloatVector.zero(F), accM = accD;
            for (int i = 0; i < n / QK_K; i++) {
                long b = off + (long) i * Q2_K_BYTES;
                float d = f16(s, b + 80), min = f16(s, b + 82);
                for (int g = 0; g < 16; g++) {
                    long q = b + 16 + 32 * (g >> 3) + 16 * (g & 1);
                    int shift = 2 * ((g >> 1) & 3), xe = xo + i * QK_K + 16 * g;
                    FloatVector qx = FloatVector.zero(F), sx = qx;
                    for (int c = 0; c < 16; c += BL) {
                        ByteVector qb = Blocks.loadBytes(s, q + c);
                        for (int p = 0; p < BPARTS; p++) {
                            FloatVector xv = FloatVector.fromArray(F, x, xe + c + p * FL);
                            qx = Blocks.toFloats(Blocks.toInts(qb, p).lanewise(VectorOperators.LSHR, shift).and(3)).fma(xv, qx);
                            sx = sx.add(xv);
                        }
                    }
                    int sc = u8(s, b + g);
                    accD = qx.fma(bc(d * (sc & 0xF)), accD);
                    accM = sx.fma(bc(min * (sc >> 4)), accM);
                }
            }
            return Simd.sum(accD.sub(accM));
        }

        public void axpy(MemorySegment s, long off, float alpha, float[] y, int yo, int n) {
            Blocks.checkBlocks(n, QK_K);
            FloatVector a = bc(alpha);
            for (int i = 0; i < n / QK_K; i++) {
                long b = off + (long) i * Q2_K_BYTES;
                float d = f16(s, b + 80), min = f16(s, b + 82);
                for (int g = 0; g < 16; g++) {
                    long q = b + 16 + 32 * (g >> 3) + 16 * (g & 1);
                    int shift = 2 * ((g >> 1) & 3), ye = yo + i * QK_K + 16 * g, sc = u8(s, b + g);
                    float dl = d * (sc & 0xF), ml = min * (sc >> 4);
                    for (int c = 0; c < 16; c += BL) {
                        ByteVector qb = Blocks.loadBytes(s, q + c);
                        for (int p = 0; p < BPARTS; p++) {
                            int e = ye + c + p * FL;
                            IntVector v = Blocks.toInts(qb, p).lanewise(VectorOperators.LSHR, shift).and(3);
                            Blocks.toFloats(v).mul(dl).sub(ml).fma(a, FloatVector.fromArray(F, y, e)).intoArray(y, e);
                        }
                    }
                }
            }
        }
    };

    // ================================================================== Q3_K
    // typedef struct {
    //     uint8_t hmask[QK_K/8]; // quants - high bit
    //     uint8_t qs[QK_K/4];    // quants - low 2 bits
    //     uint8_t scales[12];    // scales, quantized with 6 bits
    //     ggml_half d;           // super-block scale
    // } block_q3_K;              // 110 bytes
    // dequantize_row_q3_K: scales unpacked to 16 6-bit values (below); for n in {0, 128}, j < 4 (shift = 2j,
    // m = 1 << (4n/128 + j)), two groups of 16:
    //     dl = d_all * (scales[is++] - 32);
    //     y[l] = dl * ((int8_t)((q[l] >> shift) & 3) - ((hm[l] & m) ? 0 : 4));   l < 16, then q[l+16], hm[l+16]
    //     q += 32 after each n (hm is not advanced: bit m selects the plane)
    static final int Q3_K_BYTES = 110;

    /**
     * The g-th 6-bit scale minus 32 (what ggml's kmask shuffle of the 12 scale bytes yields): low 4 bits are the
     * low (g &lt; 8) or high (g ≥ 8) nibble of byte g % 8, the top 2 bits are bits 2·(g/4).. of byte 8 + g % 4.
     */
    static int q3Scale(MemorySegment s, long scales, int g) {
        int lo = g < 8 ? u8(s, scales + g) & 0xF : u8(s, scales + g - 8) >> 4;
        int hi = (u8(s, scales + 8 + (g & 3)) >> (2 * (g >> 2))) & 3;
        return (lo | hi << 4) - 32;
    }

    static final RowKernel Q3_K_SCALAR = new RowKernel() {
        public GGMLType type() { return GGMLType.Q3_K; }

        public void dequantize(MemorySegment s, long off, float[] y, int yo, int n) {
            Blocks.checkBlocks(n, QK_K);
            for (int i = 0; i < n / QK_K; i++) {
                long b = off + (long) i * Q3_K_BYTES;
                float dAll = f16(s, b + 108);
                long q = b + 32, hm = b;
                int yi = yo + i * QK_K, is = 0, m = 1;
                for (int nn = 0; nn < QK_K; nn += 128, q += 32) {
                    for (int j = 0, shift = 0; j < 4; j++, shift += 2, m <<= 1) {
                        float dl = dAll * q3Scale(s, b + 96, is++);
                        for (int l = 0; l < 16; l++) y[yi++] = dl * (((u8(s, q + l) >> shift) & 3) - ((u8(s, hm + l) & m) != 0 ? 0 : 4));
                        dl = dAll * q3Scale(s, b + 96, is++);
                        for (int l = 0; l < 16; l++) y[yi++] = dl * (((u8(s, q + l + 16) >> shift) & 3) - ((u8(s, hm + l + 16) & m) != 0 ? 0 : 4));
                    }
                }
            }
        }

        public float dot(MemorySegment s, long off, float[] x, int xo, int n) {
            Blocks.checkBlocks(n, QK_K);
            float sum = 0f;
            for (int i = 0; i < n / QK_K; i++) {
                long b = off + (long) i * Q3_K_BYTES;
                float dAll = f16(s, b + 108);
                for (int g = 0; g < 16; g++) {
                    int h = 16 * (g & 1), j = (g >> 1) & 3, m = 1 << (4 * (g >> 3) + j);
                    long q = b + 32 + 32 * (g >> 3) + h;
                    int xe = xo + i * QK_K + 16 * g;
                    float p = 0f;
                    for (int l = 0; l < 16; l++) {
                        p += (((u8(s, q + l) >> 2 * j) & 3) - ((u8(s, b + h + l) & m) != 0 ? 0 : 4)) * x[xe + l];
                    }
                    sum += dAll * q3Scale(s, b + 96, g) * p;
                }
            }
            return sum;
        }

        public void axpy(MemorySegment s, long off, float alpha, float[] y, int yo, int n) {
            Blocks.checkBlocks(n, QK_K);
            for (int i = 0; i < n / QK_K; i++) {
                long b = off + (long) i * Q3_K_BYTES;
                float dAll = f16(s, b + 108);
                for (int g = 0; g < 16; g++) {
                    int h = 16 * (g & 1), j = (g >> 1) & 3, m = 1 << (4 * (g >> 3) + j);
                    long q = b + 32 + 32 * (g >> 3) + h;
                    int ye = yo + i * QK_K + 16 * g;
                    float dl = dAll * q3Scale(s, b + 96, g);
                    for (int l = 0; l < 16; l++) {
                        y[ye + l] += alpha * (dl * (((u8(s, q + l) >> 2 * j) & 3) - ((u8(s, b + h + l) & m) != 0 ? 0 : 4)));
                    }
                }
            }
        }
    };

    /** Q3_K quants in -4..3: the 2-bit plane at {@code shift} of ql, minus 4 unless bit {@code bit} of hm is set. */
    private static IntVector q3(IntVector ql, IntVector hm, int shift, int bit) {
        return ql.lanewise(VectorOperators.LSHR, shift).and(3).or(hm.lanewise(VectorOperators.LSHR, bit).and(1).lanewise(VectorOperators.LSHL, 2)).sub(4);
    }

    static final RowKernel Q3_K_VECTOR = new RowKernel() {
        public GGMLType type() { return GGMLType.Q3_K; }

        public void dequantize(MemorySegment s, long off, float[] y, int yo, int n) {
            Blocks.checkBlocks(n, QK_K);
            for (int i = 0; i < n / QK_K; i++) {
                long b = off + (long) i * Q3_K_BYTES;
                float dAll = f16(s, b + 108);
                for (int g = 0; g < 16; g++) {
                    int h = 16 * (g & 1), j = (g >> 1) & 3, bit = 4 * (g >> 3) + j;
                    long q = b + 32 + 32 * (g >> 3) + h;
                    int ye = yo + i * QK_K + 16 * g;
                    float dl = dAll * q3Scale(s, b + 96, g);
                    for (int c = 0; c < 16; c += BL) {
                        ByteVector qb = Blocks.loadBytes(s, q + c), hb = Blocks.loadBytes(s, b + h + c);
                        for (int p = 0; p < BPARTS; p++) {
                            Blocks.toFloats(q3(Blocks.toInts(qb, p), Blocks.toInts(hb, p), 2 * j, bit)).mul(dl).intoArray(y, ye + c + p * FL);
                        }
                    }
                }
            }
        }

        public float dot(MemorySegment s, long off, float[] x, int xo, int n) {
            Blocks.checkBlocks(n, QK_K);
            FloatVector acc = FloatVector.zero(F);
            for (int i = 0; i < n / QK_K; i++) {
                long b = off + (long) i * Q3_K_BYTES;
                float dAll = f16(s, b + 108);
                for (int g = 0; g < 16; g++) {
                    int h = 16 * (g & 1), j = (g >> 1) & 3, bit = 4 * (g >> 3) + j;
                    long q = b + 32 + 32 * (g >> 3) + h;
                    int xe = xo + i * QK_K + 16 * g;
                    FloatVector p = FloatVector.zero(F);
                    for (int c = 0; c < 16; c += BL) {
                        ByteVector qb = Blocks.loadBytes(s, q + c), hb = Blocks.loadBytes(s, b + h + c);
                        for (int part = 0; part < BPARTS; part++) {
                            IntVector v = q3(Blocks.toInts(qb, part), Blocks.toInts(hb, part), 2 * j, bit);
                            p = Blocks.toFloats(v).fma(FloatVector.fromArray(F, x, xe + c + part * FL), p);
                        }
                    }
                    acc = p.fma(bc(dAll * q3Scale(s, b + 96, g)), acc);
                }
            }
            return Simd.sum(acc);
        }

        public void axpy(MemorySegment s, long off, float alpha, float[] y, int yo, int n) {
            Blocks.checkBlocks(n, QK_K);
            FloatVector a = bc(alpha);
            for (int i = 0; i < n / QK_K; i++) {
                long b = off + (long) i * Q3_K_BYTES;
                float dAll = f16(s, b + 108);
                for (int g = 0; g < 16; g++) {
                    int h = 16 * (g & 1), j = (g >> 1) & 3, bit = 4 * (g >> 3) + j;
                    long q = b + 32 + 32 * (g >> 3) + h;
                    int ye = yo + i * QK_K + 16 * g;
                    float dl = dAll * q3Scale(s, b + 96, g);
                    for (int c = 0; c < 16; c += BL) {
                        ByteVector qb = Blocks.loadBytes(s, q + c), hb = Blocks.loadBytes(s, b + h + c);
                        for (int p = 0; p < BPARTS; p++) {
                            int e = ye + c + p * FL;
                            IntVector v = q3(Blocks.toInts(qb, p), Blocks.toInts(hb, p), 2 * j, bit);
                            Blocks.toFloats(v).mul(dl).fma(a, FloatVector.fromArray(F, y, e)).intoArray(y, e);
                        }
                    }
                }
            }
        }
    };
}
