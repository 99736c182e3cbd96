package org.powerinfer4j.engine.kernels;

import static org.powerinfer4j.engine.kernels.Simd.F;
import static org.powerinfer4j.engine.kernels.Simd.FL;
import static org.powerinfer4j.engine.kernels.Simd.I;
import static org.powerinfer4j.engine.kernels.Simd.LE;
import static org.powerinfer4j.engine.tensor.RepackedQ4.CHUNK;
import static org.powerinfer4j.engine.tensor.RepackedQ4.WORDS;

import java.lang.foreign.MemorySegment;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShape;
import jdk.incubator.vector.VectorShuffle;
import jdk.incubator.vector.VectorSpecies;
import org.powerinfer4j.engine.tensor.RepackedQ4;

/**
 * Dot products and dequantization over {@link RepackedQ4} rows, against activations already permuted with
 * {@link #permuteForDot} (dequantization: {@link RepackedQ4#permute}). Per chunk and vector of words: for each
 * of the 8 nibble positions k a mask, an int→float convert and one FMA with 16 permuted activations — no shifts
 * (see {@link #nibble}), no shuffles, no byte widening. Each lane
 * starts at −8·Σx of its 8 columns, so the lane ends at Σ (q − 8)·x for one block, and one FMA with the lane's
 * block scale folds it into the row's accumulator. Four rows at a time share every activation load.
 *
 * <p>Q4_K ({@link RepackedQ4#mins()}): value = scale·q − min, so lanes start at 0 and end at Σ q·x, folded in by the
 * block scale as above; the mins then add Σ_block min·(−Σx) per row in a separate short pass over the tiles' mins
 * ({@link #addMinTerms}: one FMA per chunk for four rows). Kept apart because one more pair of scale loads in the
 * four-row body takes it past C2's inlining budget (NodeCountInliningCutoff), and its helpers then box.
 *
 * <p>{@link #dotReference} is the plain scalar definition the vector kernels are tested against.
 */
public final class RepackedQ4Kernels {
    private RepackedQ4Kernels() {}

    private static final java.lang.foreign.ValueLayout.OfFloat FLE = java.lang.foreign.ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(java.nio.ByteOrder.LITTLE_ENDIAN);

    /** Whether the vector kernels can run here: the Vector API is enabled and a vector covers at most a chunk's 16 words. */
    public static final boolean SUPPORTED = Simd.ENABLED && FL >= 4 && FL <= WORDS;

    /** Lane l of a vector of words takes the scale of block l/4 (4 words per 32-column block). */
    private static final VectorShuffle<Float> EXPAND = VectorShuffle.fromOp(F, l -> l / 4);

    /**
     * Scalar definition over the row in natural column order, x not permuted: Σ_col d(block)·(q − 8)·x[col] (Q4_0),
     * Σ_block (scale·Σ q·x − min·Σ x) (Q4_K).
     */
    public static float dotReference(RepackedQ4 m, int row, float[] x, int xOff) {
        float sum = 0f;
        for (int b = 0; b < m.rowLength() / 32; b++) {
            float p = 0f, sx = 0f;
            for (int i = 0; i < 32; i++) {
                float v = x[xOff + b * 32 + i];
                p += (m.mins() ? m.quant(row, b * 32 + i) : m.quant(row, b * 32 + i) - 8) * v;
                sx += v;
            }
            sum += m.mins() ? p * m.scale(row, b) - m.min(row, b) * sx : p * m.scale(row, b);
        }
        return sum;
    }

    /**
     * Prepares x for {@link #dot}/{@link #dot4} on {@code m}: {@link #permuteForDot}; for Q4_K, {@code xs} then holds
     * per chunk c the block sums −Σx of its 4 blocks once for each of a tile's 4 rows ({@code xs[16c + 4r + j]} =
     * −Σx over block 4c + j), the operand {@link #addMinTerms} multiplies with the tile's 16 mins.
     */
    public static void prepare(RepackedQ4 m, float[] x, int xOff, float[] xp, float[] xs) {
        permuteForDot(x, xOff, m.rowLength(), xp, xs);
        if (!m.mins()) return;
        for (int c = 0; c < m.chunks(); c++) {
            for (int j = 0; j < 4; j++) {
                float sum = 0f;
                for (int i = 0; i < 32; i++) {
                    int col = c * CHUNK + 32 * j + i;
                    if (col < m.rowLength()) sum += x[xOff + col];
                }
                for (int r = 0; r < 4; r++) xs[c * WORDS + 4 * r + j] = -sum;
            }
        }
    }

