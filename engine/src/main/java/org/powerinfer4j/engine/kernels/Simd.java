package org.powerinfer4j.engine.kernels;

import java.nio.ByteOrder;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorShape;
import jdk.incubator.vector.VectorSpecies;

/**
 * The vector species every kernel is written against, chosen once at class initialisation.
 * <ul>
 *   <li>{@code -Dpowerinfer4j.vector=false}: {@link #ENABLED} is false and {@link Kernels#forType} hands out the
 *       scalar reference kernels.</li>
 *   <li>{@code -Dpowerinfer4j.vector.bits=128|256|512}: force a float vector width (default
 *       {@link FloatVector#SPECIES_PREFERRED}).</li>
 * </ul>
 * All species are {@code static final} so that C2 sees them as constants; a species read from a non-final field
 * makes every vector operation fall back to the (very slow) Java implementation.
 */
public final class Simd {
    private Simd() {}

    public static final boolean ENABLED = !"false".equalsIgnoreCase(System.getProperty("powerinfer4j.vector", "true"));

    /** Float species: all arithmetic happens in this width. */
    public static final VectorSpecies<Float> F = floatSpecies();
    /** Lanes of {@link #F}. */
    public static final int FL = F.length();
    /** Int species of the same shape as {@link #F} (same lane count). */
    public static final VectorSpecies<Integer> I = VectorSpecies.of(int.class, F.vectorShape());
    /** Short species with {@link #FL} lanes (F16/BF16 loads, one short per float lane). */
    public static final VectorSpecies<Short> S = VectorSpecies.of(short.class, VectorShape.forBitSize(F.vectorBitSize() / 2));
    /**
     * Byte species for quant loads: {@link #FL} lanes where that shape exists (256/512-bit floats), otherwise the
     * smallest byte vector (64-bit, 8 lanes), which a 4-lane float species consumes in {@link #BPARTS} parts.
     */
    public static final VectorSpecies<Byte> B = VectorSpecies.of(byte.class, VectorShape.forBitSize(Math.max(64, F.vectorBitSize() / 4)));
    /** Lanes of {@link #B}. */
    public static final int BL = B.length();
    /** Float vectors per byte vector: 1 for 256/512-bit floats, 2 for 128-bit. */
    public static final int BPARTS = BL / FL;

    static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;

    /**
     * Sum of the lanes, added in lane order. {@code reduceLanes(ADD)} leaves the float summation order unspecified,
     * and C2's intrinsic and the interpreter's fallback do differ — so a dot product's last bits would depend on
     * whether its kernel had been JIT-compiled yet, which varies with thread count and timing. Here the vector is
     * stored (exact in every execution mode) and its lanes added by scalar code in a fixed order.
     *
     * <p>Kept under 35 bytes of bytecode so C2 inlines it even into the big kernels (where a vector-typed callee
     * that is not inlined gets boxed and runs the slow fallback); the lane loop is a separate, vector-free method.
     */
    public static float sum(FloatVector v) {
        float[] lanes = LANES.get();
        v.intoArray(lanes, 0);
        return addLanes(lanes, v.length());   // v may be of another width (offline.Vec uses the preferred species)
    }

    private static final ThreadLocal<float[]> LANES = ThreadLocal.withInitial(() -> new float[160]);

    /**
     * This thread's scratch for storing vectors' lanes (160 floats: eight vectors of the widest species and more, what
     * {@code RepackedQ4Kernels.dot2x4} needs): the kernels' fixed-order reductions store into it. Valid until the thread's next reduction.
     */
    static float[] lanes() {
        return LANES.get();
    }

    private static float addLanes(float[] lanes, int n) {
        float s = 0f;
        for (int i = 0; i < n; i++) s += lanes[i];
        return s;
    }

    // ---- four lane sums at once ----
    // A fixed tree of vector adds (a transposing reduction: each level halves the lanes per accumulator and packs
    // two accumulators into one vector) instead of 4·FL scalar adds: a dozen vector ops. Fixed order, so
    // bit-identical in every execution mode, and an accumulator's sum does not depend on the other three.

    /** Lane of {@link #sum4}'s result holding accumulator r's sum: {@code r·SUM4_STRIDE}. */
    public static final int SUM4_STRIDE = Math.max(1, FL / 4);
    private static final FloatVector LO = index(l -> l < FL / 2 ? l : FL + l - FL / 2);
    private static final FloatVector HI = index(l -> l < FL / 2 ? FL / 2 + l : FL + l);
    private static final FloatVector QA = index(l -> (l / SUM4_STRIDE % 2) * (FL / 2) + (l / (FL / 2)) * FL + l % SUM4_STRIDE);
    private static final FloatVector QB = QA.add(SUM4_STRIDE);
    private static final jdk.incubator.vector.VectorShuffle<Float> XOR2 = jdk.incubator.vector.VectorShuffle.fromOp(F, l -> l ^ 2);
    private static final jdk.incubator.vector.VectorShuffle<Float> XOR1 = jdk.incubator.vector.VectorShuffle.fromOp(F, l -> l ^ 1);

    private static FloatVector index(java.util.function.IntUnaryOperator f) {
        float[] v = new float[FL];
        for (int l = 0; l < FL; l++) v[l] = f.applyAsInt(l);
        return FloatVector.fromArray(F, v, 0);
    }

    /**
     * Stores into {@code lanes[0..FL)} a vector whose lane {@code r·SUM4_STRIDE} is the lane sum of {@code a_r}
     * (vectors of species {@link #F}, which must have at least 4 lanes).
     */
    public static void sum4(FloatVector a0, FloatVector a1, FloatVector a2, FloatVector a3, float[] lanes) {
        FloatVector u01 = LO.selectFrom(a0, a1).add(HI.selectFrom(a0, a1));    // lanes [0,FL/2): a0's, the rest a1's
        FloatVector u23 = LO.selectFrom(a2, a3).add(HI.selectFrom(a2, a3));
        FloatVector w = QA.selectFrom(u01, u23).add(QB.selectFrom(u01, u23)); // FL/4 lanes per accumulator, in order
        if (FL >= 16) w = w.add(w.rearrange(XOR2));
        if (FL >= 8) w = w.add(w.rearrange(XOR1));
        w.intoArray(lanes, 0);
    }

    private static VectorSpecies<Float> floatSpecies() {
        String bits = System.getProperty("powerinfer4j.vector.bits");
        if (bits == null || bits.isBlank()) return FloatVector.SPECIES_PREFERRED;
        return switch (bits.trim()) {
            case "128" -> FloatVector.SPECIES_128;
            case "256" -> FloatVector.SPECIES_256;
            case "512" -> FloatVector.SPECIES_512;
            default -> throw new IllegalArgumentException("powerinfer4j.vector.bits must be 128, 256 or 512, is " + bits);
        };
    }

    /** One-line description for logs and benchmark output. */
    public static String describe() {
        return ENABLED ? "vector " + F.vectorBitSize() + "-bit (" + FL + " float lanes)" : "scalar (vector path disabled)";
    }
}
