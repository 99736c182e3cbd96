package org.powerinfer4j.engine.kernels;

import org.powerinfer4j.engine.tensor.GGMLType;

/**
 * Registry of {@link RowKernel}s per ggml type. {@link #forType} is what compute code should use: the Vector API
 * kernel, or the scalar reference when {@code -Dpowerinfer4j.vector=false} (see {@link Simd}).
 */
public final class Kernels {
    private Kernels() {}

    /** The kernel to compute with for {@code type}. */
    public static RowKernel forType(GGMLType type) {
        return Simd.ENABLED ? vector(type) : scalar(type);
    }

    /** The plain scalar reference kernel (written like ggml's {@code dequantize_row_*}). */
    public static RowKernel scalar(GGMLType type) {
        return switch (type) {
            case F32 -> PlainKernels.F32_SCALAR;
            case F16 -> PlainKernels.F16_SCALAR;
            case BF16 -> PlainKernels.BF16_SCALAR;
            case Q8_0 -> LegacyQuantKernels.Q8_0_SCALAR;
            case Q4_0 -> LegacyQuantKernels.Q4_0_SCALAR;
            case Q4_1 -> LegacyQuantKernels.Q4_1_SCALAR;
            case Q4_K -> KQuantKernels.Q4_K_SCALAR;
            case Q5_K -> KQuantKernels.Q5_K_SCALAR;
            case Q6_K -> KQuantKernels.Q6_K_SCALAR;
            case Q5_0 -> Q5LegacyKernels.Q5_0_SCALAR;
            case Q5_1 -> Q5LegacyKernels.Q5_1_SCALAR;
            case Q2_K -> LowBitKQuantKernels.Q2_K_SCALAR;
            case Q3_K -> LowBitKQuantKernels.Q3_K_SCALAR;
            case IQ4_NL -> NonLinearQuantKernels.IQ4_NL_SCALAR;
            case IQ4_XS -> NonLinearQuantKernels.IQ4_XS_SCALAR;
            case MXFP4 -> NonLinearQuantKernels.MXFP4_SCALAR;
            default -> throw new UnsupportedTensorTypeException(type);
        };
    }

    /** The Vector API kernel, regardless of {@link Simd#ENABLED} (tests compare it with {@link #scalar}). */
    public static RowKernel vector(GGMLType type) {
        return switch (type) {
            case F32 -> PlainKernels.F32_VECTOR;
            case F16 -> PlainKernels.F16_VECTOR;
            case BF16 -> PlainKernels.BF16_VECTOR;
            case Q8_0 -> LegacyQuantKernels.Q8_0_VECTOR;
            case Q4_0 -> LegacyQuantKernels.Q4_0_VECTOR;
            case Q4_1 -> LegacyQuantKernels.Q4_1_VECTOR;
            case Q4_K -> KQuantKernels.Q4_K_VECTOR;
            case Q5_K -> KQuantKernels.Q5_K_VECTOR;
            case Q6_K -> KQuantKernels.Q6_K_VECTOR;
            case Q5_0 -> Q5LegacyKernels.Q5_0_VECTOR;
            case Q5_1 -> Q5LegacyKernels.Q5_1_VECTOR;
            case Q2_K -> LowBitKQuantKernels.Q2_K_VECTOR;
            case Q3_K -> LowBitKQuantKernels.Q3_K_VECTOR;
            case IQ4_NL -> NonLinearQuantKernels.IQ4_NL_VECTOR;
            case IQ4_XS -> NonLinearQuantKernels.IQ4_XS_VECTOR;
            case MXFP4 -> NonLinearQuantKernels.MXFP4_VECTOR;
            default -> throw new UnsupportedTensorTypeException(type);
        };
    }

    /** Whether {@link #forType} has a kernel for {@code type}. */
    public static boolean supports(GGMLType type) {
        return type.computeSupported();
    }
}