    /** Row {@code row} · x, with {@code xp}/{@code xs8} from {@link #prepare}. Bit-identical to {@link #dot4}'s result for that row. */
    public static float dot(RepackedQ4 m, int row, float[] xp, float[] xs8) {
        boolean mins = m.mins();   // Q4_K: lanes from 0, the min terms after
        MemorySegment seg = m.data();
        FloatVector acc = FloatVector.zero(F);
        int r = row & 3;
        for (int c = 0; c < m.chunks(); c++) {
            long wo = m.wordsOffset(row, c), t = m.tileOffset(row, c), so = t + RepackedQ4.SCALES + 16L * r;
            for (int g = 0; g < WORDS; g += FL) {
                IntVector w = IntVector.fromMemorySegment(I, seg, wo + g * 4L, LE);
                int xb = c * CHUNK + g;
                FloatVector s = mins ? FloatVector.zero(F) : FloatVector.fromArray(F, xs8, c * WORDS + g);
                for (int k = 0; k < 8; k++) s = nibble(w, k).fma(FloatVector.fromArray(F, xp, xb + WORDS * k), s);
                acc = s.fma(mins ? kFactors(seg, t, RepackedQ4.K_SCALES, RepackedQ4.K_D, r, g) : blockScales(seg, so, g), acc);
            }
        }
        float[] lanes = Simd.lanes();
        FloatVector zero = FloatVector.zero(F);
        Simd.sum4(acc, zero, zero, zero, lanes);
        return mins ? lanes[0] + minTerm(m, row, xs8) : lanes[0];
    }


    /**
     * Σ_block min·(−Σx) of one row: four partial sums (block j of each chunk), each a chain of FMAs in chunk order,
     * then {@code (p0 + p1) + (p2 + p3)} — exactly what {@link #addMinTerms}' lanes compute for that row.
     */
    static float minTerm(RepackedQ4 m, int row, float[] xs) {
        MemorySegment seg = m.data();
        float p0 = 0f, p1 = 0f, p2 = 0f, p3 = 0f;
        int r = row & 3;
        for (int c = 0; c < m.chunks(); c++) {
            long t = m.tileOffset(row, c), mo = t + RepackedQ4.K_MINS + 4L * r;
            float dmin = seg.get(FLE, t + RepackedQ4.K_DMIN + 4L * r);
            int xo = c * WORDS + 4 * r;
            p0 = Math.fma(dmin * seg.get(java.lang.foreign.ValueLayout.JAVA_BYTE, mo), xs[xo], p0);
            p1 = Math.fma(dmin * seg.get(java.lang.foreign.ValueLayout.JAVA_BYTE, mo + 1), xs[xo + 1], p1);
            p2 = Math.fma(dmin * seg.get(java.lang.foreign.ValueLayout.JAVA_BYTE, mo + 2), xs[xo + 2], p2);
            p3 = Math.fma(dmin * seg.get(java.lang.foreign.ValueLayout.JAVA_BYTE, mo + 3), xs[xo + 3], p3);
        }
        return (p0 + p1) + (p2 + p3);
    }

