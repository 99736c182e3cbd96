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

    public static GpuActivation of(FfnActivation a, boolean hasGate) {
        if (!hasGate) return RELU;
        return switch (a) {
            case SWIGLU -> SWIGLU;
            case REGLU -> REGLU;
            case DRELU -> DRELU;
        };
    }
}
