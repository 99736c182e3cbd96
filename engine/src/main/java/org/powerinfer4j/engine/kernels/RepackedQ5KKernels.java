package org.powerinfer4j.engine.kernels;

import static org.powerinfer4j.engine.kernels.Simd.F;
import static org.powerinfer4j.engine.kernels.Simd.FL;
import static org.powerinfer4j.engine.kernels.Simd.I;
import static org.powerinfer4j.engine.kernels.Simd.LE;
import static org.powerinfer4j.engine.tensor.RepackedQ5K.PAIR;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShape;
import jdk.incubator.vector.VectorShuffle;
import jdk.incubator.vector.VectorSpecies;
import org.powerinfer4j.engine.tensor.RepackedQ5K;

/**
 * Decode dot products over {@link RepackedQ5K} rows, against activations permuted once per product
 * ({@link #prepare}). Per vector of words and column slot: a mask, an int→float convert and one FMA (as the other
 * repacked kernels), in two chains per row (even and odd words: one chain per row leaves four rows latency-bound);
 * then per tile two more for the columns 30 and 31 of each lane (their bits gathered from the five words' tops), one
 * FMA with the vector of the 16 sub-block scales d·sc and one with the mins dmin·m against −Σx of each sub-block.
 * Four rows at a time share every activation load ({@link #dot4}).
 *
 * <p>The sums are reassociated (Σ d·sc·Σ q·x − dmin·m·Σ x) as in the other quantized dots; {@link #dotReference} is
 * the scalar definition the tests compare against, and {@link #dot} and {@link #dot4} give the same bits for a row.
 */
public final class RepackedQ5KKernels {
    private RepackedQ5KKernels() {}

    /** Whether the kernels can run here: the Vector API is enabled and a vector covers at most a tile's 16 lanes. */
    public static final boolean SUPPORTED = Simd.ENABLED && FL >= 4 && FL <= 16;

    private static final ValueLayout.OfFloat FLE = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    /** Scale and min bytes: at least FL of them (64-bit at least, the smallest byte species). */
    private static final VectorSpecies<Byte> B = VectorSpecies.of(byte.class, VectorShape.forBitSize(Math.max(64, FL * 8)));
    /** At 512 bits, lane l takes the factor of super-block l/8 of the pair (the row's two d, or two dmin, loaded as the first lanes). */
    private static final VectorShuffle<Float> PAIR_FACTORS = FL == 16 ? VectorShuffle.fromOp(F, l -> l / 8) : null;

    /** Floats of the {@code xs} that {@link #prepare} fills: one per sub-block of the padded row. */
    public static int offsetsLength(RepackedQ5K m) {
        return m.paddedLength() / 32;
    }

    /**
     * Writes x[xOff..xOff+n) to {@code xp[0..paddedLength)} in the kernels' order — column {@code 32j + p} of a tile at
     * {@code 16p + j}, scaled by {@code 2^-5(p mod 6)} for p &lt; 30 and by {@code 2^-5} for p = 31 to meet the quants
     * masked in place (exact: powers of two), padding columns 0 — and {@code xs[16t + j]} = −Σx over sub-block j of tile t.
     */
    public static void prepare(RepackedQ5K m, float[] x, int xOff, float[] xp, float[] xs) {
        int n = m.rowLength();
        for (int t = 0; t < m.tiles(); t++) {
            for (int j = 0; j < 16; j++) {
                float sum = 0f;
                for (int p = 0; p < 32; p++) {
                    int col = PAIR * t + 32 * j + p;
                    float v = col < n ? x[xOff + col] : 0f;
                    xp[PAIR * t + 16 * p + j] = p < 30 ? Math.scalb(v, -5 * (p % 6)) : p == 31 ? Math.scalb(v, -5) : v;
                    sum += v;
                }
                xs[16 * t + j] = -sum;
            }
        }
    }