    /** {@code out[o + r] += minTerm(row + r)} for the four rows of a tile, one FMA per chunk and vector of mins. */
    static void addMinTerms(RepackedQ4 m, int row, float[] xs, float[] out, int o, float[] lanes) {
        MemorySegment seg = m.data();
        for (int i = 0; i < WORDS; i += FL) {
            FloatVector a = FloatVector.zero(F);
            for (int c = 0; c < m.chunks(); c++) {
                long t = m.tileOffset(row, c);
                // lane l: the min of row (i+l)/4's sub-block (i+l)%4, dmin·m as one product
                FloatVector mins = ((FloatVector) ByteVector.fromMemorySegment(B, seg, t + RepackedQ4.K_MINS + i, LE).convertShape(VectorOperators.B2F, F, 0))
                        .mul(FloatVector.fromMemorySegment(F, seg, t + RepackedQ4.K_DMIN + i, LE).rearrange(EXPAND));
                a = mins.fma(FloatVector.fromArray(F, xs, c * WORDS + i), a);
            }
            a.intoArray(lanes, i);
        }
        for (int r = 0; r < 4; r++) out[o + r] += (lanes[4 * r] + lanes[4 * r + 1]) + (lanes[4 * r + 2] + lanes[4 * r + 3]);
    }

    /**
     * Q4_K's scales (or mins) for words g..g+FL-1 of row r (of its tile) at tile offset {@code t}: lane l takes the
     * 6-bit byte of sub-block (g+l)/4 at {@code bytes} times the row's factor at {@code factors} — one float
     * product, the value Q4_K's dequantization forms.
     */
    private static FloatVector kFactors(MemorySegment seg, long t, int bytes, int factors, int r, int g) {
        FloatVector q = (FloatVector) ByteVector.fromMemorySegment(B, seg, t + bytes + 4L * r + g / 4, LE).convertShape(VectorOperators.B2F, F, 0);
        return q.rearrange(EXPAND).mul(seg.get(FLE, t + factors + 4L * r));
    }

    /** Bytes for {@link #kFactors}: at least FL of them (64-bit at least, the smallest byte species). */
    private static final VectorSpecies<Byte> B = VectorSpecies.of(byte.class, VectorShape.forBitSize(Math.max(64, FL * 8)));

    /**
     * {@code out[o..o+4)} = rows {@code row..row+3} · x. {@code lanes} is scratch of at least {@link Simd#FL}
     * floats for the fixed-order lane sums.
     */
    public static void dot4(RepackedQ4 m, int row, float[] xp, float[] xs8, float[] out, int o, float[] lanes) {
        if ((row & 3) != 0) throw new IllegalArgumentException("dot4 needs a row group start, not row " + row);
        if (m.mins()) {
            dot4K(m, row, xp, xs8, out, o, lanes);
            return;
        }
        MemorySegment seg = m.data();
        FloatVector a0 = FloatVector.zero(F), a1 = a0, a2 = a0, a3 = a0;
        for (int c = 0; c < m.chunks(); c++) {
            long t = m.wordsOffset(row, c);     // this chunk's tile: the 4 rows' words, then their scales
            for (int g = 0; g < WORDS; g += FL) {
                long qo = t + g * 4L;
                IntVector w0 = IntVector.fromMemorySegment(I, seg, qo, LE);
                IntVector w1 = IntVector.fromMemorySegment(I, seg, qo + 64, LE);
                IntVector w2 = IntVector.fromMemorySegment(I, seg, qo + 128, LE);
                IntVector w3 = IntVector.fromMemorySegment(I, seg, qo + 192, LE);
                FloatVector s0 = FloatVector.fromArray(F, xs8, c * WORDS + g), s1 = s0, s2 = s0, s3 = s0;
                int xb = c * CHUNK + g;
                for (int k = 0; k < 8; k++) {
                    FloatVector xv = FloatVector.fromArray(F, xp, xb + WORDS * k);
                    s0 = nibble(w0, k).fma(xv, s0);
                    s1 = nibble(w1, k).fma(xv, s1);
                    s2 = nibble(w2, k).fma(xv, s2);
                    s3 = nibble(w3, k).fma(xv, s3);
                }
                long so = t + RepackedQ4.SCALES;
                a0 = s0.fma(blockScales(seg, so, g), a0);
                a1 = s1.fma(blockScales(seg, so + 16, g), a1);
                a2 = s2.fma(blockScales(seg, so + 32, g), a2);
                a3 = s3.fma(blockScales(seg, so + 48, g), a3);
            }
        }
        Simd.sum4(a0, a1, a2, a3, lanes);
        out[o] = lanes[0];
        out[o + 1] = lanes[Simd.SUM4_STRIDE];
        out[o + 2] = lanes[2 * Simd.SUM4_STRIDE];
        out[o + 3] = lanes[3 * Simd.SUM4_STRIDE];
    }

