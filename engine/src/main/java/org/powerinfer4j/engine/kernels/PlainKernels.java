package org.powerinfer4j.engine.kernels;

import static org.powerinfer4j.engine.kernels.Blocks.FLOAT_LE;
import static org.powerinfer4j.engine.kernels.Blocks.SHORT_LE;
import static org.powerinfer4j.engine.kernels.Simd.F;
import static org.powerinfer4j.engine.kernels.Simd.FL;
import static org.powerinfer4j.engine.kernels.Simd.LE;
import static org.powerinfer4j.engine.kernels.Simd.S;

import java.lang.foreign.MemorySegment;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorOperators;
import org.powerinfer4j.engine.tensor.GGMLType;

/**
 * Unquantized element types: F32 (IEEE single), F16 (IEEE half, ggml_half) and BF16 (top 16 bits of a float).
 * Elements are stored little-endian and back to back; there are no blocks, so any row length is valid.
 * The vector dots keep four independent accumulators so that FMA latency does not bound throughput.
 */
final class PlainKernels {
    private PlainKernels() {}

    // ------------------------------------------------------------------ F32

    static final RowKernel F32_SCALAR = new RowKernel() {
        public GGMLType type() { return GGMLType.F32; }

        public void dequantize(MemorySegment s, long off, float[] dst, int d, int n) {
            for (int i = 0; i < n; i++) dst[d + i] = s.get(FLOAT_LE, off + 4L * i);
        }

        public float dot(MemorySegment s, long off, float[] x, int xo, int n) {
            float sum = 0f;
            for (int i = 0; i < n; i++) sum += s.get(FLOAT_LE, off + 4L * i) * x[xo + i];
            return sum;
        }

        public void axpy(MemorySegment s, long off, float alpha, float[] y, int yo, int n) {
            FloatKernels.Scalar.axpy(alpha, s, off, y, yo, n);
        }
    };

    static final RowKernel F32_VECTOR = new RowKernel() {
        public GGMLType type() { return GGMLType.F32; }

        public void dequantize(MemorySegment s, long off, float[] dst, int d, int n) {
            MemorySegment.copy(s, FLOAT_LE, off, dst, d, n);
        }

        public float dot(MemorySegment s, long off, float[] x, int xo, int n) {
            FloatVector a0 = FloatVector.zero(F), a1 = a0, a2 = a0, a3 = a0;
            int i = 0;
            for (int end = n - 4 * FL; i <= end; i += 4 * FL) {
                long o = off + 4L * i;
                a0 = FloatVector.fromMemorySegment(F, s, o, LE).fma(FloatVector.fromArray(F, x, xo + i), a0);
                a1 = FloatVector.fromMemorySegment(F, s, o + 4L * FL, LE).fma(FloatVector.fromArray(F, x, xo + i + FL), a1);
                a2 = FloatVector.fromMemorySegment(F, s, o + 8L * FL, LE).fma(FloatVector.fromArray(F, x, xo + i + 2 * FL), a2);
                a3 = FloatVector.fromMemorySegment(F, s, o + 12L * FL, LE).fma(FloatVector.fromArray(F, x, xo + i + 3 * FL), a3);
            }
            for (int end = n - FL; i <= end; i += FL) {
                a0 = FloatVector.fromMemorySegment(F, s, off + 4L * i, LE).fma(FloatVector.fromArray(F, x, xo + i), a0);
            }
            float sum = Simd.sum(a0.add(a1).add(a2.add(a3)));
            for (; i < n; i++) sum += s.get(FLOAT_LE, off + 4L * i) * x[xo + i];
            return sum;
        }

        public void axpy(MemorySegment s, long off, float alpha, float[] y, int yo, int n) {
            FloatKernels.Vector.axpy(alpha, s, off, y, yo, n);
        }
    };

    // ------------------------------------------------------------------ F16

    static final RowKernel F16_SCALAR = new RowKernel() {
        public GGMLType type() { return GGMLType.F16; }

        public void dequantize(MemorySegment s, long off, float[] dst, int d, int n) {
            for (int i = 0; i < n; i++) dst[d + i] = Float.float16ToFloat(s.get(SHORT_LE, off + 2L * i));
        }

        public float dot(MemorySegment s, long off, float[] x, int xo, int n) {
            float sum = 0f;
            for (int i = 0; i < n; i++) sum += Float.float16ToFloat(s.get(SHORT_LE, off + 2L * i)) * x[xo + i];
            return sum;
        }

        public void axpy(MemorySegment s, long off, float alpha, float[] y, int yo, int n) {
            FloatKernels.Scalar.axpyF16(alpha, s, off, y, yo, n);
        }
    };

    /** Halves per conversion chunk of the F16 dot: 2 KiB of floats, in L1 while the FMAs read them. */
    private static final int HALF_CHUNK = 512;
    private static final ThreadLocal<float[]> HALVES = ThreadLocal.withInitial(() -> new float[HALF_CHUNK]);

    /**
     * dst[d..d+n) = the n halves from {@code off}, exactly ({@link Float#float16ToFloat}: subnormals, Inf, NaN).
     * A plain loop on purpose: C2 vectorizes it into vcvtph2ps (F16C / AArch64 fcvtl), 9 G halves/s on one
     * Sapphire Rapids core, where the Vector API, which has no half-to-float conversion, needs a dozen integer
     * ops per vector (5 G/s).
     */
    static void halves(MemorySegment s, long off, float[] dst, int d, int n) {
        for (int i = 0; i < n; i++) dst[d + i] = Float.float16ToFloat(s.get(SHORT_LE, off + 2L * i));
    }

