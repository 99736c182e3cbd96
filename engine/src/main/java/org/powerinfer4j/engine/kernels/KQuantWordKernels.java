package org.powerinfer4j.engine.kernels;

import static org.powerinfer4j.engine.kernels.Blocks.f16;
import static org.powerinfer4j.engine.kernels.Simd.F;
import static org.powerinfer4j.engine.kernels.Simd.FL;
import static org.powerinfer4j.engine.kernels.Simd.I;
import static org.powerinfer4j.engine.kernels.Simd.LE;

import java.lang.foreign.MemorySegment;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShuffle;
import org.powerinfer4j.engine.tensor.GGMLType;

/**
 * Decode (mat-vec) kernels for Q4_K and Q6_K rows in their GGUF layout, read as 32-bit words, against activations
 * permuted once per product ({@link #prepare}) so that nibble k of every word meets its activation in one
 * contiguous load. Per word vector and nibble: a constant shift, a mask, an int→float convert and one FMA — the
 * same work per weight as the repacked Q4_0 kernel, no byte widening and no shuffles in the inner loop.
 *
 * <p>Why the layout needs no repacking: in Q4_K a 64-weight group is 32 bytes whose low nibbles are weights 0..31
 * and high nibbles 32..63, so nibble k = 2i + h of word w (bytes 4w..4w+3) is weight 64·(w/8) + 32h + 4·(w%8) + i
 * and its sub-block is 2·(w/8) + h — one scale per 8 lanes, fixed for k's parity. In Q6_K, nibble k of the low-bits
 * word w of a 128-weight half is weight 4w + i + 64h with sub-block w/4 + 4h, and its two high bits sit at bit 4k
 * of the matching {@code qh} word once words 8..15 are pre-shifted by 2. Scales are therefore per (vector, parity)
 * and are folded in after four FMAs; the Q4_K mins and Q6_K's −32 offset need only Σx per sub-block, which is the
 * same for every row and is computed once in {@link #prepare}.
 *
 * <p>The sums are reassociated (Σ scale·Σ q·x), as in {@link KQuantKernels}' vector dots; the scalar definitions
 * are {@link Kernels#scalar}'s {@code dot} over the unpermuted activations, which the tests compare against.
 */
public final class KQuantWordKernels {
    private KQuantWordKernels() {}

    static final int QK_K = 256;
    /**
     * Whether the kernels can run here: the Vector API is enabled with 8 or 16 float lanes (AVX2, AVX-512). With
     * 128-bit vectors (NEON) the block kernels of {@link KQuantKernels} run instead.
     */
    public static final boolean SUPPORTED = Simd.ENABLED && (FL == 8 || FL == 16);

    /** Whether {@link #prepare} and {@link #dot} handle {@code type}. */
    public static boolean handles(GGMLType type) {
        return SUPPORTED && (type == GGMLType.Q4_K || type == GGMLType.Q5_K || type == GGMLType.Q6_K);
    }

    /** Floats of {@code xs} that {@link #prepare} fills for a row of n weights: 16 per super-block. */
    public static int offsetsLength(int n) {
        return n / QK_K * 16;
    }

