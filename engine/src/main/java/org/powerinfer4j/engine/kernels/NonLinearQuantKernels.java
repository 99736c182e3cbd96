package org.powerinfer4j.engine.kernels;

import static org.powerinfer4j.engine.kernels.Blocks.bc;
import static org.powerinfer4j.engine.kernels.Blocks.f16;
import static org.powerinfer4j.engine.kernels.Blocks.u8;
import static org.powerinfer4j.engine.kernels.Simd.F;
import static org.powerinfer4j.engine.kernels.Simd.FL;

import java.lang.foreign.MemorySegment;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;
import org.powerinfer4j.engine.tensor.GGMLType;

/**
 * The codebook quantizations IQ4_NL, IQ4_XS and MXFP4 (ggml-common.h, ggml-quants.c): a 4-bit index into a
 * 16-entry table of small integers ({@code kvalues_iq4nl}, {@code kvalues_mxfp4}), times a block scale. All three
 * store 32 elements as 16 bytes: element j &lt; 16 is the low nibble of byte j, element j + 16 its high nibble.
 *
 * <p>Vector path: the 16 bytes are one 128-bit byte vector; the table lookup is one byte permute
 * ({@code selectFrom}, pshufb/vpermb) per 16 nibbles, then byte → float conversion in {@link #PARTS} parts. Dots
 * take Σ kv·x per 32 elements and fold it in with the scale; axpy rounds w = kv·d as dequantize does, then one
 * FMA (bit-identical to dequantize + {@link FloatKernels} axpy).
 */
final class NonLinearQuantKernels {
    private NonLinearQuantKernels() {}

    static final int QK = 32;
    static final int QK_K = 256;

    /** 16 byte lanes: one block's 16 quant bytes, and the whole 16-entry table. */
    private static final VectorSpecies<Byte> B16 = ByteVector.SPECIES_128;
    /** Float vectors per 16 bytes: 1 (512-bit), 2 (256-bit), 4 (128-bit). */
    private static final int PARTS = 16 / FL;

    // static const int8_t kvalues_iq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
    static final byte[] KVALUES_IQ4NL = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
    // static const int8_t kvalues_mxfp4[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
    // (E2M1 values doubled; the E8M0 scale is halved to match)
    static final byte[] KVALUES_MXFP4 = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

    private static final java.lang.foreign.ValueLayout.OfInt INT_LE = java.lang.foreign.ValueLayout.JAVA_INT_UNALIGNED.withOrder(Simd.LE);

    private static final ByteVector TABLE_IQ4NL = ByteVector.fromArray(B16, KVALUES_IQ4NL, 0);
    private static final ByteVector TABLE_MXFP4 = ByteVector.fromArray(B16, KVALUES_MXFP4, 0);

    /**
     * ggml_e8m0_to_fp32_half: 2^(e − 128) built from its bits, 2^-128 and 2^-127 as subnormals for e &lt; 2.
     * (e = 255 gives 2^127; ggml does not treat it as NaN.)
     */
    static float e8m0Half(int e) {
        return Float.intBitsToFloat(e < 2 ? 0x00200000 << e : (e - 1) << 23);
    }

    private static ByteVector load16(MemorySegment s, long off) {
        return ByteVector.fromMemorySegment(B16, s, off, Simd.LE);
    }

    /** Table values of the low nibbles of q (elements 0..15 of the block). */
    private static ByteVector lo(ByteVector q, ByteVector table) {
        return q.and((byte) 0x0F).selectFrom(table);
    }

    /** Table values of the high nibbles of q (elements 16..31 of the block). */
    private static ByteVector hi(ByteVector q, ByteVector table) {
        return q.lanewise(VectorOperators.LSHR, 4).and((byte) 0x0F).selectFrom(table);
    }

    private static FloatVector toFloats(ByteVector b, int part) {
        return (FloatVector) b.convertShape(VectorOperators.B2F, F, part);
    }

    // ================================================================== IQ4_NL
    // typedef struct {
    //     ggml_half d;
    //     uint8_t qs[QK4_NL/2];
    // } block_iq4_nl;            // 18 bytes
    // dequantize_row_iq4_nl: y[j] = d * kvalues_iq4nl[qs[j] & 0xf];  y[j + 16] = d * kvalues_iq4nl[qs[j] >> 4];
    static final int IQ4_NL_BYTES = 18;

