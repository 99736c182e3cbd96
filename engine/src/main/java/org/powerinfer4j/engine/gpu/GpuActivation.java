package org.powerinfer4j.engine.gpu;

import org.powerinfer4j.engine.model.FfnActivation;

/** FFN non-linearities of {@link GpuBackend#activation}; the ordinal is the kernel's {@code mode}. */
public enum GpuActivation {
    /** silu(gate)·up */
    SWIGLU,
    /** gate &gt; 0 ? gate·up : 0 */
    REGLU,
    /** gate &gt; 0 &amp;&amp; up &gt; 0 ? gate·up : 0 */
    DRELU,
    /** max(gate, 0); no up (plain ReLU MLP: OPT, Falcon) */
    RELU;

    /** The device kernel for {@code a}; null for activations the kernels lack (GELU: those layers stay on the CPU). */
    public static GpuActivation of(FfnActivation a, boolean hasGate) {
        if (a == FfnActivation.GELU || a == FfnActivation.GELU_TANH) return null;
        if (!hasGate) return a == FfnActivation.SWIGLU ? null : RELU;
        return switch (a) {
            case SWIGLU -> SWIGLU;
            case REGLU -> REGLU;
            case DRELU -> DRELU;
            case GELU, GELU_TANH -> null;
        };
    }
}
