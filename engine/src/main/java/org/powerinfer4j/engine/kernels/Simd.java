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
     * Sum of the lanes in a fixed pairwise order (lane i += lane i+half, halving). {@code reduceLanes(ADD)} leaves
     * the float summation order unspecified, and C2's intrinsic and the interpreter's fallback do differ — so a
     * dot product's last bits would depend on whether its kernel had been JIT-compiled yet, which varies with
     * thread count and timing. Lane-wise adds are exact IEEE operations in every execution mode, so this keeps
     * results bit-identical across runs and thread counts.
     */
    public static float sum(FloatVector v) {
        // split into tiny steps: C2 inlines methods under 35 bytes of bytecode at any call site; a single larger
        // method is refused inside big kernels ("callee is too large"), and a non-inlined call boxes the vector
        return fold1(fold2(fold4(fold8(v)))).lane(0);
    }

    private static FloatVector fold8(FloatVector x) {
        return x.length() >= 16 ? x.add(x.slice(8)) : x;
    }

    private static FloatVector fold4(FloatVector x) {
        return x.length() >= 8 ? x.add(x.slice(4)) : x;
    }

    private static FloatVector fold2(FloatVector x) {
        return x.length() >= 4 ? x.add(x.slice(2)) : x;
    }

    private static FloatVector fold1(FloatVector x) {
        return x.add(x.slice(1));
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