    static final RowKernel IQ4_NL_SCALAR = new RowKernel() {
        public GGMLType type() { return GGMLType.IQ4_NL; }

        public void dequantize(MemorySegment s, long off, float[] y, int yo, int n) {
            Blocks.checkBlocks(n, QK);
            for (int i = 0; i < n / QK; i++) {
                long b = off + (long) i * IQ4_NL_BYTES;
                scalarDequantize32(s, b + 2, KVALUES_IQ4NL, f16(s, b), y, yo + i * QK);
            }
        }

        public float dot(MemorySegment s, long off, float[] x, int xo, int n) {
            Blocks.checkBlocks(n, QK);
            float sum = 0f;
            for (int i = 0; i < n / QK; i++) {
                long b = off + (long) i * IQ4_NL_BYTES;
                sum += scalarDot32(s, b + 2, KVALUES_IQ4NL, x, xo + i * QK) * f16(s, b);
            }
            return sum;
        }

        public void axpy(MemorySegment s, long off, float alpha, float[] y, int yo, int n) {
            Blocks.checkBlocks(n, QK);
            for (int i = 0; i < n / QK; i++) {
                long b = off + (long) i * IQ4_NL_BYTES;
                scalarAxpy32(s, b + 2, KVALUES_IQ4NL, f16(s, b), alpha, y, yo + i * QK);
            }
        }
    };

    static final RowKernel IQ4_NL_VECTOR = new RowKernel() {
        public GGMLType type() { return GGMLType.IQ4_NL; }

        public void dequantize(MemorySegment s, long off, float[] y, int yo, int n) {
            Blocks.checkBlocks(n, QK);
            for (int i = 0; i < n / QK; i++) {
                long b = off + (long) i * IQ4_NL_BYTES;
                ByteVector q = load16(s, b + 2), l = lo(q, TABLE_IQ4NL), h = hi(q, TABLE_IQ4NL);
                    float dd = f16(s, b);
                    int yb = yo + i * QK;
                    for (int p = 0; p < PARTS; p++) {
                        toFloats(l, p).mul(dd).intoArray(y, yb + p * FL);
                        toFloats(h, p).mul(dd).intoArray(y, yb + 16 + p * FL);
                    }
            }
        }

        public float dot(MemorySegment s, long off, float[] x, int xo, int n) {
            Blocks.checkBlocks(n, QK);
            FloatVector acc = FloatVector.zero(F);
            for (int i = 0; i < n / QK; i++) {
                long b = off + (long) i * IQ4_NL_BYTES;
                int xb = xo + i * QK;
                // inline, not a helper returning a vector: see LegacyQuantKernels' Q8_0 dot
                ByteVector q = load16(s, b + 2), l = lo(q, TABLE_IQ4NL), h = hi(q, TABLE_IQ4NL);
                FloatVector p = FloatVector.zero(F);
                for (int part = 0; part < PARTS; part++) {
                    p = toFloats(l, part).fma(FloatVector.fromArray(F, x, xb + part * FL), p);
                    p = toFloats(h, part).fma(FloatVector.fromArray(F, x, xb + 16 + part * FL), p);
                }
                acc = p.fma(bc(f16(s, b)), acc);
            }
            return Simd.sum(acc);
        }

        public void axpy(MemorySegment s, long off, float alpha, float[] y, int yo, int n) {
            Blocks.checkBlocks(n, QK);
            FloatVector a = bc(alpha);
            for (int i = 0; i < n / QK; i++) {
                long b = off + (long) i * IQ4_NL_BYTES;
                ByteVector q = load16(s, b + 2), l = lo(q, TABLE_IQ4NL), h = hi(q, TABLE_IQ4NL);
                    float dd = f16(s, b);
                    int yb = yo + i * QK;
                    for (int p = 0; p < PARTS; p++) {
                        int e = yb + p * FL, e2 = e + 16;
                        toFloats(l, p).mul(dd).fma(a, FloatVector.fromArray(F, y, e)).intoArray(y, e);
                        toFloats(h, p).mul(dd).fma(a, FloatVector.fromArray(F, y, e2)).intoArray(y, e2);
                    }
            }
        }
    };