    /**
     * Permutes x[xOff..xOff+n) into {@code xp[0..n)} in the order {@link #dot} reads it for {@code type}, and writes
     * the per-sub-block activation sums the row-independent terms need to {@code xs[0..offsetsLength(n))}.
     */
    public static void prepare(GGMLType type, float[] x, int xOff, int n, float[] xp, float[] xs) {
        Blocks.checkBlocks(n, QK_K);
        for (int sb = 0; sb < n / QK_K; sb++) {
            int xb = xOff + sb * QK_K, pb = sb * QK_K, sxb = sb * 16;
            if (type == GGMLType.Q4_K || type == GGMLType.Q5_K) {
                // xp[k·32 + w] = x[64·(w/8) + 32·(k%2) + 4·(w%8) + k/2]
                for (int k = 0; k < 8; k++) {
                    int e = k < 7 ? -4 * k : 0;   // the kernel's nibble k is q·2^4k (k < 7) or q (k = 7)
                    for (int w = 0; w < 32; w++) xp[pb + k * 32 + w] = Math.scalb(x[xb + 64 * (w >> 3) + 32 * (k & 1) + 4 * (w & 7) + (k >> 1)], e);
                }
                // lanes 0..7 meet the scales (no offset), lanes 8..15 the mins: −Σx of sub-block j
                for (int j = 0; j < 8; j++) {
                    float s = 0f;
                    for (int l = 0; l < 32; l++) s += x[xb + 32 * j + l];
                    xs[sxb + j] = 0f;
                    xs[sxb + 8 + j] = -s;
                }
            } else if (type == GGMLType.Q6_K) {
                // per half n: xp[128n + k·16 + w] = x[128n + 4w + k/2 + 64·(k%2)]
                for (int half = 0; half < 2; half++) {
                    for (int k = 0; k < 8; k++) {
                        int e = k < 6 ? -4 * k : k == 6 ? 0 : -4;   // the kernel's quant k is q·2^4k, q, q·16
                        for (int w = 0; w < 16; w++) {
                            xp[pb + 128 * half + k * 16 + w] = Math.scalb(x[xb + 128 * half + 4 * w + (k >> 1) + 64 * (k & 1)], e);
                        }
                    }
                }
                // −32·Σx of each 16-weight sub-block: the q − 32 offset, row-independent up to the scale
                for (int j = 0; j < 16; j++) {
                    float s = 0f;
                    for (int l = 0; l < 16; l++) s += x[xb + 16 * j + l];
                    xs[sxb + j] = -32f * s;
                }
            } else {
                throw new IllegalArgumentException("no word kernel for " + type);
            }
        }
    }

    /**
     * The row of n weights at {@code rowOff} · x, with {@code xp}/{@code xs} from {@link #prepare} for the same type.
     * {@code scales} is scratch of at least 32 floats (its first 16 are rewritten per super-block).
     */
    public static float dot(GGMLType type, MemorySegment s, long rowOff, int n, float[] xp, float[] xs, float[] scales) {
        return switch (type) {
            case Q4_K -> dotQ4K(s, rowOff, n, xp, xs, scales);
            case Q5_K -> dotQ5K(s, rowOff, n, xp, xs, scales);
            default -> dotQ6K(s, rowOff, n, xp, xs, scales);
        };
    }

    private static final ThreadLocal<float[]> SCALES = ThreadLocal.withInitial(() -> new float[32]);

    /** This thread's 32-float scratch for {@link #dot}'s {@code scales}. */
    public static float[] scalesScratch() {
        return SCALES.get();
    }

    // ---------------------------------------------------------------- Q4_K
    // Everything per super-block stays in vector registers: scalar float arithmetic between the vector FMAs
    // (int→float converts and multiplies of the scales) measured 3× slower on the AVX-512 EPYC — scalar SSE ops
    // merge into registers the vector chains use. The kernels are also kept free of helper calls and unrolled
    // copies: past C2's node budget a helper is not inlined, and its vectors are then boxed (100× slower).

    // Each kernel ends with its lane sum written out (in lane order, as Simd.sum: same bits): a call at the end
    // of these kernels is past C2's inlining budget, and the accumulator would be boxed for it on every row.

    private static final jdk.incubator.vector.VectorSpecies<Byte> B16 = ByteVector.SPECIES_128;
    private static final jdk.incubator.vector.VectorSpecies<Byte> B8 = ByteVector.SPECIES_64;
    private static final jdk.incubator.vector.VectorMask<Float> UPPER_HALF = jdk.incubator.vector.VectorMask.fromLong(F, FL == 16 ? 0xFF00L : 0xF0L);
    private static final jdk.incubator.vector.VectorMask<Integer> UPPER_HALF_I = UPPER_HALF.cast(I);