    /**
     * {@link #dot4} of Q4_K rows, in a method of its own: the scales are formed in the kernel (d·sc per sub-block),
     * and with Q4_0's body beside them one body would pass C2's inlining budget. At 512 bits the tile's 16 scales
     * (4 rows × 4 sub-blocks) are formed in one vector and each row's are spread from it; narrower, per row.
     * Lanes start at 0; the min terms are added after, for the 4 rows at once ({@link #addMinTerms}).
     */
    private static void dot4K(RepackedQ4 m, int row, float[] xp, float[] xs8, float[] out, int o, float[] lanes) {
        MemorySegment seg = m.data();
        FloatVector a0 = FloatVector.zero(F), a1 = a0, a2 = a0, a3 = a0;
        for (int c = 0; c < m.chunks(); c++) {
            long t = m.wordsOffset(row, c);     // this chunk's tile: the 4 rows' words first
            for (int g = 0; g < WORDS; g += FL) {
                long qo = t + g * 4L;
                IntVector w0 = IntVector.fromMemorySegment(I, seg, qo, LE);
                IntVector w1 = IntVector.fromMemorySegment(I, seg, qo + 64, LE);
                IntVector w2 = IntVector.fromMemorySegment(I, seg, qo + 128, LE);
                IntVector w3 = IntVector.fromMemorySegment(I, seg, qo + 192, LE);
                // the tile's scale line after its word lines: lines touched in address order keep the stream prefetcher
                // on (Zen 5, from DRAM, 1 thread, MatVecBench 2048×512: scales first 7.7 GB/s, after the words 18.5)
                FloatVector all = FL == WORDS ? tileScales(seg, t) : null;
                FloatVector s0 = FloatVector.zero(F), s1 = s0, s2 = s0, s3 = s0;
                int xb = c * CHUNK + g;
                for (int k = 0; k < 8; k++) {
                    FloatVector xv = FloatVector.fromArray(F, xp, xb + WORDS * k);
                    s0 = nibble(w0, k).fma(xv, s0);
                    s1 = nibble(w1, k).fma(xv, s1);
                    s2 = nibble(w2, k).fma(xv, s2);
                    s3 = nibble(w3, k).fma(xv, s3);
                }
                if (FL == WORDS) {
                    a0 = s0.fma(all.rearrange(ROW_SCALES[0]), a0);
                    a1 = s1.fma(all.rearrange(ROW_SCALES[1]), a1);
                    a2 = s2.fma(all.rearrange(ROW_SCALES[2]), a2);
                    a3 = s3.fma(all.rearrange(ROW_SCALES[3]), a3);
                } else {
                    a0 = s0.fma(kFactors(seg, t, RepackedQ4.K_SCALES, RepackedQ4.K_D, 0, g), a0);
                    a1 = s1.fma(kFactors(seg, t, RepackedQ4.K_SCALES, RepackedQ4.K_D, 1, g), a1);
                    a2 = s2.fma(kFactors(seg, t, RepackedQ4.K_SCALES, RepackedQ4.K_D, 2, g), a2);
                    a3 = s3.fma(kFactors(seg, t, RepackedQ4.K_SCALES, RepackedQ4.K_D, 3, g), a3);
                }
            }
        }
        Simd.sum4(a0, a1, a2, a3, lanes);
        out[o] = lanes[0];
        out[o + 1] = lanes[Simd.SUM4_STRIDE];
        out[o + 2] = lanes[2 * Simd.SUM4_STRIDE];
        out[o + 3] = lanes[3 * Simd.SUM4_STRIDE];
        addMinTerms(m, row, xs8, out, o, lanes);
    }

