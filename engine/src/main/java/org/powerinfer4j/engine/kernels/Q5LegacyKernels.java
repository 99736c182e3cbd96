package org.powerinfer4j.engine.kernels;

import static org.powerinfer4j.engine.kernels.Blocks.f16;
import static org.powerinfer4j.engine.kernels.Blocks.u8;
import static org.powerinfer4j.engine.kernels.Simd.BL;
import static org.powerinfer4j.engine.kernels.Simd.BPARTS;
import static org.powerinfer4j.engine.kernels.Simd.F;
import static org.powerinfer4j.engine.kernels.Simd.FL;
import static org.powerinfer4j.engine.kernels.Simd.I;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorOperators;
import org.powerinfer4j.engine.tensor.GGMLType;

/**
 * The 5-bit 32-element block quantizations Q5_0 and Q5_1 (ggml-common.h, ggml-quants.c). PowerInfer stores its
 * predictors as Q5_0 for every target type but Q4_0, so its files need this too.
 *
 * <p>Element j &lt; 16 is the low nibble of {@code qs[j]} plus 16 × bit j of the 32-bit {@code qh}; element j + 16
 * the high nibble plus 16 × bit j + 16. The vector path gets the qh bits of FL consecutive elements with one
 * broadcast and a per-lane shift by the lane index. Dots and axpy follow {@link LegacyQuantKernels}: one partial
 * vector per block folded in with the block scale; axpy rounds w = q·d (+ m) as dequantize does, then one FMA.
 */
final class Q5LegacyKernels {
    private Q5LegacyKernels() {}

    static final int QK = 32;
    private static final ValueLayout.OfInt INT_LE = ValueLayout.JAVA_INT_UNALIGNED.withOrder(Simd.LE);

    /** Lane i holds i: shift counts that bring bit (offset + i) of qh to bit 0 of lane i. */
    private static final IntVector IOTA = IntVector.zero(I).addIndex(1);

    /** The low 5-bit quants of elements e..e+FL: low nibble of v | bit (e + lane) of qh as bit 4. */
    private static IntVector q5lo(IntVector v, int qh, int e) {
        return v.and(0x0F).or(IntVector.broadcast(I, qh >>> e).lanewise(VectorOperators.LSHR, IOTA).and(1).lanewise(VectorOperators.LSHL, 4));
    }

    /** The quants of elements e+16..e+16+FL: high nibble of v | bit (e + 16 + lane) of qh as bit 4. */
    private static IntVector q5hi(IntVector v, int qh, int e) {
        return v.lanewise(VectorOperators.LSHR, 4).and(0x0F).or(IntVector.broadcast(I, qh >>> (e + 16)).lanewise(VectorOperators.LSHR, IOTA).and(1).lanewise(VectorOperators.LSHL, 4));
    }

    // ================================================================== Q5_0
    // typedef struct {
    //     ggml_half d;           // delta
    //     uint8_t qh[4];         // 5-th bit of quants
    //     uint8_t qs[QK5_0 / 2]; // nibbles / quants
    // } block_q5_0;              // 22 bytes
    // dequantize_row_q5_0:
    //     xh_0 = ((qh >> (j +  0)) << 4) & 0x10;   xh_1 = ((qh >> (j + 12))) & 0x10;
    //     x0 = ((qs[j] & 0x0F) | xh_0) - 16;       x1 = ((qs[j] >> 4) | xh_1) - 16;
    //     y[i*qk + j] = x0*d;  y[i*qk + j + qk/2] = x1*d;      (j < 16)
    static final int Q5_0_BYTES = 22;