    // get_scale_min_k4 on 16 lanes (FL = 16): lanes 0..7 the scales sc_j, lanes 8..15 the mins m_j, from the 12
    // header bytes q[]: j < 4: sc = q[j] & 63, m = q[j+4] & 63; j ≥ 4: sc = (q[j+4] & 15) | (q[j-4] >> 6) << 4,
    // m = (q[j+4] >> 4) | (q[j] >> 6) << 4. "A" is the low part's byte, "B" the byte giving bits 4,5.
    private static final VectorShuffle<Integer> Q4K_A16 = VectorShuffle.fromValues(I, q4kA16());
    private static final VectorShuffle<Integer> Q4K_B16 = VectorShuffle.fromValues(I, q4kB16());
    private static final IntVector Q4K_SHIFT_A16 = laneInts(l -> l >= 12 ? 4 : 0);
    private static final IntVector Q4K_MASK_A16 = laneInts(l -> (l / 4) % 2 == 0 ? 63 : 15);
    private static final IntVector Q4K_MASK_B16 = laneInts(l -> (l / 4) % 2 == 0 ? 0 : 0x30);
    /** Scale of (vector g, nibble parity h) per lane: group 2g + l/8, sub-block 2·group + h, from the 16-lane vector. */
    private static final VectorShuffle<Float> Q4K_G0H0 = VectorShuffle.fromOp(F, l -> 2 * (l / 8) % 16);
    private static final VectorShuffle<Float> Q4K_G0H1 = VectorShuffle.fromOp(F, l -> (2 * (l / 8) + 1) % 16);
    private static final VectorShuffle<Float> Q4K_G1H0 = VectorShuffle.fromOp(F, l -> (2 * (l / 8) + 4) % 16);
    private static final VectorShuffle<Float> Q4K_G1H1 = VectorShuffle.fromOp(F, l -> (2 * (l / 8) + 5) % 16);
    // FL = 8: scales and mins as two 8-lane vectors, from q[0..7] (first) and q[4..11] (second)
    private static final VectorShuffle<Integer> Q4K_BACK4 = VectorShuffle.fromOp(I, l -> l >= 4 ? l - 4 : l);
    private static final IntVector Q4K_MASK_A8 = laneInts(l -> l < 4 ? 63 : 15);
    private static final IntVector Q4K_MASK_B8 = laneInts(l -> l < 4 ? 0 : 0x30);
    private static final IntVector Q4K_SHIFT_M8 = laneInts(l -> l < 4 ? 0 : 4);

    private static int[] q4kA16() {
        int[] a = new int[FL];
        for (int l = 0; l < FL && FL == 16; l++) a[l] = l < 4 ? l : l < 8 ? l + 4 : l < 12 ? l - 4 : l - 4;
        return a;
    }

    private static int[] q4kB16() {
        int[] b = new int[FL];
        for (int l = 0; l < FL && FL == 16; l++) b[l] = l < 4 ? 0 : l < 8 ? l - 4 : l < 12 ? 0 : l - 8;
        return b;
    }

    private static IntVector laneInts(java.util.function.IntUnaryOperator f) {
        int[] v = new int[FL];
        for (int l = 0; l < FL; l++) v[l] = f.applyAsInt(l);
        return IntVector.fromArray(I, v, 0);
    }

    static float dotQ5K(MemorySegment s, long rowOff, int n, float[] xp, float[] xs, float[] sm) {
        return FL == 16 ? dotQ5K16(s, rowOff, n, xp, xs, sm) : dotQ5K8(s, rowOff, n, xp, xs, sm);
    }

    static float dotQ4K(MemorySegment s, long rowOff, int n, float[] xp, float[] xs, float[] sm) {
        return FL == 16 ? dotQ4K16(s, rowOff, n, xp, xs, sm) : dotQ4K8(s, rowOff, n, xp, xs, sm);
    }

