package org.powerinfer4j.engine.kernels;

import static org.powerinfer4j.engine.kernels.Simd.F;
import static org.powerinfer4j.engine.kernels.Simd.FL;
import static org.powerinfer4j.engine.kernels.Simd.I;
import static org.powerinfer4j.engine.kernels.Simd.LE;
import static org.powerinfer4j.engine.tensor.RepackedQ6K.D;
import static org.powerinfer4j.engine.tensor.RepackedQ6K.QK_K;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShape;
import jdk.incubator.vector.VectorSpecies;
import org.powerinfer4j.engine.tensor.RepackedQ6K;

/**
 * Decode dot products over {@link RepackedQ6K} rows, against activations permuted once per product
 * ({@link #prepare}). Per vector of words and column slot: a mask, an int→float convert and one FMA — as the
 * repacked Q4 kernel — then per super-block one more for the 16th column (its bits gathered from the three words'
 * tops) and one FMA with the vector of the 16 sub-block scales. Each lane starts at −32·Σx of its sub-block, so it
 * ends at Σ (q − 32)·x. Four rows at a time share every activation load ({@link #dot4}).
 *
 * <p>The sums are reassociated (Σ scale·Σ (q − 32)·x) as in the other quantized dots; {@link #dotReference} is the
 * scalar definition the tests compare against, and {@link #dot} and {@link #dot4} give the same bits for a row.
 */
public final class RepackedQ6KKernels {
    private RepackedQ6KKernels() {}

    /** Whether the kernels can run here: the Vector API is enabled and a vector covers at most a super-block's 16 lanes. */
    public static final boolean SUPPORTED = Simd.ENABLED && FL >= 4 && FL <= 16;

    private static final ValueLayout.OfFloat FLE = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    /** Scale bytes: at least FL of them (64-bit at least, the smallest byte species). */
    private static final VectorSpecies<Byte> B = VectorSpecies.of(byte.class, VectorShape.forBitSize(Math.max(64, FL * 8)));

    /** Floats of the {@code xs} that {@link #prepare} fills for rows of n columns: one per sub-block. */
    public static int offsetsLength(int n) {
        return n / 16;
    }

    /**
     * Writes x[xOff..xOff+n) to {@code xp[0..n)} in the kernels' order — column {@code 16j + p} of a super-block at
     * {@code 16p + j}, scaled by {@code 2^-6(p mod 5)} for p &lt; 15 to meet the quants masked in place (exact: powers
     * of two) — and {@code xs[16s + j]} = −32·Σx over sub-block j of super-block s.
     */
    public static void prepare(RepackedQ6K m, float[] x, int xOff, float[] xp, float[] xs) {
        for (int s = 0; s < m.superBlocks(); s++) {
            for (int j = 0; j < 16; j++) {
                float sum = 0f;
                for (int p = 0; p < 16; p++) {
                    float v = x[xOff + QK_K * s + 16 * j + p];
                    xp[QK_K * s + 16 * p + j] = p < 15 ? Math.scalb(v, -6 * (p % 5)) : v;
                    sum += v;
                }
                xs[16 * s + j] = -32f * sum;
            }
        }
    }

    /** Scalar definition over x in column order: Σ_sub-block (d·sc)·Σ (q − 32)·x. */
    public static float dotReference(RepackedQ6K m, int row, float[] x, int xOff) {
        float sum = 0f;
        for (int b = 0; b < m.rowLength() / 16; b++) {
            float p = 0f;
            for (int i = 0; i < 16; i++) p += (m.quant(row, 16 * b + i) - 32) * x[xOff + 16 * b + i];
            sum += m.scale(row, b) * p;
        }
        return sum;
    }