    /** At 512 bits: the Q4_K tile at {@code t}'s 16 scales, lane 4r + j = d_r · sc_rj. */
    private static FloatVector tileScales(MemorySegment seg, long t) {
        FloatVector q = (FloatVector) ByteVector.fromMemorySegment(B, seg, t + RepackedQ4.K_SCALES, LE).convertShape(VectorOperators.B2F, F, 0);
        return q.mul(FloatVector.fromMemorySegment(F, seg, t + RepackedQ4.K_D, LE).rearrange(EXPAND));
    }

    /** At 512 bits: row r's scales for the chunk's 16 words (word l in sub-block l/4) from {@link #tileScales}. */
    @SuppressWarnings("unchecked")
    private static final VectorShuffle<Float>[] ROW_SCALES = FL == WORDS
            ? new VectorShuffle[] {rowShuffle(0), rowShuffle(1), rowShuffle(2), rowShuffle(3)} : null;

    private static VectorShuffle<Float> rowShuffle(int r) {
        return VectorShuffle.fromOp(F, l -> 4 * r + l / 4);
    }

    /**
     * Rows {@code row} and {@code row + 1} ({@code row} even) times four activation vectors at once, for decode steps
     * of several sequences sharing one pass ({@code MatrixOps.matVecBatch}): each nibble is converted once and meets
     * the four vectors, where {@link #dot4} converts it once per vector. The sums run in {@link #dot4}'s order (per
     * lane from the −8·Σx start, FMA by FMA, then the block scale; the same fixed-order lane sum), so every result
     * is bit-identical to {@link #dot4}'s — batching never changes a stream's logits. {@code out[o_t]} gets row·x_t,
     * {@code out[o_t + 1]} row+1·x_t; for Q4_K without the min terms, which {@link #addMinTerms} then adds per vector
     * for the whole 4-row group, as {@link #dot4} does. Two rows × four vectors: 16 accumulators (4 rows would need 32
     * and spill). {@code lanes}: at least {@link #DOT2X4_SCRATCH} floats.
     */
    public static void dot2x4(RepackedQ4 m, int row, float[] x0, float[] x1, float[] x2, float[] x3, float[] e0, float[] e1, float[] e2, float[] e3,
                              float[] out, int o0, int o1, int o2, int o3, float[] lanes) {
        if ((row & 1) != 0) throw new IllegalArgumentException("dot2x4 needs an even row, not " + row);
        boolean mins = m.mins();
        MemorySegment seg = m.data();
        FloatVector zero = FloatVector.zero(F);
        FloatVector a00 = zero, a01 = zero, a02 = zero, a03 = zero, a10 = zero, a11 = zero, a12 = zero, a13 = zero;
        int r = row & 3;
        for (int c = 0; c < m.chunks(); c++) {
            long wo = m.wordsOffset(row, c), t = m.tileOffset(row, c), so = t + RepackedQ4.SCALES + 16L * r;
            for (int g = 0; g < WORDS; g += FL) {
                IntVector w0 = IntVector.fromMemorySegment(I, seg, wo + g * 4L, LE);
                IntVector w1 = IntVector.fromMemorySegment(I, seg, wo + 64 + g * 4L, LE);
                int eo = c * WORDS + g;   // Q4_0's lanes start at −8·Σx, Q4_K's at 0 (as in dot4)
                FloatVector s00 = mins ? zero : FloatVector.fromArray(F, e0, eo), s10 = s00;
                FloatVector s01 = mins ? zero : FloatVector.fromArray(F, e1, eo), s11 = s01;
                FloatVector s02 = mins ? zero : FloatVector.fromArray(F, e2, eo), s12 = s02;
                FloatVector s03 = mins ? zero : FloatVector.fromArray(F, e3, eo), s13 = s03;
                int xb = c * CHUNK + g;
                for (int k = 0; k < 8; k++) {
                    FloatVector q0 = nibble(w0, k), q1 = nibble(w1, k);
                    int xi = xb + WORDS * k;
                    FloatVector v = FloatVector.fromArray(F, x0, xi);
                    s00 = q0.fma(v, s00);
                    s10 = q1.fma(v, s10);
                    v = FloatVector.fromArray(F, x1, xi);
                    s01 = q0.fma(v, s01);
                    s11 = q1.fma(v, s11);
                    v = FloatVector.fromArray(F, x2, xi);
                    s02 = q0.fma(v, s02);
                    s12 = q1.fma(v, s12);
                    v = FloatVector.fromArray(F, x3, xi);
                    s03 = q0.fma(v, s03);
                    s13 = q1.fma(v, s13);
                }
                FloatVector d0 = mins ? kFactors(seg, t, RepackedQ4.K_SCALES, RepackedQ4.K_D, r, g) : blockScales(seg, so, g);
                FloatVector d1 = mins ? kFactors(seg, t, RepackedQ4.K_SCALES, RepackedQ4.K_D, r + 1, g) : blockScales(seg, so + 16, g);
                a00 = s00.fma(d0, a00);
                a01 = s01.fma(d0, a01);
                a02 = s02.fma(d0, a02);
                a03 = s03.fma(d0, a03);
                a10 = s10.fma(d1, a10);
                a11 = s11.fma(d1, a11);
                a12 = s12.fma(d1, a12);
                a13 = s13.fma(d1, a13);
            }
        }
        // the sums leave through an array: a second inlined sum4 takes the body past C2's node budget, and
        // vectors passed to a call that is not inlined are boxed (measured: 4× slower)
        a00.intoArray(lanes, 0);
        a01.intoArray(lanes, FL);
        a02.intoArray(lanes, 2 * FL);
        a03.intoArray(lanes, 3 * FL);
        a10.intoArray(lanes, 4 * FL);
        a11.intoArray(lanes, 5 * FL);
        a12.intoArray(lanes, 6 * FL);
        a13.intoArray(lanes, 7 * FL);
        storeLaneSums(lanes, out, o0, o1, o2, o3);
    }