    static final RowKernel Q5_0_SCALAR = new RowKernel() {
        public GGMLType type() { return GGMLType.Q5_0; }

        public void dequantize(MemorySegment s, long off, float[] y, int yo, int n) {
            Blocks.checkBlocks(n, QK);
            for (int i = 0; i < n / QK; i++) {
                long b = off + (long) i * Q5_0_BYTES;
                float d = f16(s, b);
                int qh = s.get(INT_LE, b + 2);
                for (int j = 0; j < QK / 2; j++) {
                    int q = u8(s, b + 6 + j);
                    int xh0 = ((qh >>> j) << 4) & 0x10, xh1 = (qh >>> (j + 12)) & 0x10;
                    y[yo + i * QK + j] = (((q & 0x0F) | xh0) - 16) * d;
                    y[yo + i * QK + j + QK / 2] = (((q >> 4) | xh1) - 16) * d;
                }
            }
        }

        public float dot(MemorySegment s, long off, float[] x, int xo, int n) {
            Blocks.checkBlocks(n, QK);
            float sum = 0f;
            for (int i = 0; i < n / QK; i++) {
                long b = off + (long) i * Q5_0_BYTES;
                int qh = s.get(INT_LE, b + 2), xb = xo + i * QK;
                float p = 0f;
                for (int j = 0; j < QK / 2; j++) {
                    int q = u8(s, b + 6 + j);
                    int xh0 = ((qh >>> j) << 4) & 0x10, xh1 = (qh >>> (j + 12)) & 0x10;
                    p += (((q & 0x0F) | xh0) - 16) * x[xb + j] + (((q >> 4) | xh1) - 16) * x[xb + j + QK / 2];
                }
                sum += p * f16(s, b);
            }
            return sum;
        }

        public void axpy(MemorySegment s, long off, float alpha, float[] y, int yo, int n) {
            Blocks.checkBlocks(n, QK);
            for (int i = 0; i < n / QK; i++) {
                long b = off + (long) i * Q5_0_BYTES;
                float d = f16(s, b);
                int qh = s.get(INT_LE, b + 2);
                for (int j = 0; j < QK / 2; j++) {
                    int q = u8(s, b + 6 + j);
                    int xh0 = ((qh >>> j) << 4) & 0x10, xh1 = (qh >>> (j + 12)) & 0x10;
                    y[yo + i * QK + j] += alpha * ((((q & 0x0F) | xh0) - 16) * d);
                    y[yo + i * QK + j + QK / 2] += alpha * ((((q >> 4) | xh1) - 16) * d);
                }
            }
        }
    };

    static final RowKernel Q5_0_VECTOR = new RowKernel() {
        public GGMLType type() { return GGMLType.Q5_0; }

        public void dequantize(MemorySegment s, long off, float[] y, int yo, int n) {
            Blocks.checkBlocks(n, QK);
            for (int i = 0; i < n / QK; i++) {
                long b = off + (long) i * Q5_0_BYTES;
                float d = f16(s, b);
                int qh = s.get(INT_LE, b + 2), yb = yo + i * QK;
                for (int j = 0; j < QK / 2; j += BL) {
                    ByteVector q = Blocks.loadBytes(s, b + 6 + j);
                    for (int p = 0; p < BPARTS; p++) {
                        IntVector v = Blocks.toInts(q, p);
                        int e = j + p * FL;
                        Blocks.toFloats(q5lo(v, qh, e).sub(16)).mul(d).intoArray(y, yb + e);
                        Blocks.toFloats(q5hi(v, qh, e).sub(16)).mul(d).intoArray(y, yb + e + QK / 2);
                    }
                }
            }
        }

        public float dot(MemorySegment s, long off, float[] x, int xo, int n) {
            Blocks.checkBlocks(n, QK);
            FloatVector acc = FloatVector.zero(F);
            for (int i = 0; i < n / QK; i++) {
                long b = off + (long) i * Q5_0_BYTES;
                int qh = s.get(INT_LE, b + 2), xb = xo + i * QK;
                FloatVector lo = FloatVector.zero(F), hi = lo;
                for (int j = 0; j < QK / 2; j += BL) {
                    ByteVector q = Blocks.loadBytes(s, b + 6 + j);
                    for (int p = 0; p < BPARTS; p++) {
                        IntVector v = Blocks.toInts(q, p);
                        int e = j + p * FL;
                        lo = Blocks.toFloats(q5lo(v, qh, e).sub(16)).fma(FloatVector.fromArray(F, x, xb + e), lo);
                        hi = Blocks.toFloats(q5hi(v, qh, e).sub(16)).fma(FloatVector.fromArray(F, x, xb + e + QK / 2), hi);
                    }
                }
                acc = lo.add(hi).fma(Blocks.bc(f16(s, b)), acc);
            }
            return Simd.sum(acc);
        }

        public void axpy(MemorySegment s, long off, float alpha, float[] y, int yo, int n) {
            Blocks.checkBlocks(n, QK);
            FloatVector a = Blocks.bc(alpha);
            for (int i = 0; i < n / QK; i++) {
                long b = off + (long) i * Q5_0_BYTES;
                float d = f16(s, b);
                int qh = s.get(INT_LE, b + 2), yb = yo + i * QK;
                for (int j = 0; j < QK / 2; j += BL) {
                    ByteVector q = Blocks.loadBytes(s, b + 6 + j);
                    for (int p = 0; p < BPARTS; p++) {
                        IntVector v = Blocks.toInts(q, p);
                        int e = yb + j + p * FL, e2 = e + QK / 2;
                        Blocks.toFloats(q5lo(v, qh, j + p * FL).sub(16)).mul(d).fma(a, FloatVector.fromArray(F, y, e)).intoArray(y, e);
                        Blocks.toFloats(q5hi(v, qh, j + p * FL).sub(16)).mul(d).fma(a, FloatVector.fromArray(F, y, e2)).intoArray(y, e2);
                    }
                }
            }
        }
    };