    // ================================================================== IQ4_XS
    // typedef struct {
    //     ggml_half d;
    //     uint16_t scales_h;
    //     uint8_t  scales_l[QK_K/64];
    //     uint8_t  qs[QK_K/2];
    // } block_iq4_xs;            // 136 bytes
    // dequantize_row_iq4_xs: for each 32 elements ib:
    //     ls = ((scales_l[ib/2] >> 4*(ib%2)) & 0xf) | (((scales_h >> 2*ib) & 3) << 4);
    //     dl = d * (ls - 32);
    //     y[j] = dl * kvalues_iq4nl[qs[j] & 0xf];  y[j+16] = dl * kvalues_iq4nl[qs[j] >> 4];   qs += 16
    static final int IQ4_XS_BYTES = 136;

    /** The 6-bit scale of sub-block ib, minus 32. */
    static int iq4xsScale(MemorySegment s, long b, int ib) {
        int lo = (u8(s, b + 4 + ib / 2) >> 4 * (ib % 2)) & 0xF;
        int hi = ((u8(s, b + 2) | u8(s, b + 3) << 8) >> 2 * ib) & 3;
        return (lo | hi << 4) - 32;
    }

    static final RowKernel IQ4_XS_SCALAR = new RowKernel() {
        public GGMLType type() { return GGMLType.IQ4_XS; }

        public void dequantize(MemorySegment s, long off, float[] y, int yo, int n) {
            Blocks.checkBlocks(n, QK_K);
            for (int i = 0; i < n / QK_K; i++) {
                long b = off + (long) i * IQ4_XS_BYTES;
                float d = f16(s, b);
                for (int ib = 0; ib < 8; ib++) {
                    scalarDequantize32(s, b + 8 + 16 * ib, KVALUES_IQ4NL, d * iq4xsScale(s, b, ib), y, yo + i * QK_K + 32 * ib);
                }
            }
        }

        public float dot(MemorySegment s, long off, float[] x, int xo, int n) {
            Blocks.checkBlocks(n, QK_K);
            float sum = 0f;
            for (int i = 0; i < n / QK_K; i++) {
                long b = off + (long) i * IQ4_XS_BYTES;
                float d = f16(s, b);
                for (int ib = 0; ib < 8; ib++) {
                    sum += d * iq4xsScale(s, b, ib) * scalarDot32(s, b + 8 + 16 * ib, KVALUES_IQ4NL, x, xo + i * QK_K + 32 * ib);
                }
            }
            return sum;
        }

        public void axpy(MemorySegment s, long off, float alpha, float[] y, int yo, int n) {
            Blocks.checkBlocks(n, QK_K);
            for (int i = 0; i < n / QK_K; i++) {
                long b = off + (long) i * IQ4_XS_BYTES;
                float d = f16(s, b);
                for (int ib = 0; ib < 8; ib++) {
                    scalarAxpy32(s, b + 8 + 16 * ib, KVALUES_IQ4NL, d * iq4xsScale(s, b, ib), alpha, y, yo + i * QK_K + 32 * ib);
                }
            }
        }
    };

