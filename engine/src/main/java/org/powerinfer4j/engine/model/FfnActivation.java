package org.powerinfer4j.engine.model;

/**
 * The FFN's non-linearity, applied to the gate projection (times the up projection) in gated FFNs, or to the up
 * projection in plain ones (Falcon, OPT: no {@code ffn_gate}). Dense llama models use SwiGLU; ReLU-family models
 * (ReluLLaMA, ProSparse: ReGLU; Bamboo/TurboSparse: dReLU; OPT, ReluFalcon: plain ReLU) produce exact zeros that
 * the sparse operators skip.
 */
public enum FfnActivation {
    /** silu(gate·x) ⊙ up·x */
    SWIGLU,
    /** relu(gate·x) ⊙ up·x; relu(up·x) without a gate */
    REGLU,
    /** relu(gate·x) ⊙ relu(up·x) */
    DRELU,
    /** GELU with erf (Falcon's {@code nn.GELU()}); gated: gelu(gate·x) ⊙ up·x */
    GELU,
    /** GELU, tanh approximation (Gemma's {@code gelu_pytorch_tanh}); gated: GeGLU */
    GELU_TANH,
    /**
     * gpt-oss's clamped SwiGLU: g = min(gate·x, 7), u = clamp(up·x, ±7), h = g·sigmoid(1.702·g)·(u + 1)
     * (llama.cpp's {@code swiglu_oai}); gated only.
     */
    SWIGLU_OAI;

    /** {@link #SWIGLU_OAI}'s sigmoid slope and clamp. */
    public static final float OAI_ALPHA = 1.702f, OAI_LIMIT = 7f;

    public boolean isRelu() {
        return this == REGLU || this == DRELU;
    }

    public static FfnActivation parse(String s) {
        return switch (s.toLowerCase()) {
            case "silu", "swiglu" -> SWIGLU;
            case "relu", "reglu" -> REGLU;
            case "drelu" -> DRELU;
            case "gelu" -> GELU;
            case "gelu_tanh", "geglu" -> GELU_TANH;
            case "swiglu_oai" -> SWIGLU_OAI;
            default -> throw new IllegalArgumentException("unknown FFN activation '" + s + "' (silu, relu, drelu, gelu, gelu_tanh, swiglu_oai)");
        };
    }
}