    /** Scratch floats {@link #dot2x4} needs. */
    public static final int DOT2X4_SCRATCH = 8 * FL;

    /**
     * Lane sums of the 8 accumulators {@link #dot2x4} left in {@code lanes[0..8·FL)}: row j, vector t into
     * {@code out[o_t + j]}, through {@link Simd#sum4} (the lane order {@link #dot4} uses). Straight-line: a loop
     * around the two sums kept C2 from intrinsifying them (measured: as slow as the kernel itself).
     */
    private static void storeLaneSums(float[] lanes, float[] out, int o0, int o1, int o2, int o3) {
        float[] sums = lanes;   // each sum4 overwrites lanes [0, FL) only after its four inputs are loaded: no allocation per call
        Simd.sum4(FloatVector.fromArray(F, lanes, 0), FloatVector.fromArray(F, lanes, FL), FloatVector.fromArray(F, lanes, 2 * FL),
                FloatVector.fromArray(F, lanes, 3 * FL), sums);
        out[o0] = sums[0];
        out[o1] = sums[Simd.SUM4_STRIDE];
        out[o2] = sums[2 * Simd.SUM4_STRIDE];
        out[o3] = sums[3 * Simd.SUM4_STRIDE];
        Simd.sum4(FloatVector.fromArray(F, lanes, 4 * FL), FloatVector.fromArray(F, lanes, 5 * FL), FloatVector.fromArray(F, lanes, 6 * FL),
                FloatVector.fromArray(F, lanes, 7 * FL), sums);
        out[o0 + 1] = sums[0];
        out[o1 + 1] = sums[Simd.SUM4_STRIDE];
        out[o2 + 1] = sums[2 * Simd.SUM4_STRIDE];
        out[o3 + 1] = sums[3 * Simd.SUM4_STRIDE];
    }

    /**
     * Nibble k of every word masked in place, as floats q·2^4k — exact (four significant bits), and met by
     * activations scaled by 2^-4k ({@link #permuteForDot}), so every product is the same float as q·x. One mask
     * instead of a shift and a mask per nibble. Nibble 7 would reach the sign bit, so it is shifted down (and its
     * activations are not scaled).
     */
    private static FloatVector nibble(IntVector w, int k) {
        IntVector q = k < 7 ? w.and(0xF << (4 * k)) : w.lanewise(VectorOperators.LSHR, 28);
        return (FloatVector) q.convert(VectorOperators.I2F, 0);
    }