    static final RowKernel IQ4_XS_VECTOR = new RowKernel() {
        public GGMLType type() { return GGMLType.IQ4_XS; }

        public void dequantize(MemorySegment s, long off, float[] y, int yo, int n) {
            Blocks.checkBlocks(n, QK_K);
            for (int i = 0; i < n / QK_K; i++) {
                long b = off + (long) i * IQ4_XS_BYTES;
                float d = f16(s, b);
                for (int ib = 0; ib < 8; ib++) {
                    ByteVector q = load16(s, b + 8 + 16 * ib), l = lo(q, TABLE_IQ4NL), h = hi(q, TABLE_IQ4NL);
                    float dd = d * iq4xsScale(s, b, ib);
                    int yb = yo + i * QK_K + 32 * ib;
                    for (int p = 0; p < PARTS; p++) {
                        toFloats(l, p).mul(dd).intoArray(y, yb + p * FL);
                        toFloats(h, p).mul(dd).intoArray(y, yb + 16 + p * FL);
                    }
                }
            }
        }

        public float dot(MemorySegment s, long off, float[] x, int xo, int n) {
            Blocks.checkBlocks(n, QK_K);
            FloatVector acc = FloatVector.zero(F);
            for (int i = 0; i < n / QK_K; i++) {
                long b = off + (long) i * IQ4_XS_BYTES;
                float d = f16(s, b);
                // all eight 6-bit scales' bits in two reads: scales_h (u16) and scales_l (4 bytes)
                int sh = s.get(Blocks.SHORT_LE, b + 2), sl = s.get(INT_LE, b + 4);
                for (int ib = 0; ib < 8; ib++) {
                    int xb = xo + i * QK_K + 32 * ib;
                    ByteVector q = load16(s, b + 8 + 16 * ib), l = lo(q, TABLE_IQ4NL), h = hi(q, TABLE_IQ4NL);
                    FloatVector pl = FloatVector.zero(F), ph = pl;
                    for (int part = 0; part < PARTS; part++) {
                        pl = toFloats(l, part).fma(FloatVector.fromArray(F, x, xb + part * FL), pl);
                        ph = toFloats(h, part).fma(FloatVector.fromArray(F, x, xb + 16 + part * FL), ph);
                    }
                    int ls = ((sl >>> 4 * ib) & 0xF) | ((sh >>> 2 * ib) & 3) << 4; // nibble ib of scales_l = (ib/2, ib%2)
                    acc = pl.add(ph).fma(bc(d * (ls - 32)), acc);
                }
            }
            return Simd.sum(acc);
        }

        public void axpy(MemorySegment s, long off, float alpha, float[] y, int yo, int n) {
            Blocks.checkBlocks(n, QK_K);
            FloatVector a = bc(alpha);
            for (int i = 0; i < n / QK_K; i++) {
                long b = off + (long) i * IQ4_XS_BYTES;
                float d = f16(s, b);
                for (int ib = 0; ib < 8; ib++) {
                    ByteVector q = load16(s, b + 8 + 16 * ib), l = lo(q, TABLE_IQ4NL), h = hi(q, TABLE_IQ4NL);
                    float dd = d * iq4xsScale(s, b, ib);
                    int yb = yo + i * QK_K + 32 * ib;
                    for (int p = 0; p < PARTS; p++) {
                        int e = yb + p * FL, e2 = e + 16;
                        toFloats(l, p).mul(dd).fma(a, FloatVector.fromArray(F, y, e)).intoArray(y, e);
                        toFloats(h, p).mul(dd).fma(a, FloatVector.fromArray(F, y, e2)).intoArray(y, e2);
                    }
                }
            }
        }
    };

    // ================================================================== MXFP4
    // typedef struct {
    //     uint8_t e;              // E8M0 shared exponent
    //     uint8_t qs[QK_MXFP4/2]; // E2M1 nibbles
    // } block_mxfp4;              // 17 bytes
    // dequantize_row_mxfp4: d = GGML_E8M0_TO_FP32_HALF(e);
    //     y[j] = kvalues_mxfp4[qs[j] & 0x0F] * d;  y[j + 16] = kvalues_mxfp4[qs[j] >> 4] * d;
    static final int MXFP4_BYTES = 17;

    static final RowKernel MXFP4_SCALAR = new RowKernel() {
        public GGMLType type() { return GGMLType.MXFP4; }

        public void dequantize(MemorySegment s, long off, float[] y, int yo, int n) {
            Blocks.checkBlocks(n, QK);
            for (int i = 0; i < n / QK; i++) {
                long b = off + (long) i * MXFP4_BYTES;
                scalarDequantize32(s, b + 1, KVALUES_MXFP4, e8m0Half(u8(s, b)), y, yo + i * QK);
            }
        }

        public float dot(MemorySegment s, long off, float[] x, int xo, int n) {
            Blocks.checkBlocks(n, QK);
            float sum = 0f;
            for (int i = 0; i < n / QK; i++) {
                long b = off + (long) i * MXFP4_BYTES;
                sum += scalarDot32(s, b + 1, KVALUES_MXFP4, x, xo + i * QK) * e8m0Half(u8(s, b));
            }
            return sum;
        }

        public void axpy(MemorySegment s, long off, float alpha, float[] y, int yo, int n) {
            Blocks.checkBlocks(n, QK);
            for (int i = 0; i < n / QK; i++) {
                long b = off + (long) i * MXFP4_BYTES;
                scalarAxpy32(s, b + 1, KVALUES_MXFP4, e8m0Half(u8(s, b)), alpha, y, yo + i * QK);
            }
        }
    };