    private static float dotQ4K16(MemorySegment s, long rowOff, int n, float[] xp, float[] xs, float[] sm) {
        FloatVector acc = FloatVector.zero(F), acc0 = acc, acc1 = acc;   // three FMA chains: latency, not one long chain
        for (int sb = 0; sb < n / QK_K; sb++) {
            long b = rowOff + (long) sb * KQuantKernels.Q4_K_BYTES;
            IntVector q = (IntVector) ByteVector.fromMemorySegment(B16, s, b + 4, LE).convertShape(VectorOperators.ZERO_EXTEND_B2I, I, 0);
            IntVector lo = q.rearrange(Q4K_A16).lanewise(VectorOperators.LSHR, Q4K_SHIFT_A16).and(Q4K_MASK_A16);
            IntVector hi = q.rearrange(Q4K_B16).lanewise(VectorOperators.LSHR, 2).and(Q4K_MASK_B16);
            FloatVector dd = FloatVector.broadcast(F, f16(s, b)).blend(f16(s, b + 2), UPPER_HALF);
            FloatVector scm = ((FloatVector) lo.or(hi).convert(VectorOperators.I2F, 0)).mul(dd);   // (d·sc), (dmin·m) as ggml
            acc = scm.fma(FloatVector.fromArray(F, xs, sb * 16), acc);   // the mins: xs lanes 8..15 hold −Σx
            int xb = sb * QK_K;
            for (int g = 0; g < 2; g++) {
                IntVector w = IntVector.fromMemorySegment(I, s, b + 16 + 64L * g, LE);
                FloatVector p0 = FloatVector.zero(F), p1 = p0;
                for (int i = 0, xi = xb + 16 * g; i < 4; i++, xi += 64) {
                    // nibble k = 2i + h masked in place: q·2^4k, exact as a float, meets x·2^-4k (see prepare)
                    int m = 0xF << (8 * i);
                    p0 = ((FloatVector) w.and(m).convert(VectorOperators.I2F, 0)).fma(FloatVector.fromArray(F, xp, xi), p0);
                    IntVector upper = i < 3 ? w.and(m << 4) : w.lanewise(VectorOperators.LSHR, 28);   // bit 31 would be the sign
                    p1 = ((FloatVector) upper.convert(VectorOperators.I2F, 0)).fma(FloatVector.fromArray(F, xp, xi + 32), p1);
                }
                acc0 = p0.fma(g == 0 ? scm.rearrange(Q4K_G0H0) : scm.rearrange(Q4K_G1H0), acc0);
                acc1 = p1.fma(g == 0 ? scm.rearrange(Q4K_G0H1) : scm.rearrange(Q4K_G1H1), acc1);
            }
        }
        acc.add(acc0).add(acc1).intoArray(sm, 16);     // lane sum in lane order, as Simd.sum (same bits), written out (see above)
        float r = 0f;
        for (int l = 0; l < FL; l++) r += sm[16 + l];
        return r;
    }

    /** FL = 8 (AVX2): one sub-block per vector, its scale broadcast from a vector-stored array. */
    private static float dotQ4K8(MemorySegment s, long rowOff, int n, float[] xp, float[] xs, float[] sm) {
        FloatVector acc = FloatVector.zero(F), acc0 = acc, acc1 = acc;   // three FMA chains: latency, not one long chain
        for (int sb = 0; sb < n / QK_K; sb++) {
            long b = rowOff + (long) sb * KQuantKernels.Q4_K_BYTES;
            {
                IntVector q0 = (IntVector) ByteVector.fromMemorySegment(B8, s, b + 4, LE).convertShape(VectorOperators.ZERO_EXTEND_B2I, I, 0);
                IntVector q4 = (IntVector) ByteVector.fromMemorySegment(B8, s, b + 8, LE).convertShape(VectorOperators.ZERO_EXTEND_B2I, I, 0);
                IntVector sc = q0.blend(q4, UPPER_HALF_I).and(Q4K_MASK_A8).or(q0.rearrange(Q4K_BACK4).lanewise(VectorOperators.LSHR, 2).and(Q4K_MASK_B8));
                IntVector mn = q4.lanewise(VectorOperators.LSHR, Q4K_SHIFT_M8).and(Q4K_MASK_A8).or(q0.lanewise(VectorOperators.LSHR, 2).and(Q4K_MASK_B8));
                FloatVector scf = ((FloatVector) sc.convert(VectorOperators.I2F, 0)).mul(f16(s, b));
                FloatVector mnf = ((FloatVector) mn.convert(VectorOperators.I2F, 0)).mul(f16(s, b + 2));
                scf.intoArray(sm, 0);
                acc = mnf.fma(FloatVector.fromArray(F, xs, sb * 16 + 8), acc);
            }
            int xb = sb * QK_K;
            for (int g = 0; g < 32 / FL; g++) {
                IntVector w = IntVector.fromMemorySegment(I, s, b + 16 + 4L * g * FL, LE);
                FloatVector p0 = FloatVector.zero(F), p1 = p0;
                for (int i = 0, xi = xb + g * FL; i < 4; i++, xi += 64) {
                    // nibble k = 2i + h masked in place: q·2^4k, exact as a float, meets x·2^-4k (see prepare)
                    int m = 0xF << (8 * i);
                    p0 = ((FloatVector) w.and(m).convert(VectorOperators.I2F, 0)).fma(FloatVector.fromArray(F, xp, xi), p0);
                    IntVector upper = i < 3 ? w.and(m << 4) : w.lanewise(VectorOperators.LSHR, 28);   // bit 31 would be the sign
                    p1 = ((FloatVector) upper.convert(VectorOperators.I2F, 0)).fma(FloatVector.fromArray(F, xp, xi + 32), p1);
                }
                int sub = 2 * g;   // vector g is group g (8 words): sub-blocks 2g, 2g + 1
                acc0 = p0.fma(FloatVector.broadcast(F, sm[sub]), acc0);
                acc1 = p1.fma(FloatVector.broadcast(F, sm[sub + 1]), acc1);
            }
        }
        acc.add(acc0).add(acc1).intoArray(sm, 16);     // lane sum in lane order, as Simd.sum (same bits), written out (see above)
        float r = 0f;
        for (int l = 0; l < FL; l++) r += sm[16 + l];
        return r;
    }