    /**
     * {@link RepackedQ4#permute} for {@link #dot} and {@link #dot4}: the same order and {@code xs8}, with the
     * activations of nibble k (k &lt; 7) scaled by 2^-4k to meet {@link #nibble}'s in-place quants. Exact: powers of
     * two (activations below 2^-98 in magnitude would lose bits as subnormals; they contribute nothing anyway).
     */
    public static void permuteForDot(float[] x, int xOff, int n, float[] xp, float[] xs8) {
        RepackedQ4.permute(x, xOff, n, xp, 0, xs8);
        int np = RepackedQ4.paddedLength(n);
        for (int c = 0; c < np / CHUNK; c++) {
            for (int k = 1; k < 7; k++) {
                float scale = Math.scalb(1f, -4 * k);
                for (int j = 0; j < WORDS; j++) xp[c * CHUNK + WORDS * k + j] *= scale;
            }
        }
    }

    /**
     * The low nibble of every word, as floats 0..15. The kernels keep their bodies small (loops, not unrolled
     * copies): the Vector API's intermediate IR is large, and C2 stops inlining vector helpers into a kernel past
     * a node budget — a helper left out of line boxes its vectors and runs the slow Java fallback.
     */
    private static FloatVector lowNibbles(IntVector w) {
        return (FloatVector) w.and(0x0F).convert(VectorOperators.I2F, 0);
    }

    /** Scales for words g..g+FL-1 of a chunk whose row's 4 block scales start at {@code scalesOff}: word j is in block j/4. */
    private static FloatVector blockScales(MemorySegment seg, long scalesOff, int g) {
        return FloatVector.fromMemorySegment(F, seg, scalesOff + g, LE).rearrange(EXPAND);   // (g/4 blocks)·4 bytes
    }

    /**
     * Row {@code row} dequantized in permuted order: {@code dst[off + permutedIndex(col)] = (q − 8)·d} (Q4_0) or
     * {@code scale·q − min} (Q4_K), the same value bit for bit as the type's dequantize (padded columns give ±0).
     * The prompt product multiplies these rows with permuted activations.
     */
    public static void dequantizePermuted(RepackedQ4 m, int row, float[] dst, int off) {
        if (!SUPPORTED) {
            dequantizePermutedScalar(m, row, dst, off);
            return;
        }
        boolean mins = m.mins();
        MemorySegment seg = m.data();
        int r = row & 3;
        for (int c = 0; c < m.chunks(); c++) {
            long wo = m.wordsOffset(row, c), t = m.tileOffset(row, c), so = t + RepackedQ4.SCALES + 16L * r;
            for (int g = 0; g < WORDS; g += FL) {
                IntVector w = IntVector.fromMemorySegment(I, seg, wo + g * 4L, LE);
                FloatVector d = mins ? kFactors(seg, t, RepackedQ4.K_SCALES, RepackedQ4.K_D, r, g) : blockScales(seg, so, g);
                FloatVector mn = mins ? kFactors(seg, t, RepackedQ4.K_MINS, RepackedQ4.K_DMIN, r, g) : d;
                for (int k = 0; k < 8; k++) {
                    FloatVector q = lowNibbles(w);   // each type's own formula, for bit-identical values
                    (mins ? q.mul(d).sub(mn) : q.sub(8f).mul(d)).intoArray(dst, off + c * CHUNK + WORDS * k + g);
                    w = w.lanewise(VectorOperators.LSHR, 4);
                }
            }
        }
    }

    /** Scalar form of {@link #dequantizePermuted}. */
    public static void dequantizePermutedScalar(RepackedQ4 m, int row, float[] dst, int off) {
        for (int col = 0; col < m.paddedLength(); col++) dst[off + RepackedQ4.permutedIndex(col)] = m.value(row, col);
    }
}
