package org.powerinfer4j.engine.kernels;

import static org.powerinfer4j.engine.kernels.Blocks.f16;
import static org.powerinfer4j.engine.kernels.Blocks.i8;
import static org.powerinfer4j.engine.kernels.Blocks.u8;
import static org.powerinfer4j.engine.kernels.Simd.BL;
import static org.powerinfer4j.engine.kernels.Simd.BPARTS;
import static org.powerinfer4j.engine.kernels.Simd.F;
import static org.powerinfer4j.engine.kernels.Simd.I;
import static org.powerinfer4j.engine.kernels.Simd.FL;

import java.lang.foreign.MemorySegment;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorOperators;
import org.powerinfer4j.engine.tensor.GGMLType;

/**
 * The 32-element block quantizations Q8_0, Q4_0 and Q4_1 (ggml-quants.c / ggml-common.h).
 *
 * <p>Vector dots compute one partial vector per block (sum of q·x over the block, in float) and fold it into the
 * running sum with the block scale: {@code acc = fma(partial, d, acc)}. Quants are widened byte → int → float
 * (the Vector API has no pmaddubsw/vpdpbusd; see {@link Q8Activations} for the measured integer alternative).
 */
final class LegacyQuantKernels {
    private LegacyQuantKernels() {}

    static final int QK = 32;

    // ================================================================== Q8_0
    // typedef struct {
    //     ggml_half d;       // delta
    //     int8_t  qs[QK8_0]; // quants
    // } block_q8_0;          // 34 bytes
    // dequantize_row_q8_0:  y[i*QK + j] = x[i].qs[j] * d;
    static final int Q8_0_BYTES = 34;

    static final RowKernel Q8_0_SCALAR = new RowKernel() {
        public GGMLType type() { return GGMLType.Q8_0; }

        public void dequantize(MemorySegment s, long off, float[] y, int yo, int n) {
            Blocks.checkBlocks(n, QK);
            for (int i = 0; i < n / QK; i++) {
                long b = off + (long) i * Q8_0_BYTES;
                float d = f16(s, b);
                for (int j = 0; j < QK; j++) y[yo + i * QK + j] = i8(s, b + 2 + j) * d;
            }
        }

        public float dot(MemorySegment s, long off, float[] x, int xo, int n) {
            Blocks.checkBlocks(n, QK);
            float sum = 0f;
            for (int i = 0; i < n / QK; i++) {
                long b = off + (long) i * Q8_0_BYTES;
                float p = 0f;
                for (int j = 0; j < QK; j++) p += i8(s, b + 2 + j) * x[xo + i * QK + j];
                sum += p * f16(s, b);
            }
            return sum;
        }

        public void axpy(MemorySegment s, long off, float alpha, float[] y, int yo, int n) {
            Blocks.checkBlocks(n, QK);
            for (int i = 0; i < n / QK; i++) {
                long b = off + (long) i * Q8_0_BYTES;
                float d = f16(s, b);
                for (int j = 0; j < QK; j++) y[yo + i * QK + j] += alpha * (i8(s, b + 2 + j) * d);
            }
        }
    };

    static final RowKernel Q8_0_VECTOR = new RowKernel() {
        public GGMLType type() { return GGMLType.Q8_0; }

        public void dequantize(MemorySegment s, long off, float[] y, int yo, int n) {
            Blocks.checkBlocks(n, QK);
            for (int i = 0; i < n / QK; i++) {
                long b = off + (long) i * Q8_0_BYTES;
                float d = f16(s, b);
                for (int j = 0; j < QK; j += BL) {
                    ByteVector q = Blocks.loadBytes(s, b + 2 + j);
                    for (int p = 0; p < BPARTS; p++) Blocks.toFloats(q, p).mul(d).intoArray(y, yo + i * QK + j + p * FL);
                }
            }
        }

        public float dot(MemorySegment s, long off, float[] x, int xo, int n) {
            Blocks.checkBlocks(n, QK);
            FloatVector acc = FloatVector.zero(F);
            for (int i = 0; i < n / QK; i++) {
                long b = off + (long) i * Q8_0_BYTES;
                int xb = xo + i * QK;
                // Σ q·x over the block as a vector, then one FMA with the block scale. Written inline: a helper
                // returning a vector that C2 compiles on its own ("already compiled into a big method") is then
                // not inlined and every call boxes the vector.
                FloatVector p = FloatVector.zero(F);
                for (int j = 0; j < QK; j += BL) {
                    ByteVector q = Blocks.loadBytes(s, b + 2 + j);
                    for (int part = 0; part < BPARTS; part++) {
                        p = Blocks.toFloats(q, part).fma(FloatVector.fromArray(F, x, xb + j + part * FL), p);
                    }
                }
                acc = p.fma(Blocks.bc(f16(s, b)), acc);
            }
            return Simd.sum(acc);
        }

        public void axpy(MemorySegment s, long off, float alpha, float[] y, int yo, int n) {
            Blocks.checkBlocks(n, QK);
            FloatVector a = Blocks.bc(alpha);
            for (int i = 0; i < n / QK; i++) {
                long b = off + (long) i * Q8_0_BYTES;
                float d = f16(s, b);
                int yb = yo + i * QK;
                for (int j = 0; j < QK; j += BL) {
                    ByteVector q = Blocks.loadBytes(s, b + 2 + j);
                    for (int p = 0; p < BPARTS; p++) {
                        int e = yb + j + p * FL;
                        // w = q·d first, as dequantize rounds it, then one FMA: same bits as dequantize + axpy
                        Blocks.toFloats(q, p).mul(d).fma(a, FloatVector.fromArray(F, y, e)).intoArray(y, e);
                    }
                }
            }
        }
    };