    /** Scalar definition over x in column order: Σ_sub-block ((d·sc)·Σ q·x − (dmin·m)·Σ x). */
    public static float dotReference(RepackedQ5K m, int row, float[] x, int xOff) {
        float sum = 0f;
        for (int b = 0; b < m.rowLength() / 32; b++) {
            float p = 0f, sx = 0f;
            for (int i = 0; i < 32; i++) {
                float v = x[xOff + 32 * b + i];
                p += m.quant(row, 32 * b + i) * v;
                sx += v;
            }
            sum += m.scale(row, b) * p - m.min(row, b) * sx;
        }
        return sum;
    }

    /** Row {@code row} · x, with {@code xp}/{@code xs} from {@link #prepare}: bit-identical to {@link #dot4}'s result for that row. */
    public static float dot(RepackedQ5K m, int row, float[] xp, float[] xs) {
        MemorySegment seg = m.data();
        FloatVector acc = FloatVector.zero(F);
        int r = row & 3, tiles = m.tiles();
        long t = m.tileOffset(row, 0);
        for (int c = 0; c < tiles; c++, t += RepackedQ5K.STRIDE) {
            for (int g = 0; g < 16; g += FL) {
                FloatVector p = FloatVector.zero(F), q = p;   // dot4's two chains
                IntVector h = IntVector.zero(I);
                int xb = PAIR * c + g;
                for (int i = 0; i < 5; i++) {
                    IntVector w = IntVector.fromMemorySegment(I, seg, t + (long) RepackedQ5K.VECTOR_STRIDE * i + 64L * r + 4L * g, LE);
                    for (int k = 0; k < 6; k++) {
                        FloatVector xv = FloatVector.fromArray(F, xp, xb + 16 * (6 * i + k));
                        FloatVector v = (FloatVector) w.and(0x1F << (5 * k)).convert(VectorOperators.I2F, 0);
                        if ((k & 1) == 1) q = v.fma(xv, q);
                        else p = v.fma(xv, p);
                    }
                    h = h.or(w.lanewise(VectorOperators.LSHR, 30 - 2 * i).and(3 << (2 * i)));
                }
                FloatVector c31 = (FloatVector) h.and(0x3E0).convert(VectorOperators.I2F, 0);
                FloatVector c30 = (FloatVector) h.and(0x1F).convert(VectorOperators.I2F, 0);
                p = p.add(c30.fma(FloatVector.fromArray(F, xp, xb + 480), c31.fma(FloatVector.fromArray(F, xp, xb + 496), q)));
                acc = p.fma(factors(seg, t, RepackedQ5K.SC, RepackedQ5K.D, r, g), acc);
                acc = factors(seg, t, RepackedQ5K.MN, RepackedQ5K.DMIN, r, g).fma(FloatVector.fromArray(F, xs, 16 * c + g), acc);
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
    public static void dot4(RepackedQ5K m, int row, float[] xp, float[] xs, float[] out, int o, float[] lanes) {
        if ((row & 3) != 0) throw new IllegalArgumentException("dot4 needs a row group start, not row " + row);
        MemorySegment seg = m.data();
        FloatVector a0 = FloatVector.zero(F), a1 = a0, a2 = a0, a3 = a0;
        // no calls of our own in the loop: past C2's inlining budget they stay calls, and their vectors are boxed
        int tiles = m.tiles();
        long t = m.tileOffset(row, 0);
        for (int c = 0; c < tiles; c++, t += RepackedQ5K.STRIDE) {
            for (int g = 0; g < 16; g += FL) {
                FloatVector p0 = FloatVector.zero(F), p1 = p0, p2 = p0, p3 = p0, q0 = p0, q1 = p0, q2 = p0, q3 = p0;
                IntVector h0 = IntVector.zero(I), h1 = h0, h2 = h0, h3 = h0;
                int xb = PAIR * c + g;
                for (int i = 0; i < 5; i++) {
                    long wo = t + (long) RepackedQ5K.VECTOR_STRIDE * i + 4L * g;
                    IntVector w0 = IntVector.fromMemorySegment(I, seg, wo, LE);
                    IntVector w1 = IntVector.fromMemorySegment(I, seg, wo + 64, LE);
                    IntVector w2 = IntVector.fromMemorySegment(I, seg, wo + 128, LE);
                    IntVector w3 = IntVector.fromMemorySegment(I, seg, wo + 192, LE);
                    for (int k = 0; k < 6; k++) {
                        FloatVector xv = FloatVector.fromArray(F, xp, xb + 16 * (6 * i + k));
                        int mask = 0x1F << (5 * k);
                        if ((k & 1) == 1) {
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
                    int shift = 30 - 2 * i, bits = 3 << (2 * i);
                    h0 = h0.or(w0.lanewise(VectorOperators.LSHR, shift).and(bits));
                    h1 = h1.or(w1.lanewise(VectorOperators.LSHR, shift).and(bits));
                    h2 = h2.or(w2.lanewise(VectorOperators.LSHR, shift).and(bits));
                    h3 = h3.or(w3.lanewise(VectorOperators.LSHR, shift).and(bits));
                }
                FloatVector x30 = FloatVector.fromArray(F, xp, xb + 480), x31 = FloatVector.fromArray(F, xp, xb + 496);
                p0 = p0.add(((FloatVector) h0.and(0x1F).convert(VectorOperators.I2F, 0)).fma(x30, ((FloatVector) h0.and(0x3E0).convert(VectorOperators.I2F, 0)).fma(x31, q0)));
                p1 = p1.add(((FloatVector) h1.and(0x1F).convert(VectorOperators.I2F, 0)).fma(x30, ((FloatVector) h1.and(0x3E0).convert(VectorOperators.I2F, 0)).fma(x31, q1)));
                p2 = p2.add(((FloatVector) h2.and(0x1F).convert(VectorOperators.I2F, 0)).fma(x30, ((FloatVector) h2.and(0x3E0).convert(VectorOperators.I2F, 0)).fma(x31, q2)));
                p3 = p3.add(((FloatVector) h3.and(0x1F).convert(VectorOperators.I2F, 0)).fma(x30, ((FloatVector) h3.and(0x3E0).convert(VectorOperators.I2F, 0)).fma(x31, q3)));
                // factors(...), written out; the scale and min lines come after the word lines (address order)
                FloatVector nsx = FloatVector.fromArray(F, xs, 16 * c + g);
                FloatVector d0, d1, d2, d3, e0, e1, e2, e3;   // the rows' d and dmin per lane
                if (FL == 16) {
                    d0 = FloatVector.fromMemorySegment(F, seg, t + RepackedQ5K.D, LE).rearrange(PAIR_FACTORS);
                    d1 = FloatVector.fromMemorySegment(F, seg, t + RepackedQ5K.D + 8, LE).rearrange(PAIR_FACTORS);
                    d2 = FloatVector.fromMemorySegment(F, seg, t + RepackedQ5K.D + 16, LE).rearrange(PAIR_FACTORS);
                    d3 = FloatVector.fromMemorySegment(F, seg, t + RepackedQ5K.D + 24, LE).rearrange(PAIR_FACTORS);
                    e0 = FloatVector.fromMemorySegment(F, seg, t + RepackedQ5K.DMIN, LE).rearrange(PAIR_FACTORS);
                    e1 = FloatVector.fromMemorySegment(F, seg, t + RepackedQ5K.DMIN + 8, LE).rearrange(PAIR_FACTORS);
                    e2 = FloatVector.fromMemorySegment(F, seg, t + RepackedQ5K.DMIN + 16, LE).rearrange(PAIR_FACTORS);
                    e3 = FloatVector.fromMemorySegment(F, seg, t + RepackedQ5K.DMIN + 24, LE).rearrange(PAIR_FACTORS);
                } else {
                    long fo = 4L * (g / 8);
                    d0 = FloatVector.broadcast(F, seg.get(FLE, t + RepackedQ5K.D + fo));
                    d1 = FloatVector.broadcast(F, seg.get(FLE, t + RepackedQ5K.D + 8 + fo));
                    d2 = FloatVector.broadcast(F, seg.get(FLE, t + RepackedQ5K.D + 16 + fo));
                    d3 = FloatVector.broadcast(F, seg.get(FLE, t + RepackedQ5K.D + 24 + fo));
                    e0 = FloatVector.broadcast(F, seg.get(FLE, t + RepackedQ5K.DMIN + fo));
                    e1 = FloatVector.broadcast(F, seg.get(FLE, t + RepackedQ5K.DMIN + 8 + fo));
                    e2 = FloatVector.broadcast(F, seg.get(FLE, t + RepackedQ5K.DMIN + 16 + fo));
                    e3 = FloatVector.broadcast(F, seg.get(FLE, t + RepackedQ5K.DMIN + 24 + fo));
                }
                long sc = t + RepackedQ5K.SC + g, mn = t + RepackedQ5K.MN + g;
                a0 = p0.fma(((FloatVector) ByteVector.fromMemorySegment(B, seg, sc, LE).convertShape(VectorOperators.B2F, F, 0)).mul(d0), a0);
                a1 = p1.fma(((FloatVector) ByteVector.fromMemorySegment(B, seg, sc + 16, LE).convertShape(VectorOperators.B2F, F, 0)).mul(d1), a1);
                a2 = p2.fma(((FloatVector) ByteVector.fromMemorySegment(B, seg, sc + 32, LE).convertShape(VectorOperators.B2F, F, 0)).mul(d2), a2);
                a3 = p3.fma(((FloatVector) ByteVector.fromMemorySegment(B, seg, sc + 48, LE).convertShape(VectorOperators.B2F, F, 0)).mul(d3), a3);
                a0 = ((FloatVector) ByteVector.fromMemorySegment(B, seg, mn, LE).convertShape(VectorOperators.B2F, F, 0)).mul(e0).fma(nsx, a0);
                a1 = ((FloatVector) ByteVector.fromMemorySegment(B, seg, mn + 16, LE).convertShape(VectorOperators.B2F, F, 0)).mul(e1).fma(nsx, a1);
                a2 = ((FloatVector) ByteVector.fromMemorySegment(B, seg, mn + 32, LE).convertShape(VectorOperators.B2F, F, 0)).mul(e2).fma(nsx, a2);
                a3 = ((FloatVector) ByteVector.fromMemorySegment(B, seg, mn + 48, LE).convertShape(VectorOperators.B2F, F, 0)).mul(e3).fma(nsx, a3);
            }
        }
        // the sums leave through the array: sum4 is not inlined into this body, and vectors passed to a call are boxed
        a0.intoArray(lanes, 0);
        a1.intoArray(lanes, FL);
        a2.intoArray(lanes, 2 * FL);
        a3.intoArray(lanes, 3 * FL);
        Simd.sum4(FloatVector.fromArray(F, lanes, 0), FloatVector.fromArray(F, lanes, FL), FloatVector.fromArray(F, lanes, 2 * FL),
                FloatVector.fromArray(F, lanes, 3 * FL), lanes);   // the four inputs are loaded before lanes[0, FL) is overwritten
        out[o] = lanes[0];
        out[o + 1] = lanes[Simd.SUM4_STRIDE];
        out[o + 2] = lanes[2 * Simd.SUM4_STRIDE];
        out[o + 3] = lanes[3 * Simd.SUM4_STRIDE];
    }

    /** Sub-block scales d·sc (or mins dmin·m) of FL lanes from {@code g} of row r's bytes and factors, one float product each (as Q5_K's dequantization). */
    private static FloatVector factors(MemorySegment seg, long t, int bytes, int factors, int r, int g) {
        return bytes(seg, t + bytes + 16L * r + g).mul(pairFactor(seg, t + factors + 8L * r, g));
    }

    /** FL 6-bit scale or min bytes at {@code at}, as floats. */
    private static FloatVector bytes(MemorySegment seg, long at) {
        return (FloatVector) ByteVector.fromMemorySegment(B, seg, at, LE).convertShape(VectorOperators.B2F, F, 0);
    }

    /** Lanes g..g+FL-1's factor of a row's two at {@code at} (lane g+l is in super-block (g+l)/8 of the pair). */
    private static FloatVector pairFactor(MemorySegment seg, long at, int g) {
        if (FL == 16) return FloatVector.fromMemorySegment(F, seg, at, LE).rearrange(PAIR_FACTORS);
        return FloatVector.broadcast(F, seg.get(FLE, at + 4L * (g / 8)));
    }
}
