package org.powerinfer4j.engine.tensor;

/**
 * ggml tensor types with their on-disk block geometry, numbered as in ggml.h ({@code enum ggml_type}).
 * Every type a GGUF file may name is listed so that {@code inspect} can describe any file; which ones the
 * engine can compute with is {@link #computeSupported()}.
 */
public enum GGMLType {
    F32(0, 1, 4), F16(1, 1, 2), Q4_0(2, 32, 18), Q4_1(3, 32, 20),
    Q5_0(6, 32, 22), Q5_1(7, 32, 24), Q8_0(8, 32, 34), Q8_1(9, 32, 36),
    Q2_K(10, 256, 84), Q3_K(11, 256, 110), Q4_K(12, 256, 144), Q5_K(13, 256, 176), Q6_K(14, 256, 210),
    Q8_K(15, 256, 292), IQ2_XXS(16, 256, 66), IQ2_XS(17, 256, 74), IQ3_XXS(18, 256, 98), IQ1_S(19, 256, 50),
    IQ4_NL(20, 32, 18), IQ3_S(21, 256, 110), IQ2_S(22, 256, 82), IQ4_XS(23, 256, 136),
    I8(24, 1, 1), I16(25, 1, 2), I32(26, 1, 4), I64(27, 1, 8), F64(28, 1, 8), IQ1_M(29, 256, 56),
    BF16(30, 1, 2), TQ1_0(34, 256, 54), TQ2_0(35, 256, 66), MXFP4(39, 32, 17);

    /** Type id as stored in GGUF tensor infos. */
    public final int id;
    /** Elements per block (1 for plain types). */
    public final int blockSize;
    /** Bytes per block. */
    public final int typeSize;

    GGMLType(int id, int blockSize, int typeSize) {
        this.id = id;
        this.blockSize = blockSize;
        this.typeSize = typeSize;
    }

    private static final GGMLType[] BY_ID = new GGMLType[64];

    static {
        for (GGMLType t : values()) BY_ID[t.id] = t;
    }

    /** The type for a GGUF type id, or {@code null} when the id is unknown. */
    public static GGMLType byId(long id) {
        return id >= 0 && id < BY_ID.length ? BY_ID[(int) id] : null;
    }

    /**
     * The type for a tensor type id in a PowerInfer ({@code PWRI}) file. PowerInfer's ggml predates the IQ types and
     * numbers I8, I16, I32 as 16, 17, 18 (its {@code enum ggml_type} and gguf-py's {@code GGMLQuantizationType}
     * end there), where today's ggml has IQ2_XXS, IQ2_XS, IQ3_XXS; every other id means the same in both. Today's
     * 24..26 are still read as I8..I32 (files this project wrote before it followed PowerInfer here).
     */
    public static GGMLType byPowerInferId(long id) {
        if (id == 16) return I8;
        if (id == 17) return I16;
        if (id == 18) return I32;
        return byId(id);
    }

    /**
     * This type's id in a PowerInfer ({@code PWRI}) file (see {@link #byPowerInferId}): 16/17/18 for I8/I16/I32.
     *
     * @throws IllegalArgumentException for IQ2_XXS, IQ2_XS and IQ3_XXS, whose ids mean integers there
     */
    public int powerInferId() {
        return switch (this) {
            case I8 -> 16;
            case I16 -> 17;
            case I32 -> 18;
            case IQ2_XXS, IQ2_XS, IQ3_XXS -> throw new IllegalArgumentException(
                    this + " cannot be stored in a PowerInfer (PWRI) file: its type id " + id + " is " + byPowerInferId(id) + " there");
            default -> id;
        };
    }

    /** Bytes needed for {@code n} elements; {@code n} must be a multiple of {@link #blockSize}. */
    public long byteSize(long n) {
        if (n % blockSize != 0) throw new IllegalArgumentException(this + ": " + n + " is not a multiple of block size " + blockSize);
        return Math.multiplyExact(n / blockSize, (long) typeSize);
    }

    /** Types the CPU kernels implement (dequantize, dot and axpy; see {@code kernels.Kernels}). */
    public boolean computeSupported() {
        return switch (this) {
            case F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS, MXFP4 -> true;
            default -> false;
        };
    }

    public boolean isQuantized() {
        return blockSize > 1;
    }
}