    // ================================================================== Q4_0
    // typedef struct {
    //     ggml_half d;           // delta
    //     uint8_t qs[QK4_0 / 2]; // nibbles / quants
    // } block_q4_0;              // 18 bytes
    // dequantize_row_q4_0:
    //     x0 = (qs[j] & 0x0F) - 8;  x1 = (qs[j] >> 4) - 8;
    //     y[i*qk + j] = x0*d;  y[i*qk + j + qk/2] = x1*d;      (j < 16)
    static final int Q4_0_BYTES = 18;

    /** Float bits of q − 8 for q = 0..15, as int lanes (used when a vector has 16 lanes). */
    private static final IntVector Q4_TABLE = Simd.FL == 16
            ? IntVector.fromArray(Simd.I, java.util.stream.IntStream.range(0, 16).map(q -> Float.floatToRawIntBits(q - 8)).toArray(), 0)
            : null;

    static final RowKernel Q4_0_SCALAR = new RowKernel() {
        public GGMLType type() { return GGMLType.Q4_0; }

        public void dequantize(MemorySegment s, long off, float[] y, int yo, int n) {
            Blocks.checkBlocks(n, QK);
            for (int i = 0; i < n / QK; i++) {
                long b = off + (long) i * Q4_0_BYTES;
                float d = f16(s, b);
                for (int j = 0; j < QK / 2; j++) {
                    int q = u8(s, b + 2 + j);
                    y[yo + i * QK + j] = ((q & 0x0F) - 8) * d;
                    y[yo + i * QK + j + QK / 2] = ((q >> 4) - 8) * d;
                }
            }
        }

        public float dot(MemorySegment s, long off, float[] x, int xo, int n) {
            Blocks.checkBlocks(n, QK);
            float sum = 0f;
            for (int i = 0; i < n / QK; i++) {
                long b = off + (long) i * Q4_0_BYTES;
                int xb = xo + i * QK;
                float p = 0f;
                for (int j = 0; j < QK / 2; j++) {
                    int q = u8(s, b + 2 + j);
                    p += ((q & 0x0F) - 8) * x[xb + j] + ((q >> 4) - 8) * x[xb + j + QK / 2];
                }
                sum += p * f16(s, b);
            }
            return sum;
        }

        public void axpy(MemorySegment s, long off, float alpha, float[] y, int yo, int n) {
            Blocks.checkBlocks(n, QK);
            for (int i = 0; i < n / QK; i++) {
                long b = off + (long) i * Q4_0_BYTES;
                float d = f16(s, b);
                for (int j = 0; j < QK / 2; j++) {
                    int q = u8(s, b + 2 + j);
                    y[yo + i * QK + j] += alpha * (((q & 0x0F) - 8) * d);
                    y[yo + i * QK + j + QK / 2] += alpha * (((q >> 4) - 8) * d);
                }
            }
        }
    };