    // ---------------------------------------------------------------- Q5_K
    // Q4_K's layout (and activation order) with a fifth bit per weight: bit 2j + h of qh byte 4·(w%8) + i for
    // nibble k = 2i + h of word w in group j. Per lane, qh word w%8 shifted right by 2j puts it at bit 8i + h; it
    // is moved to bit 4k + 4 (the 16s of the in-place quant). Word 7's top nibble again comes down by 28.
    private static final IntVector Q5K_GROUPS01 = laneInts(l -> 2 * (l / 8));
    private static final IntVector Q5K_GROUPS23 = laneInts(l -> 4 + 2 * (l / 8));

    /** The fifth bit of nibble 2i (in place: bit 8i + 4), from hb's bit 8i. */
    private static IntVector q5LowHalf(IntVector hb, int i) {
        return hb.lanewise(VectorOperators.LSHL, 4).and(0x10 << (8 * i));
    }

    /** Nibble 2i + 1 with its fifth bit, in place (bits 8i + 4 .. 8i + 8), or shifted down for i = 3. */
    private static IntVector q5HighHalf(IntVector w, IntVector hb, int i) {
        if (i < 3) return w.and(0xF0 << (8 * i)).or(hb.lanewise(VectorOperators.LSHL, 7).and(0x100 << (8 * i)));
        return w.lanewise(VectorOperators.LSHR, 28).or(hb.lanewise(VectorOperators.LSHR, 21).and(0x10));
    }