    static final RowKernel F16_VECTOR = new RowKernel() {
        public GGMLType type() { return GGMLType.F16; }

        public void dequantize(MemorySegment s, long off, float[] dst, int d, int n) {
            halves(s, off, dst, d, n);
        }

        public float dot(MemorySegment s, long off, float[] x, int xo, int n) {
            // the halves converted a chunk at a time by halves() (vcvtph2ps), then two FMA chains, a0 over the
            // even and a1 over the odd FL-blocks of the row, as before the conversion moved out (same bits)
            float[] t = HALVES.get();
            FloatVector a0 = FloatVector.zero(F), a1 = a0;
            int i = 0;
            while (i <= n - 2 * FL) {
                int len = Math.min(HALF_CHUNK, (n - i) / (2 * FL) * (2 * FL));
                halves(s, off + 2L * i, t, 0, len);
                for (int j = 0; j < len; j += 2 * FL) {
                    a0 = FloatVector.fromArray(F, t, j).fma(FloatVector.fromArray(F, x, xo + i + j), a0);
                    a1 = FloatVector.fromArray(F, t, j + FL).fma(FloatVector.fromArray(F, x, xo + i + j + FL), a1);
                }
                i += len;
            }
            if (i <= n - FL) {
                halves(s, off + 2L * i, t, 0, FL);
                a0 = FloatVector.fromArray(F, t, 0).fma(FloatVector.fromArray(F, x, xo + i), a0);
                i += FL;
            }
            float sum = Simd.sum(a0.add(a1));
            for (; i < n; i++) sum += Float.float16ToFloat(s.get(SHORT_LE, off + 2L * i)) * x[xo + i];
            return sum;
        }

        public void axpy(MemorySegment s, long off, float alpha, float[] y, int yo, int n) {
            FloatKernels.Vector.axpyF16(alpha, s, off, y, yo, n);
        }
    };

    // ------------------------------------------------------------------ BF16

    static float bf16(MemorySegment s, long off) {
        return Float.intBitsToFloat((s.get(SHORT_LE, off) & 0xFFFF) << 16);
    }

    static final RowKernel BF16_SCALAR = new RowKernel() {
        public GGMLType type() { return GGMLType.BF16; }

        public void dequantize(MemorySegment s, long off, float[] dst, int d, int n) {
            for (int i = 0; i < n; i++) dst[d + i] = bf16(s, off + 2L * i);
        }

        public float dot(MemorySegment s, long off, float[] x, int xo, int n) {
            float sum = 0f;
            for (int i = 0; i < n; i++) sum += bf16(s, off + 2L * i) * x[xo + i];
            return sum;
        }

        public void axpy(MemorySegment s, long off, float alpha, float[] y, int yo, int n) {
            for (int i = 0; i < n; i++) y[yo + i] += alpha * bf16(s, off + 2L * i);
        }
    };

    static final RowKernel BF16_VECTOR = new RowKernel() {
        public GGMLType type() { return GGMLType.BF16; }

        public void dequantize(MemorySegment s, long off, float[] dst, int d, int n) {
            int i = 0;
            for (int end = n - FL; i <= end; i += FL) bf(s, off + 2L * i).intoArray(dst, d + i);
            for (; i < n; i++) dst[d + i] = bf16(s, off + 2L * i);
        }

        public float dot(MemorySegment s, long off, float[] x, int xo, int n) {
            FloatVector a0 = FloatVector.zero(F), a1 = a0, a2 = a0, a3 = a0;
            int i = 0;
            for (int end = n - 4 * FL; i <= end; i += 4 * FL) {
                long o = off + 2L * i;
                a0 = bf(s, o).fma(FloatVector.fromArray(F, x, xo + i), a0);
                a1 = bf(s, o + 2L * FL).fma(FloatVector.fromArray(F, x, xo + i + FL), a1);
                a2 = bf(s, o + 4L * FL).fma(FloatVector.fromArray(F, x, xo + i + 2 * FL), a2);
                a3 = bf(s, o + 6L * FL).fma(FloatVector.fromArray(F, x, xo + i + 3 * FL), a3);
            }
            for (int end = n - FL; i <= end; i += FL) a0 = bf(s, off + 2L * i).fma(FloatVector.fromArray(F, x, xo + i), a0);
            float sum = Simd.sum(a0.add(a1).add(a2.add(a3)));
            for (; i < n; i++) sum += bf16(s, off + 2L * i) * x[xo + i];
            return sum;
        }

        private static FloatVector bf(MemorySegment s, long o) {
            return Blocks.bf16ToFloat(ShortVector.fromMemorySegment(S, s, o, LE));
        }

        public void axpy(MemorySegment s, long off, float alpha, float[] y, int yo, int n) {
            FloatVector a = FloatVector.broadcast(F, alpha);
            int i = 0;
            for (int end = n - FL; i <= end; i += FL) bf(s, off + 2L * i).fma(a, FloatVector.fromArray(F, y, yo + i)).intoArray(y, yo + i);
            for (; i < n; i++) y[yo + i] += alpha * bf16(s, off + 2L * i);
        }
    };
}