    static final RowKernel MXFP4_VECTOR = new RowKernel() {
        public GGMLType type() { return GGMLType.MXFP4; }

        public void dequantize(MemorySegment s, long off, float[] y, int yo, int n) {
            Blocks.checkBlocks(n, QK);
            for (int i = 0; i < n / QK; i++) {
                long b = off + (long) i * MXFP4_BYTES;
                ByteVector q = load16(s, b + 1), l = lo(q, TABLE_MXFP4), h = hi(q, TABLE_MXFP4);
                    float dd = e8m0Half(u8(s, b));
                    int yb = yo + i * QK;
                    for (int p = 0; p < PARTS; p++) {
                        toFloats(l, p).mul(dd).intoArray(y, yb + p * FL);
                        toFloats(h, p).mul(dd).intoArray(y, yb + 16 + p * FL);
                    }
            }
        }

        public float dot(MemorySegment s, long off, float[] x, int xo, int n) {
            Blocks.checkBlocks(n, QK);
            FloatVector acc = FloatVector.zero(F);
            for (int i = 0; i < n / QK; i++) {
                long b = off + (long) i * MXFP4_BYTES;
                int xb = xo + i * QK;
                ByteVector q = load16(s, b + 1), l = lo(q, TABLE_MXFP4), h = hi(q, TABLE_MXFP4);
                FloatVector p = FloatVector.zero(F);
                for (int part = 0; part < PARTS; part++) {
                    p = toFloats(l, part).fma(FloatVector.fromArray(F, x, xb + part * FL), p);
                    p = toFloats(h, part).fma(FloatVector.fromArray(F, x, xb + 16 + part * FL), p);
                }
                acc = p.fma(bc(e8m0Half(u8(s, b))), acc);
            }
            return Simd.sum(acc);
        }

        public void axpy(MemorySegment s, long off, float alpha, float[] y, int yo, int n) {
            Blocks.checkBlocks(n, QK);
            FloatVector a = bc(alpha);
            for (int i = 0; i < n / QK; i++) {
                long b = off + (long) i * MXFP4_BYTES;
                ByteVector q = load16(s, b + 1), l = lo(q, TABLE_MXFP4), h = hi(q, TABLE_MXFP4);
                    float dd = e8m0Half(u8(s, b));
                    int yb = yo + i * QK;
                    for (int p = 0; p < PARTS; p++) {
                        int e = yb + p * FL, e2 = e + 16;
                        toFloats(l, p).mul(dd).fma(a, FloatVector.fromArray(F, y, e)).intoArray(y, e);
                        toFloats(h, p).mul(dd).fma(a, FloatVector.fromArray(F, y, e2)).intoArray(y, e2);
                    }
            }
        }
    };

    // ---- scalar references for one 32-element group (16 bytes at qs, table values times d) ----

    private static void scalarDequantize32(MemorySegment s, long qs, byte[] kv, float d, float[] y, int yb) {
        for (int j = 0; j < 16; j++) {
            int q = u8(s, qs + j);
            y[yb + j] = d * kv[q & 0xF];
            y[yb + j + 16] = d * kv[q >> 4];
        }
    }

    /** Σ kv·x over the group (the scale is applied once per group by the caller, as the vector path does). */
    private static float scalarDot32(MemorySegment s, long qs, byte[] kv, float[] x, int xb) {
        float p = 0f;
        for (int j = 0; j < 16; j++) {
            int q = u8(s, qs + j);
            p += kv[q & 0xF] * x[xb + j] + kv[q >> 4] * x[xb + j + 16];
        }
        return p;
    }

    private static void scalarAxpy32(MemorySegment s, long qs, byte[] kv, float d, float alpha, float[] y, int yb) {
        for (int j = 0; j < 16; j++) {
            int q = u8(s, qs + j);
            y[yb + j] += alpha * (d * kv[q & 0xF]);
            y[yb + j + 16] += alpha * (d * kv[q >> 4]);
        }
    }
}