    private static float dotQ5K16(MemorySegment s, long rowOff, int n, float[] xp, float[] xs, float[] sm) {
        FloatVector acc = FloatVector.zero(F), acc0 = acc, acc1 = acc;   // three FMA chains: latency, not one long chain
        for (int sb = 0; sb < n / QK_K; sb++) {
            long b = rowOff + (long) sb * KQuantKernels.Q5_K_BYTES;
            IntVector q = (IntVector) ByteVector.fromMemorySegment(B16, s, b + 4, LE).convertShape(VectorOperators.ZERO_EXTEND_B2I, I, 0);
            IntVector lo = q.rearrange(Q4K_A16).lanewise(VectorOperators.LSHR, Q4K_SHIFT_A16).and(Q4K_MASK_A16);
            IntVector hi = q.rearrange(Q4K_B16).lanewise(VectorOperators.LSHR, 2).and(Q4K_MASK_B16);
            FloatVector dd = FloatVector.broadcast(F, f16(s, b)).blend(f16(s, b + 2), UPPER_HALF);
            FloatVector scm = ((FloatVector) lo.or(hi).convert(VectorOperators.I2F, 0)).mul(dd);   // (d·sc), (dmin·m) as ggml
            acc = scm.fma(FloatVector.fromArray(F, xs, sb * 16), acc);   // the mins: xs lanes 8..15 hold −Σx
            int xb = sb * QK_K;
            IntVector qh = IntVector.fromMemorySegment(I, s, b + 16, LE).rearrange(QH_HALF0);   // the 8 qh words, twice
            for (int g = 0; g < 2; g++) {
                IntVector w = IntVector.fromMemorySegment(I, s, b + 48 + 64L * g, LE);
                IntVector hb = g == 0 ? qh.lanewise(VectorOperators.LSHR, Q5K_GROUPS01) : qh.lanewise(VectorOperators.LSHR, Q5K_GROUPS23);
                FloatVector p0 = FloatVector.zero(F), p1 = p0;
                for (int i = 0, xi = xb + 16 * g; i < 4; i++, xi += 64) {
                    p0 = ((FloatVector) w.and(0xF << (8 * i)).or(q5LowHalf(hb, i)).convert(VectorOperators.I2F, 0)).fma(FloatVector.fromArray(F, xp, xi), p0);
                    p1 = ((FloatVector) q5HighHalf(w, hb, i).convert(VectorOperators.I2F, 0)).fma(FloatVector.fromArray(F, xp, xi + 32), p1);
                }
                acc0 = p0.fma(g == 0 ? scm.rearrange(Q4K_G0H0) : scm.rearrange(Q4K_G1H0), acc0);
                acc1 = p1.fma(g == 0 ? scm.rearrange(Q4K_G0H1) : scm.rearrange(Q4K_G1H1), acc1);
            }
        }
        acc.add(acc0).add(acc1).intoArray(sm, 16);     // lane sum in lane order, as Simd.sum (same bits), written out (see above)
        float r = 0f;
        for (int l = 0; l < FL; l++) r += sm[16 + l];
        return r;
    }

    /** Q5_K with FL = 8: as {@link #dotQ4K8}, plus the fifth bits. */
    private static float dotQ5K8(MemorySegment s, long rowOff, int n, float[] xp, float[] xs, float[] sm) {
        FloatVector acc = FloatVector.zero(F), acc0 = acc, acc1 = acc;   // three FMA chains: latency, not one long chain
        for (int sb = 0; sb < n / QK_K; sb++) {
            long b = rowOff + (long) sb * KQuantKernels.Q5_K_BYTES;
            {
                IntVector q0 = (IntVector) ByteVector.fromMemorySegment(B8, s, b + 4, LE).convertShape(VectorOperators.ZERO_EXTEND_B2I, I, 0);
                IntVector q4 = (IntVector) ByteVector.fromMemorySegment(B8, s, b + 8, LE).convertShape(VectorOperators.ZERO_EXTEND_B2I, I, 0);
                IntVector sc = q0.blend(q4, UPPER_HALF_I).and(Q4K_MASK_A8).or(q0.rearrange(Q4K_BACK4).lanewise(VectorOperators.LSHR, 2).and(Q4K_MASK_B8));
                IntVector mn = q4.lanewise(VectorOperators.LSHR, Q4K_SHIFT_M8).and(Q4K_MASK_A8).or(q0.lanewise(VectorOperators.LSHR, 2).and(Q4K_MASK_B8));
                FloatVector scf = ((FloatVector) sc.convert(VectorOperators.I2F, 0)).mul(f16(s, b));
                FloatVector mnf = ((FloatVector) mn.convert(VectorOperators.I2F, 0)).mul(f16(s, b + 2));
                scf.intoArray(sm, 0);
                acc = mnf.fma(FloatVector.fromArray(F, xs, sb * 16 + 8), acc);
            }
            int xb = sb * QK_K;
            IntVector qh = IntVector.fromMemorySegment(I, s, b + 16, LE);
            for (int g = 0; g < 32 / FL; g++) {
                IntVector w = IntVector.fromMemorySegment(I, s, b + 48 + 4L * g * FL, LE);
                IntVector hb = qh.lanewise(VectorOperators.LSHR, 2 * g);   // group g's bits 2g, 2g + 1 to bits 0, 1
                FloatVector p0 = FloatVector.zero(F), p1 = p0;
                for (int i = 0, xi = xb + g * FL; i < 4; i++, xi += 64) {
                    p0 = ((FloatVector) w.and(0xF << (8 * i)).or(q5LowHalf(hb, i)).convert(VectorOperators.I2F, 0)).fma(FloatVector.fromArray(F, xp, xi), p0);
                    p1 = ((FloatVector) q5HighHalf(w, hb, i).convert(VectorOperators.I2F, 0)).fma(FloatVector.fromArray(F, xp, xi + 32), p1);
                }
                int sub = 2 * g;   // vector g is group g (8 words): sub-blocks 2g, 2g + 1
                acc0 = p0.fma(FloatVector.broadcast(F, sm[sub]), acc0);
                acc1 = p1.fma(FloatVector.broadcast(F, sm[sub + 1]), acc1);
            }
        }
        acc.add(acc0).add(acc1).intoArray(sm, 16);     // lane sum in lane order, as Simd.sum (same bits), written out (see above)
        float r = 0f;
        for (int l = 0; l < FL; l++) r += sm[16 + l];
        return r;
    }