    /** Row {@code row} · x, with {@code xp}/{@code xs} from {@link #prepare}: bit-identical to {@link #dot4}'s result for that row. */
    public static float dot(RepackedQ6K m, int row, float[] xp, float[] xs) {
        MemorySegment seg = m.data();
        FloatVector acc = FloatVector.zero(F);
        int r = row & 3, sbs = m.superBlocks();
        long wo = m.wordsOffset(row, 0), so = m.scalesOffset(row, 0);
        for (int s = 0; s < sbs; s++, wo += RepackedQ6K.STRIDE, so += RepackedQ6K.STRIDE) {
            for (int g = 0; g < 16; g += FL) {
                FloatVector p = FloatVector.fromArray(F, xs, 16 * s + g), q = FloatVector.zero(F);   // dot4's two chains
                IntVector hi = IntVector.zero(I);
                int xb = QK_K * s + g;
                for (int i = 0; i < 3; i++) {
                    IntVector w = IntVector.fromMemorySegment(I, seg, wo + (long) RepackedQ6K.VECTOR_STRIDE * i + 4L * g, LE);
                    for (int k = 0; k < 5; k++) {
                        FloatVector xv = FloatVector.fromArray(F, xp, xb + 16 * (5 * i + k));
                        if (i == 1) q = slot(w, k).fma(xv, q);
                        else p = slot(w, k).fma(xv, p);
                    }
                    hi = hi.or(top(w, i));
                }
                p = p.add(((FloatVector) hi.convert(VectorOperators.I2F, 0)).fma(FloatVector.fromArray(F, xp, xb + 240), q));
                acc = p.fma(scales(seg, so + 16L * r + g, seg.get(FLE, so + D + 4L * r)), acc);   // after the words: address order
            }
        }
        float[] lanes = Simd.lanes();
        FloatVector zero = FloatVector.zero(F);
        Simd.sum4(acc, zero, zero, zero, lanes);
        return lanes[0];
    }

    /**
     * {@code out[o..o+4)} = rows {@code row..row+3} · x ({@code row} a multiple of four). {@code lanes} is scratch of
     * at least 4·{@link Simd#FL} floats for the fixed-order lane sums.
     */
    public static void dot4(RepackedQ6K m, int row, float[] xp, float[] xs, float[] out, int o, float[] lanes) {
        if ((row & 3) != 0) throw new IllegalArgumentException("dot4 needs a row group start, not row " + row);
        MemorySegment seg = m.data();
        FloatVector a0 = FloatVector.zero(F), a1 = a0, a2 = a0, a3 = a0;
        // a group's tiles are consecutive: no calls in the loop (past C2's budget they stay calls, and every vector
        // register is spilled around each)
        int sbs = m.superBlocks();
        long t = m.wordsOffset(row, 0), so = m.scalesOffset(row, 0);
        for (int s = 0; s < sbs; s++, t += RepackedQ6K.STRIDE, so += RepackedQ6K.STRIDE) {   // a tile: 3 × (4 rows × 64 bytes of words)
            for (int g = 0; g < 16; g += FL) {
                // two FMA chains per row, words 0 and 2 in p, word 1 and the 16th column in q: a single 16-FMA chain
                // per row left the four rows' chains latency-bound
                FloatVector p0 = FloatVector.fromArray(F, xs, 16 * s + g), p1 = p0, p2 = p0, p3 = p0;
                FloatVector q0 = FloatVector.zero(F), q1 = q0, q2 = q0, q3 = q0;
                IntVector h0 = IntVector.zero(I), h1 = h0, h2 = h0, h3 = h0;
                int xb = QK_K * s + g;
                for (int i = 0; i < 3; i++) {
                    long wo = t + (long) RepackedQ6K.VECTOR_STRIDE * i + 4L * g;
                    IntVector w0 = IntVector.fromMemorySegment(I, seg, wo, LE);
                    IntVector w1 = IntVector.fromMemorySegment(I, seg, wo + 64, LE);
                    IntVector w2 = IntVector.fromMemorySegment(I, seg, wo + 128, LE);
                    IntVector w3 = IntVector.fromMemorySegment(I, seg, wo + 192, LE);
                    for (int k = 0; k < 5; k++) {
                        FloatVector xv = FloatVector.fromArray(F, xp, xb + 16 * (5 * i + k));
                        int mask = 0x3F << (6 * k);   // slot(w, k), written out (see below)
                        if (i == 1) {
                            q0 = ((FloatVector) w0.and(mask).convert(VectorOperators.I2F, 0)).fma(xv, q0);
                            q1 = ((FloatVector) w1.and(mask).convert(VectorOperators.I2F, 0)).fma(xv, q1);
                            q2 = ((FloatVector) w2.and(mask).convert(VectorOperators.I2F, 0)).fma(xv, q2);
                            q3 = ((FloatVector) w3.and(mask).convert(VectorOperators.I2F, 0)).fma(xv, q3);
                        } else {
                            p0 = ((FloatVector) w0.and(mask).convert(VectorOperators.I2F, 0)).fma(xv, p0);
                            p1 = ((FloatVector) w1.and(mask).convert(VectorOperators.I2F, 0)).fma(xv, p1);
                            p2 = ((FloatVector) w2.and(mask).convert(VectorOperators.I2F, 0)).fma(xv, p2);
                            p3 = ((FloatVector) w3.and(mask).convert(VectorOperators.I2F, 0)).fma(xv, p3);
                        }
                    }
                    int shift = 30 - 2 * i, bits = 3 << (2 * i);   // top(w, i)
                    h0 = h0.or(w0.lanewise(VectorOperators.LSHR, shift).and(bits));
                    h1 = h1.or(w1.lanewise(VectorOperators.LSHR, shift).and(bits));
                    h2 = h2.or(w2.lanewise(VectorOperators.LSHR, shift).and(bits));
                    h3 = h3.or(w3.lanewise(VectorOperators.LSHR, shift).and(bits));
                }
                FloatVector xv = FloatVector.fromArray(F, xp, xb + 240);
                p0 = p0.add(((FloatVector) h0.convert(VectorOperators.I2F, 0)).fma(xv, q0));
                p1 = p1.add(((FloatVector) h1.convert(VectorOperators.I2F, 0)).fma(xv, q1));
                p2 = p2.add(((FloatVector) h2.convert(VectorOperators.I2F, 0)).fma(xv, q2));
                p3 = p3.add(((FloatVector) h3.convert(VectorOperators.I2F, 0)).fma(xv, q3));
                long sg = so + g;   // scales(seg, at, d), written out
                a0 = p0.fma(((FloatVector) ByteVector.fromMemorySegment(B, seg, sg, LE).convertShape(VectorOperators.B2F, F, 0)).mul(seg.get(FLE, so + D)), a0);
                a1 = p1.fma(((FloatVector) ByteVector.fromMemorySegment(B, seg, sg + 16, LE).convertShape(VectorOperators.B2F, F, 0)).mul(seg.get(FLE, so + D + 4)), a1);
                a2 = p2.fma(((FloatVector) ByteVector.fromMemorySegment(B, seg, sg + 32, LE).convertShape(VectorOperators.B2F, F, 0)).mul(seg.get(FLE, so + D + 8)), a2);
                a3 = p3.fma(((FloatVector) ByteVector.fromMemorySegment(B, seg, sg + 48, LE).convertShape(VectorOperators.B2F, F, 0)).mul(seg.get(FLE, so + D + 12)), a3);
            }
        }
        // the sums leave through the array: sum4 is not inlined into this body, and vectors passed to a call are boxed
        a0.intoArray(lanes, 0);
        a1.intoArray(lanes, FL);
        a2.intoArray(lanes, 2 * FL);
        a3.intoArray(lanes, 3 * FL);
        storeLaneSums(lanes, out, o);
    }

