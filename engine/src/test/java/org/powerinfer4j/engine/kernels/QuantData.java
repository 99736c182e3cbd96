package org.powerinfer4j.engine.kernels;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Random;
import org.powerinfer4j.engine.tensor.GGMLType;

/** Random, valid rows in ggml block layout for tests: random quant bytes, finite f16 scales. */
final class QuantData {
    private QuantData() {}

    static final GGMLType[] TYPES = {GGMLType.F32, GGMLType.F16, GGMLType.BF16, GGMLType.Q8_0, GGMLType.Q4_0,
            GGMLType.Q4_1, GGMLType.Q5_0, GGMLType.Q5_1, GGMLType.Q2_K, GGMLType.Q3_K, GGMLType.Q4_K, GGMLType.Q5_K,
            GGMLType.Q6_K, GGMLType.IQ4_NL, GGMLType.IQ4_XS, GGMLType.MXFP4};

    private static final ValueLayout.OfShort SHORT_LE = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfFloat FLOAT_LE = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /** Byte offsets of the ggml_half scale fields inside one block. */
    static int[] halfFields(GGMLType t) {
        return switch (t) {
            case Q8_0, Q4_0, Q5_0, IQ4_NL, IQ4_XS -> new int[] {0};
            case Q4_1, Q5_1, Q4_K, Q5_K -> new int[] {0, 2};
            case Q2_K -> new int[] {80, 82};
            case Q3_K -> new int[] {108};
            case Q6_K -> new int[] {208};
            default -> new int[0];
        };
    }

    /** Byte range [from, to) of the quant bits inside one block (zeroing it leaves only the offset/min part). */
    static int[] quantRange(GGMLType t) {
        return switch (t) {
            case Q8_0, Q4_0, Q5_0, IQ4_NL -> new int[] {2, t.typeSize};
            case Q4_1, Q5_1 -> new int[] {4, t.typeSize};
            case Q2_K -> new int[] {16, 80};
            case Q3_K -> new int[] {0, 96};
            case IQ4_XS -> new int[] {8, t.typeSize};
            case MXFP4 -> new int[] {1, t.typeSize};
            case Q4_K, Q5_K -> new int[] {16, t.typeSize};
            case Q6_K -> new int[] {0, 192};
            default -> new int[] {0, 0};
        };
    }

    /** A random finite half: moderate by default, anywhere from subnormal to 65504 when {@code extreme}. */
    static short randomHalf(Random r, boolean extreme) {
        float v;
        if (extreme) {
            short h;
            do h = (short) r.nextInt(1 << 16); while ((h & 0x7c00) == 0x7c00);
            return h;
        }
        v = (float) (r.nextGaussian() * 0.05);
        return Float.floatToFloat16(v);
    }

    /** Fills {@code n} elements of type {@code t} at {@code off}. */
    static void fill(GGMLType t, Random r, MemorySegment s, long off, int n, boolean extreme) {
        switch (t) {
            case F32 -> {
                for (int i = 0; i < n; i++) {
                    float v = extreme ? (float) (r.nextGaussian() * Math.pow(2, r.nextInt(60) - 30)) : (float) r.nextGaussian();
                    s.set(FLOAT_LE, off + 4L * i, v);
                }
            }
            case F16 -> {
                for (int i = 0; i < n; i++) s.set(SHORT_LE, off + 2L * i, randomHalf(r, extreme));
            }
            case BF16 -> {
                for (int i = 0; i < n; i++) {
                    float v = extreme ? (float) (r.nextGaussian() * Math.pow(2, r.nextInt(60) - 30)) : (float) r.nextGaussian();
                    s.set(SHORT_LE, off + 2L * i, (short) (Float.floatToRawIntBits(v) >>> 16));
                }
            }
            default -> {
                int blocks = n / t.blockSize;
                byte[] raw = new byte[blocks * t.typeSize];
                r.nextBytes(raw);
                MemorySegment.copy(raw, 0, s, ValueLayout.JAVA_BYTE, off, raw.length);
                for (int b = 0; b < blocks; b++) {
                    for (int f : halfFields(t)) s.set(SHORT_LE, off + (long) b * t.typeSize + f, randomHalf(r, extreme));
                    // MXFP4's scale is an E8M0 exponent byte, 2^(e-128): around 2^-10..2^2 by default; when extreme,
                    // anywhere from the subnormal 2^-128 (e = 0) to 2^100, where 12·2^100 times a dot of 9 blocks
                    // of N(0,1) stays far from float overflow
                    if (t == GGMLType.MXFP4) s.set(ValueLayout.JAVA_BYTE, off + (long) b * t.typeSize, (byte) (extreme ? r.nextInt(229) : 118 + r.nextInt(13)));
                }
            }
        }
    }

    /** A copy of the row at {@code off} with every quant bit cleared (only offsets/mins remain). */
    static MemorySegment zeroQuants(GGMLType t, MemorySegment s, long off, int n, Arena arena) {
        long bytes = t.byteSize(n);
        MemorySegment c = arena.allocate(bytes);
        MemorySegment.copy(s, off, c, 0, bytes);
        int[] q = quantRange(t);
        for (long b = 0; b < n / t.blockSize; b++) c.asSlice(b * t.typeSize + q[0], q[1] - q[0]).fill((byte) 0);
        return c;
    }

    static float[] randomFloats(Random r, int n) {
        float[] x = new float[n];
        for (int i = 0; i < n; i++) x[i] = (float) r.nextGaussian();
        return x;
    }

    /**
     * Error budget for a float dot of n products evaluated in two different orders (and with scale factoring):
     * each evaluation is within γ_(n+c) · Σ|terms| of the exact value (γ_k ≈ k·2^-24, Higham §3.1), where the
     * terms are the quant part and the offset part of every weight, hence Σ|x|(|w| + |offset|).
     */
    static double dotTolerance(GGMLType t, MemorySegment s, long off, float[] x, int xo, int n) {
        float[] w = new float[n], w0 = new float[n];
        Kernels.scalar(t).dequantize(s, off, w, 0, n);
        try (Arena a = Arena.ofConfined()) {
            if (t.isQuantized()) Kernels.scalar(t).dequantize(zeroQuants(t, s, off, n, a), 0, w0, 0, n);
        }
        double mag = 0;
        for (int i = 0; i < n; i++) mag += Math.abs(x[xo + i]) * (Math.abs((double) w[i]) + Math.abs((double) w0[i]));
        return 2.0 * (n + 16) * 0x1p-24 * mag + Float.MIN_NORMAL;
    }

    /** Exact-ish (double) dot of the scalar dequantization with x. */
    static double exactDot(GGMLType t, MemorySegment s, long off, float[] x, int xo, int n) {
        float[] w = new float[n];
        Kernels.scalar(t).dequantize(s, off, w, 0, n);
        double sum = 0;
        for (int i = 0; i < n; i++) sum += (double) w[i] * x[xo + i];
        return sum;
    }
}
