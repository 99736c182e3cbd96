package org.powerinfer4j.engine.kernels;

import static org.powerinfer4j.engine.kernels.Simd.B;
import static org.powerinfer4j.engine.kernels.Simd.F;
import static org.powerinfer4j.engine.kernels.Simd.I;
import static org.powerinfer4j.engine.kernels.Simd.LE;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;

/** Little helpers shared by the block kernels: scalar field reads and lane-type conversions. */
final class Blocks {
    private Blocks() {}

    static final ValueLayout.OfShort SHORT_LE = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(LE);
    static final ValueLayout.OfFloat FLOAT_LE = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(LE);

    /** The ggml_half at {@code off} as a float. */
    static float f16(MemorySegment s, long off) {
        return Float.float16ToFloat(s.get(SHORT_LE, off));
    }

    /** Unsigned byte at {@code off}. */
    static int u8(MemorySegment s, long off) {
        return s.get(ValueLayout.JAVA_BYTE, off) & 0xFF;
    }

    /** Signed byte at {@code off}. */
    static int i8(MemorySegment s, long off) {
        return s.get(ValueLayout.JAVA_BYTE, off);
    }

    static void checkBlocks(int n, int blockSize) {
        if (n % blockSize != 0) throw new IllegalArgumentException("row length " + n + " is not a multiple of block size " + blockSize);
    }

    // ---- vector helpers (only called from the vector kernels) ----

    static FloatVector bc(float v) {
        return FloatVector.broadcast(F, v);
    }

    static ByteVector loadBytes(MemorySegment s, long off) {
        return ByteVector.fromMemorySegment(B, s, off, LE);
    }

    /** Part {@code part} of a byte vector, sign-extended to int lanes. */
    static IntVector toInts(ByteVector b, int part) {
        return (IntVector) b.convertShape(VectorOperators.B2I, I, part);
    }

    /** Part {@code part} of a byte vector (signed), converted to float lanes. */
    static FloatVector toFloats(ByteVector b, int part) {
        return (FloatVector) b.convertShape(VectorOperators.B2F, F, part);
    }

    static FloatVector toFloats(IntVector v) {
        return (FloatVector) v.convert(VectorOperators.I2F, 0);
    }

    /**
     * IEEE half to float, exactly as {@link Float#float16ToFloat}, with no float arithmetic on denormals: normals are
     * rebiased in the integer domain (exponent + 112), Inf/NaN get the all-ones exponent, subnormals and zeros are
     * their mantissa × 2^-24 (exact, and a normal float). The earlier form multiplied the shifted bits by 2^112, a
     * denormal operand for every subnormal half: on Intel cores each such vector multiply takes a microcode assist,
     * and F16 rows of small weights (|w| < 6.1e-5 in some lanes of most vectors) ran 10× slower (measured on a Xeon
     * with 1e-3-scale weights: 0.66 vs 7.1 G elements/s in {@code axpyF16}).
     */
    static FloatVector halfToFloat(ShortVector h) {
        IntVector v = (IntVector) h.convertShape(VectorOperators.ZERO_EXTEND_S2I, I, 0);
        IntVector mag = v.and(0x7fff), exp = v.and(0x7c00);
        IntVector shifted = mag.lanewise(VectorOperators.LSHL, 13);
        IntVector bits = shifted.add(112 << 23);
        bits = bits.blend(shifted.or(0x7f800000), exp.eq(0x7c00));
        FloatVector sub = ((FloatVector) mag.convert(VectorOperators.I2F, 0)).mul(0x1p-24f);
        bits = bits.blend(sub.reinterpretAsInts(), exp.eq(0));
        return bits.or(v.and(0x8000).lanewise(VectorOperators.LSHL, 16)).reinterpretAsFloats();
    }

    /**
     * Half to float for finite halves given sign-extended in int lanes: shifting by 13 puts exponent and mantissa
     * in float position (and sign copies in bits 28..30, cleared), then × 2^112 rebiases — exact for normals,
     * subnormals and zeros. Inf/NaN (exponent 31) come out as wrong finite values: callers check for them.
     */
    static FloatVector finiteHalfToFloat(IntVector signExtended) {
        return signExtended.lanewise(VectorOperators.LSHL, 13).and(0x8fffffff).reinterpretAsFloats().mul(0x1p112f);
    }

    /** bfloat16 to float: the 16 bits are the top half of the float. */
    static FloatVector bf16ToFloat(ShortVector h) {
        IntVector v = (IntVector) h.convertShape(VectorOperators.ZERO_EXTEND_S2I, I, 0);
        return v.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats();
    }
}