    /** {@code out[o + r]} = the lane sum of accumulator r stored at {@code lanes[r·FL]}, by {@link Simd#sum4} (as {@link #dot}). */
    private static void storeLaneSums(float[] lanes, float[] out, int o) {
        Simd.sum4(FloatVector.fromArray(F, lanes, 0), FloatVector.fromArray(F, lanes, FL), FloatVector.fromArray(F, lanes, 2 * FL),
                FloatVector.fromArray(F, lanes, 3 * FL), lanes);   // the four inputs are loaded before lanes[0, FL) is overwritten
        out[o] = lanes[0];
        out[o + 1] = lanes[Simd.SUM4_STRIDE];
        out[o + 2] = lanes[2 * Simd.SUM4_STRIDE];
        out[o + 3] = lanes[3 * Simd.SUM4_STRIDE];
    }

    // dot4 writes the helpers below out: its body is past C2's inlining budget for ordinary methods (the Vector API's
    // own methods are force-inlined), and a helper left out of line boxes its vectors (measured: half the speed)

    /** Column slot 5i + k of every lane masked in place: the quant q·2^6k as a float (exact, six significant bits). */
    private static FloatVector slot(IntVector w, int k) {
        return (FloatVector) w.and(0x3F << (6 * k)).convert(VectorOperators.I2F, 0);
    }

    /** Word i's top two bits moved to bits 2i, 2i+1: the 16th column's quant is the or of the three words'. */
    private static IntVector top(IntVector w, int i) {
        return w.lanewise(VectorOperators.LSHR, 30 - 2 * i).and(3 << (2 * i));
    }

    /** The sub-block scales d·sc of FL lanes from their signed bytes at {@code at}, one float product each (as Q6_K's dequantization). */
    private static FloatVector scales(MemorySegment seg, long at, float d) {
        return ((FloatVector) ByteVector.fromMemorySegment(B, seg, at, LE).convertShape(VectorOperators.B2F, F, 0)).mul(d);
    }
}