    // ================================================================== Q5_1
    // typedef struct {
    //     ggml_half d;           // delta
    //     ggml_half m;           // min
    //     uint8_t qh[4];         // 5-th bit of quants
    //     uint8_t qs[QK5_1 / 2]; // nibbles / quants
    // } block_q5_1;              // 24 bytes
    // dequantize_row_q5_1: x0 = (qs[j] & 0x0F) | xh_0;  x1 = (qs[j] >> 4) | xh_1;  (xh as Q5_0)
    //     y[i*qk + j] = x0*d + m;  y[i*qk + j + qk/2] = x1*d + m;
    static final int Q5_1_BYTES = 24;

    static final RowKernel Q5_1_SCALAR = new RowKernel() {
        public GGMLType type() { return GGMLType.Q5_1; }

        public void dequantize(MemorySegment s, long off, float[] y, int yo, int n) {
            Blocks.checkBlocks(n, QK);
            for (int i = 0; i < n / QK; i++) {
                long b = off + (long) i * Q5_1_BYTES;
                float d = f16(s, b), m = f16(s, b + 2);
                int qh = s.get(INT_LE, b + 4);
                for (int j = 0; j < QK / 2; j++) {
                    int q = u8(s, b + 8 + j);
                    int xh0 = ((qh >>> j) << 4) & 0x10, xh1 = (qh >>> (j + 12)) & 0x10;
                    y[yo + i * QK + j] = ((q & 0x0F) | xh0) * d + m;
                    y[yo + i * QK + j + QK / 2] = ((q >> 4) | xh1) * d + m;
                }
            }
        }

        public float dot(MemorySegment s, long off, float[] x, int xo, int n) {
            Blocks.checkBlocks(n, QK);
            float sum = 0f;
            for (int i = 0; i < n / QK; i++) {
                long b = off + (long) i * Q5_1_BYTES;
                int qh = s.get(INT_LE, b + 4), xb = xo + i * QK;
                float qx = 0f, sx = 0f;
                for (int j = 0; j < QK / 2; j++) {
                    int q = u8(s, b + 8 + j);
                    int xh0 = ((qh >>> j) << 4) & 0x10, xh1 = (qh >>> (j + 12)) & 0x10;
                    qx += ((q & 0x0F) | xh0) * x[xb + j] + ((q >> 4) | xh1) * x[xb + j + QK / 2];
                    sx += x[xb + j] + x[xb + j + QK / 2];
                }
                // Σ (q·d + m)·x = d·Σ q·x + m·Σ x
                sum += f16(s, b) * qx + f16(s, b + 2) * sx;
            }
            return sum;
        }

        public void axpy(MemorySegment s, long off, float alpha, float[] y, int yo, int n) {
            Blocks.checkBlocks(n, QK);
            for (int i = 0; i < n / QK; i++) {
                long b = off + (long) i * Q5_1_BYTES;
                float d = f16(s, b), m = f16(s, b + 2);
                int qh = s.get(INT_LE, b + 4);
                for (int j = 0; j < QK / 2; j++) {
                    int q = u8(s, b + 8 + j);
                    int xh0 = ((qh >>> j) << 4) & 0x10, xh1 = (qh >>> (j + 12)) & 0x10;
                    y[yo + i * QK + j] += alpha * (((q & 0x0F) | xh0) * d + m);
                    y[yo + i * QK + j + QK / 2] += alpha * (((q >> 4) | xh1) * d + m);
                }
            }
        }
    };

