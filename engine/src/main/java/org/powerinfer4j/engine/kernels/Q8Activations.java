package org.powerinfer4j.engine.kernels;

import static org.powerinfer4j.engine.kernels.Blocks.f16;
import static org.powerinfer4j.engine.kernels.Simd.F;
import static org.powerinfer4j.engine.kernels.Simd.I;
import static org.powerinfer4j.engine.kernels.Simd.LE;

import java.lang.foreign.MemorySegment;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShape;
import jdk.incubator.vector.VectorSpecies;

/**
 * Activations quantized to Q8 the way llama.cpp does it for integer dot products ({@code quantize_row_q8_0}:
 * per 32 values, d = max|x|/127 and q = round(x/d)), plus the integer Q8_0·Q8 dot.
 *
 * <p><b>Measured, not used by {@link MatrixOps}.</b> The Vector API has no pmaddubsw/vpdpbusd, so the integer
 * path must widen bytes to shorts, multiply, and widen again to ints — more instructions per weight than widening
 * the weight bytes to floats and FMA-ing with float activations, and it loses precision. {@code DotVariantsBench}
 * (bench module) compares both on the same L2-resident matrix. Measured on the AVX-512 EPYC (1 thread, best of 60,
 * quantization included): float activations 20.2 Gweights/s vs Q8 activations 11.4 at 512-bit, 15.5 vs 11.0 at
 * 256-bit. So every type keeps the float kernels; this class stays as the measured alternative.
 */
public final class Q8Activations {
    private static final int QK = 32;
    /** Bytes loaded per step: half the float width, so the byte→short widening fills one vector of F's shape. */
    private static final VectorSpecies<Byte> B8 = VectorSpecies.of(byte.class, VectorShape.forBitSize(Math.max(64, F.vectorBitSize() / 2)));
    private static final VectorSpecies<Short> S16 = VectorSpecies.of(short.class, VectorShape.forBitSize(B8.vectorBitSize() * 2));
    private static final int STEP = B8.length();

    final byte[] qs;
    final float[] d;
    final int n;

    private Q8Activations(int n) {
        this.n = n;
        this.qs = new byte[n];
        this.d = new float[n / QK];
    }

    /** Quantizes x[off..off+n) (n a multiple of 32). */
    public static Q8Activations quantize(float[] x, int off, int n) {
        Blocks.checkBlocks(n, QK);
        Q8Activations a = new Q8Activations(n);
        for (int b = 0; b < n / QK; b++) {
            float amax = 0f;
            for (int j = 0; j < QK; j++) amax = Math.max(amax, Math.abs(x[off + b * QK + j]));
            float d = amax / 127f, id = d != 0f ? 1f / d : 0f;
            a.d[b] = d;
            for (int j = 0; j < QK; j++) a.qs[b * QK + j] = (byte) Math.round(x[off + b * QK + j] * id);
        }
        return a;
    }

    public int length() {
        return n;
    }

    /** Q8_0 weights (see {@link LegacyQuantKernels}) · quantized activations, integer products per block. */
    public static float dotQ8_0(MemorySegment s, long off, Q8Activations a, int n) {
        Blocks.checkBlocks(n, QK);
        FloatVector acc = FloatVector.zero(F);
        for (int b = 0; b < n / QK; b++) {
            long blk = off + (long) b * LegacyQuantKernels.Q8_0_BYTES;
            IntVector isum = IntVector.zero(I);
            for (int j = 0; j < QK; j += STEP) {
                ShortVector w = (ShortVector) ByteVector.fromMemorySegment(B8, s, blk + 2 + j, LE).convertShape(VectorOperators.B2S, S16, 0);
                ShortVector x = (ShortVector) ByteVector.fromArray(B8, a.qs, b * QK + j).convertShape(VectorOperators.B2S, S16, 0);
                ShortVector p = w.mul(x); // |p| <= 128·127 fits a short
                isum = isum.add(p.convertShape(VectorOperators.S2I, I, 0)).add(p.convertShape(VectorOperators.S2I, I, 1));
            }
            acc = ((FloatVector) isum.convert(VectorOperators.I2F, 0)).fma(Blocks.bc(f16(s, blk) * a.d[b]), acc);
        }
        return Simd.sum(acc);
    }

    /** Scalar reference of {@link #dotQ8_0}. */
    public static float dotQ8_0Scalar(MemorySegment s, long off, Q8Activations a, int n) {
        Blocks.checkBlocks(n, QK);
        float sum = 0f;
        for (int b = 0; b < n / QK; b++) {
            long blk = off + (long) b * LegacyQuantKernels.Q8_0_BYTES;
            int isum = 0;
            for (int j = 0; j < QK; j++) isum += Blocks.i8(s, blk + 2 + j) * a.qs[b * QK + j];
            sum += isum * (f16(s, blk) * a.d[b]);
        }
        return sum;
    }
}