    static final RowKernel Q4_0_VECTOR = new RowKernel() {
        public GGMLType type() { return GGMLType.Q4_0; }

        public void dequantize(MemorySegment s, long off, float[] y, int yo, int n) {
            Blocks.checkBlocks(n, QK);
            for (int i = 0; i < n / QK; i++) {
                long b = off + (long) i * Q4_0_BYTES;
                float d = f16(s, b);
                int yb = yo + i * QK;
                for (int j = 0; j < QK / 2; j += BL) {
                    ByteVector q = Blocks.loadBytes(s, b + 2 + j);
                    for (int p = 0; p < BPARTS; p++) {
                        IntVector v = Blocks.toInts(q, p);
                        int e = j + p * FL;
                        Blocks.toFloats(v.and(0x0F).sub(8)).mul(d).intoArray(y, yb + e);
                        Blocks.toFloats(v.lanewise(VectorOperators.LSHR, 4).and(0x0F).sub(8)).mul(d).intoArray(y, yb + e + QK / 2);
                    }
                }
            }
        }

        public float dot(MemorySegment s, long off, float[] x, int xo, int n) {
            Blocks.checkBlocks(n, QK);
            FloatVector acc = FloatVector.zero(F);
            for (int i = 0; i < n / QK; i++) {
                long b = off + (long) i * Q4_0_BYTES;
                int xb = xo + i * QK;
                // Σ (q-8)·x over the block (low nibbles are elements 0..15, high nibbles 16..31), then one FMA
                // with the block scale; inline for the same reason as Q8_0 above
                FloatVector lo = FloatVector.zero(F), hi = lo;
                if (FL == 16) {
                    // 16 lanes hold the whole nibble→(q−8) table: a lane permute (vpermd) replaces sub + convert;
                    // selectFrom wraps indexes to 0..15, so the low nibble needs no mask
                    IntVector v = (IntVector) Blocks.loadBytes(s, b + 2).convertShape(VectorOperators.ZERO_EXTEND_B2I, I, 0);
                    lo = v.selectFrom(Q4_TABLE).reinterpretAsFloats().fma(FloatVector.fromArray(F, x, xb), lo);
                    hi = v.lanewise(VectorOperators.LSHR, 4).selectFrom(Q4_TABLE).reinterpretAsFloats().fma(FloatVector.fromArray(F, x, xb + QK / 2), hi);
                } else for (int j = 0; j < QK / 2; j += BL) {
                    ByteVector q = Blocks.loadBytes(s, b + 2 + j);
                    for (int part = 0; part < BPARTS; part++) {
                        IntVector v = Blocks.toInts(q, part);
                        int e = xb + j + part * FL;
                        lo = Blocks.toFloats(v.and(0x0F).sub(8)).fma(FloatVector.fromArray(F, x, e), lo);
                        hi = Blocks.toFloats(v.lanewise(VectorOperators.LSHR, 4).and(0x0F).sub(8)).fma(FloatVector.fromArray(F, x, e + QK / 2), hi);
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
                long b = off + (long) i * Q4_0_BYTES;
                float d = f16(s, b);
                int yb = yo + i * QK;
                for (int j = 0; j < QK / 2; j += BL) {
                    ByteVector q = Blocks.loadBytes(s, b + 2 + j);
                    for (int p = 0; p < BPARTS; p++) {
                        IntVector v = Blocks.toInts(q, p);
                        int e = yb + j + p * FL;
                        Blocks.toFloats(v.and(0x0F).sub(8)).mul(d).fma(a, FloatVector.fromArray(F, y, e)).intoArray(y, e);
                        int e2 = e + QK / 2;
                        Blocks.toFloats(v.lanewise(VectorOperators.LSHR, 4).and(0x0F).sub(8)).mul(d).fma(a, FloatVector.fromArray(F, y, e2)).intoArray(y, e2);
                    }
                }
            }
        }
    };

    // ================================================================== Q4_1
    // typedef struct {
    //     ggml_half d;           // delta
    //     ggml_half m;           // min
    //     uint8_t qs[QK4_1 / 2]; // nibbles / quants
    // } block_q4_1;              // 20 bytes
    // dequantize_row_q4_1:
    //     x0 = qs[j] & 0x0F;  x1 = qs[j] >> 4;
    //     y[i*qk + j] = x0*d + m;  y[i*qk + j + qk/2] = x1*d + m;
    static final int Q4_1_BYTES = 20;

    static final RowKernel Q4_1_SCALAR = new RowKernel() {
        public GGMLType type() { return GGMLType.Q4_1; }

        public void dequantize(MemorySegment s, long off, float[] y, int yo, int n) {
            Blocks.checkBlocks(n, QK);
            for (int i = 0; i < n / QK; i++) {
                long b = off + (long) i * Q4_1_BYTES;
                float d = f16(s, b), m = f16(s, b + 2);
                for (int j = 0; j < QK / 2; j++) {
                    int q = u8(s, b + 4 + j);
                    y[yo + i * QK + j] = (q & 0x0F) * d + m;
                    y[yo + i * QK + j + QK / 2] = (q >> 4) * d + m;
                }
            }
        }

        public float dot(MemorySegment s, long off, float[] x, int xo, int n) {
            Blocks.checkBlocks(n, QK);
            float sum = 0f;
            for (int i = 0; i < n / QK; i++) {
                long b = off + (long) i * Q4_1_BYTES;
                int xb = xo + i * QK;
                float qx = 0f, sx = 0f;
                for (int j = 0; j < QK / 2; j++) {
                    int q = u8(s, b + 4 + j);
                    qx += (q & 0x0F) * x[xb + j] + (q >> 4) * x[xb + j + QK / 2];
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
                long b = off + (long) i * Q4_1_BYTES;
                float d = f16(s, b), m = f16(s, b + 2);
                for (int j = 0; j < QK / 2; j++) {
                    int q = u8(s, b + 4 + j);
                    y[yo + i * QK + j] += alpha * ((q & 0x0F) * d + m);
                    y[yo + i * QK + j + QK / 2] += alpha * ((q >> 4) * d + m);
                }
            }
        }
    };

    static final RowKernel Q4_1_VECTOR = new RowKernel() {
        public GGMLType type() { return GGMLType.Q4_1; }

        public void dequantize(MemorySegment s, long off, float[] y, int yo, int n) {
            Blocks.checkBlocks(n, QK);
            for (int i = 0; i < n / QK; i++) {
                long b = off + (long) i * Q4_1_BYTES;
                float d = f16(s, b), m = f16(s, b + 2);
                int yb = yo + i * QK;
                for (int j = 0; j < QK / 2; j += BL) {
                    ByteVector q = Blocks.loadBytes(s, b + 4 + j);
                    for (int p = 0; p < BPARTS; p++) {
                        IntVector v = Blocks.toInts(q, p);
                        int e = j + p * FL;
                        // mul then add, not fma: bit-identical to the scalar x0*d + m
                        Blocks.toFloats(v.and(0x0F)).mul(d).add(m).intoArray(y, yb + e);
                        Blocks.toFloats(v.lanewise(VectorOperators.LSHR, 4).and(0x0F)).mul(d).add(m).intoArray(y, yb + e + QK / 2);
                    }
                }
            }
        }

        public float dot(MemorySegment s, long off, float[] x, int xo, int n) {
            Blocks.checkBlocks(n, QK);
            int nb = n / QK;
            FloatVector accD = FloatVector.zero(F), accM = accD;
            for (int i = 0; i < nb; i++) {
                long b = off + (long) i * Q4_1_BYTES;
                int xb = xo + i * QK;
                FloatVector qx = FloatVector.zero(F), sx = qx;
                for (int j = 0; j < QK / 2; j += BL) {
                    ByteVector q = Blocks.loadBytes(s, b + 4 + j);
                    for (int p = 0; p < BPARTS; p++) {
                        IntVector v = Blocks.toInts(q, p);
                        int e = xb + j + p * FL;
                        FloatVector x0 = FloatVector.fromArray(F, x, e), x1 = FloatVector.fromArray(F, x, e + QK / 2);
                        qx = Blocks.toFloats(v.and(0x0F)).fma(x0, qx);
                        qx = Blocks.toFloats(v.lanewise(VectorOperators.LSHR, 4).and(0x0F)).fma(x1, qx);
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
                long b = off + (long) i * Q4_1_BYTES;
                float d = f16(s, b), m = f16(s, b + 2);
                int yb = yo + i * QK;
                for (int j = 0; j < QK / 2; j += BL) {
                    ByteVector q = Blocks.loadBytes(s, b + 4 + j);
                    for (int p = 0; p < BPARTS; p++) {
                        IntVector v = Blocks.toInts(q, p);
                        int e = yb + j + p * FL, e2 = e + QK / 2;
                        Blocks.toFloats(v.and(0x0F)).mul(d).add(m).fma(a, FloatVector.fromArray(F, y, e)).intoArray(y, e);
                        Blocks.toFloats(v.lanewise(VectorOperators.LSHR, 4).and(0x0F)).mul(d).add(m).fma(a, FloatVector.fromArray(F, y, e2)).intoArray(y, e2);
                    }
                }
            }
        }
    };
}