    static final RowKernel Q5_1_VECTOR = new RowKernel() {
        public GGMLType type() { return GGMLType.Q5_1; }

        public void dequantize(MemorySegment s, long off, float[] y, int yo, int n) {
            Blocks.checkBlocks(n, QK);
            for (int i = 0; i < n / QK; i++) {
                long b = off + (long) i * Q5_1_BYTES;
                float d = f16(s, b), m = f16(s, b + 2);
                int qh = s.get(INT_LE, b + 4), yb = yo + i * QK;
                for (int j = 0; j < QK / 2; j += BL) {
                    ByteVector q = Blocks.loadBytes(s, b + 8 + j);
                    for (int p = 0; p < BPARTS; p++) {
                        IntVector v = Blocks.toInts(q, p);
                        int e = j + p * FL;
                        // mul then add, not fma: bit-identical to ggml's x0*d + m
                        Blocks.toFloats(q5lo(v, qh, e)).mul(d).add(m).intoArray(y, yb + e);
                        Blocks.toFloats(q5hi(v, qh, e)).mul(d).add(m).intoArray(y, yb + e + QK / 2);
                    }
                }
            }
        }

        public float dot(MemorySegment s, long off, float[] x, int xo, int n) {
            Blocks.checkBlocks(n, QK);
            FloatVector accD = FloatVector.zero(F), accM = accD;
            for (int i = 0; i < n / QK; i++) {
                long b = off + (long) i * Q5_1_BYTES;
                int qh = s.get(INT_LE, b + 4), xb = xo + i * QK;
                FloatVector qx = FloatVector.zero(F), sx = qx;
                for (int j = 0; j < QK / 2; j += BL) {
                    ByteVector q = Blocks.loadBytes(s, b + 8 + j);
                    for (int p = 0; p < BPARTS; p++) {
                        IntVector v = Blocks.toInts(q, p);
                        int e = j + p * FL;
                        FloatVector x0 = FloatVector.fromArray(F, x, xb + e), x1 = FloatVector.fromArray(F, x, xb + e + QK / 2);
                        qx = Blocks.toFloats(q5lo(v, qh, e)).fma(x0, qx);
                        qx = Blocks.toFloats(q5hi(v, qh, e)).fma(x1, qx);
                        sx = sx.add(x0).add(x1);
                    }
                }
                // Σ (q·d + m)·x = d·Σ q·x + m·Σ x
                accD = qx.fma(Blocks.bc(f16(s, b)), accD);
                accM = sx.fma(Blocks.bc(f16(s, b + 2)), accM);
            }
            return Simd.sum(accD.add(accM));
        }

        public void axpy(MemorySegment s, long off, float alpha, float[] y, int yo, int n) {
            Blocks.checkBlocks(n, QK);
            FloatVector a = Blocks.bc(alpha);
            for (int i = 0; i < n / QK; i++) {
                long b = off + (long) i * Q5_1_BYTES;
                float d = f16(s, b), m = f16(s, b + 2);
                int qh = s.get(INT_LE, b + 4), yb = yo + i * QK;
                for (int j = 0; j < QK / 2; j += BL) {
                    ByteVector q = Blocks.loadBytes(s, b + 8 + j);
                    for (int p = 0; p < BPARTS; p++) {
                        IntVector v = Blocks.toInts(q, p);
                        int e = yb + j + p * FL, e2 = e + QK / 2;
                        Blocks.toFloats(q5lo(v, qh, j + p * FL)).mul(d).add(m).fma(a, FloatVector.fromArray(F, y, e)).intoArray(y, e);
                        Blocks.toFloats(q5hi(v, qh, j + p * FL)).mul(d).add(m).fma(a, FloatVector.fromArray(F, y, e2)).intoArray(y, e2);
                    }
                }
            }
        }
    };
}
