package org.powerinfer4j.engine.gpu;

import org.powerinfer4j.engine.model.FfnActivation;

/**
 * FFN non-linearities of {@link GpuBackend#activation}; the ordinal is the kernel's {@code mode}. Gated FFNs pass
 * gate and up: out = act(gate)·up; plain MLPs pass their up projection as "gate" and null for up: out = act(gate).
 */
public enum GpuActivation {
    /** silu(gate)·up */
    SWIGLU,
    /** gate &gt; 0 ? gate·up : 0 */
    REGLU,
    /** gate &gt; 0 &amp;&amp; up &gt; 0 ? gate·up : 0 (needs up) */
    DRELU,
    /** max(gate, 0); up ignored */
    RELU,
    /** GELU, erf form (Falcon): 0.5·g·erfc(−g/√2)·up */
    GELU,
    /** GELU, tanh form (Gemma's GeGLU): g / (1 + exp(−2√(2/π)(g + 0.044715 g³)))·up */
    GELU_TANH,
    /** gpt-oss's clamped SwiGLU: min(g, 7)·sigmoid(1.702·min(g, 7))·(clamp(up, ±7) + 1) (needs up) */
    SWIGLU_OAI;

    /**
     * The device kernel mode for {@code a}; null when a plain MLP (no gate) has an activation that needs one (dReLU,
     * the clamped SwiGLU).
     */
    public static GpuActivation of(FfnActivation a, boolean hasGate) {
        return switch (a) {
            case SWIGLU -> SWIGLU;
            case REGLU -> hasGate ? REGLU : RELU;
            case DRELU -> hasGate ? DRELU : null;
            case GELU -> GELU;
            case GELU_TANH -> GELU_TANH;
            case SWIGLU_OAI -> hasGate ? SWIGLU_OAI : null;
        };
    }
}