    // ---------------------------------------------------------------- Q6_K
    /** Lane l of a vector of Q6_K words takes the scale of sub-block base + l/4. */
    private static final VectorShuffle<Float> Q6K_H0 = VectorShuffle.fromOp(F, l -> l / 4 % FL);
    private static final VectorShuffle<Float> Q6K_H1 = VectorShuffle.fromOp(F, l -> (l / 4 + 4) % FL);
    private static final VectorShuffle<Float> Q6K_H2 = VectorShuffle.fromOp(F, l -> (l / 4 + 8) % FL);
    private static final VectorShuffle<Float> Q6K_H3 = VectorShuffle.fromOp(F, l -> (l / 4 + 12) % FL);
    private static final VectorShuffle<Float> Q6K_G1H0 = VectorShuffle.fromOp(F, l -> (l / 4 + 2) % FL);
    private static final VectorShuffle<Float> Q6K_G1H1 = VectorShuffle.fromOp(F, l -> (l / 4 + 6) % FL);
    /** With 16 lanes one vector holds all 16 words of a half: lanes 8..15 reuse qh words 0..7 (of half n: +8n)... */
    private static final VectorShuffle<Integer> QH_HALF0 = VectorShuffle.fromOp(I, l -> l % 8);
    private static final VectorShuffle<Integer> QH_HALF1 = VectorShuffle.fromOp(I, l -> (8 + l % 8) % FL);
    /** ... shifted by 2 more, because words 8..15's weights use qh bits 2,3 / 6,7 of each byte. */
    private static final IntVector QH_PRESHIFT = laneInts(l -> 2 * (l / 8));

    static float dotQ6K(MemorySegment s, long rowOff, int n, float[] xp, float[] xs, float[] sm) {
        FloatVector acc = FloatVector.zero(F), acc0 = acc, acc1 = acc;   // three FMA chains: latency, not one long chain
        for (int sb = 0; sb < n / QK_K; sb++) {
            long b = rowOff + (long) sb * KQuantKernels.Q6_K_BYTES;
            // at 512 bits the block's quant vectors are loaded before its scales (its last bytes): lines first touched in
            // address order keep the stream prefetcher running ahead (see RepackedQ4Kernels.dot4K)
            IntVector ql0 = null, ql1 = null, qhAll = null;
            if (FL == 16) {
                ql0 = IntVector.fromMemorySegment(I, s, b, LE);
                ql1 = IntVector.fromMemorySegment(I, s, b + 64, LE);
                qhAll = IntVector.fromMemorySegment(I, s, b + 128, LE);   // both halves' 8 qh words
            }
            float d = f16(s, b + 208);
            // the 16 sub-block scales d·sc_j ((d·sc) first, as ggml), in registers: FL = 16 one vector, FL = 8 two
            FloatVector sc0, sc1;
            if (FL == 16) {
                sc0 = ((FloatVector) ByteVector.fromMemorySegment(B16, s, b + 192, LE).convertShape(VectorOperators.B2F, F, 0)).mul(d);
                sc1 = sc0;
                acc = sc0.fma(FloatVector.fromArray(F, xs, sb * 16), acc);   // the −32 offset
            } else {
                sc0 = ((FloatVector) ByteVector.fromMemorySegment(B8, s, b + 192, LE).convertShape(VectorOperators.B2F, F, 0)).mul(d);
                sc1 = ((FloatVector) ByteVector.fromMemorySegment(B8, s, b + 200, LE).convertShape(VectorOperators.B2F, F, 0)).mul(d);
                acc = sc0.fma(FloatVector.fromArray(F, xs, sb * 16), acc);
                acc = sc1.fma(FloatVector.fromArray(F, xs, sb * 16 + 8), acc);
            }
            for (int half = 0; half < 2; half++) {
                for (int g = 0; g < 16 / FL; g++) {
                    IntVector w;
                    IntVector hq;
                    if (FL == 16) {
                        w = half == 0 ? ql0 : ql1;
                        hq = (half == 0 ? qhAll.rearrange(QH_HALF0) : qhAll.rearrange(QH_HALF1)).lanewise(VectorOperators.LSHR, QH_PRESHIFT);
                    } else {
                        w = IntVector.fromMemorySegment(I, s, b + 64 * half + 4L * g * FL, LE);
                        hq = IntVector.fromMemorySegment(I, s, b + 128 + 32L * half, LE).lanewise(VectorOperators.LSHR, 2 * g);
                    }
                    FloatVector p0 = FloatVector.zero(F), p1 = p0;
                    // nibble k = 2i + h with its two high bits (at bit 4k of hq, so 4k + 4 of hq4), masked in place:
                    // the unsigned 6-bit quant ·2^4k, exact as a float, meets x·2^-4k (see prepare). Past k = 5 the value would reach
                    // the sign bit, so nibbles 6 and 7 come from the words shifted down by 24.
                    IntVector hq4 = hq.lanewise(VectorOperators.LSHL, 4);
                    int xi = sb * QK_K + 128 * half + g * FL;
                    for (int i = 0; i < 3; i++, xi += 32) {
                        int m = 0xF << (8 * i), mh = 0x30 << (8 * i);
                        p0 = ((FloatVector) w.and(m).or(hq4.and(mh)).convert(VectorOperators.I2F, 0)).fma(FloatVector.fromArray(F, xp, xi), p0);
                        p1 = ((FloatVector) w.and(m << 4).or(hq4.and(mh << 4)).convert(VectorOperators.I2F, 0)).fma(FloatVector.fromArray(F, xp, xi + 16), p1);
                    }
                    IntVector w24 = w.lanewise(VectorOperators.LSHR, 24), h20 = hq.lanewise(VectorOperators.LSHR, 20);
                    p0 = ((FloatVector) w24.and(0xF).or(h20.and(0x30)).convert(VectorOperators.I2F, 0)).fma(FloatVector.fromArray(F, xp, xi), p0);
                    p1 = ((FloatVector) w24.and(0xF0).or(h20.and(0x300)).convert(VectorOperators.I2F, 0)).fma(FloatVector.fromArray(F, xp, xi + 16), p1);
                    // scales of lanes: sub-block (g·FL + l)/4 + 4h + 8·half
                    FloatVector s0, s1;
                    if (FL == 16) {
                        s0 = half == 0 ? sc0.rearrange(Q6K_H0) : sc0.rearrange(Q6K_H2);
                        s1 = half == 0 ? sc0.rearrange(Q6K_H1) : sc0.rearrange(Q6K_H3);
                    } else {
                        FloatVector sh = half == 0 ? sc0 : sc1;
                        s0 = g == 0 ? sh.rearrange(Q6K_H0) : sh.rearrange(Q6K_G1H0);
                        s1 = g == 0 ? sh.rearrange(Q6K_H1) : sh.rearrange(Q6K_G1H1);
                    }
                    acc0 = p0.fma(s0, acc0);
                    acc1 = p1.fma(s1, acc1);
                }
            }
        }
        acc.add(acc0).add(acc1).intoArray(sm, 16);     // lane sum in lane order, as Simd.sum (same bits), written out (see above)
        float r = 0f;
        for (int l = 0; l < FL; l++) r += sm[16 + l];
        return r;
    }
}
