package org.powerinfer4j.engine.model;

/**
 * The FFN's non-linearity. Dense llama models use SwiGLU; ReLU-family models (ReluLLaMA, ProSparse: ReGLU;
 * Bamboo/TurboSparse: dReLU) produce exact zeros that the sparse operators skip.
 */
public enum FfnActivation {
    /** silu(gate·x) ⊙ up·x */
    SWIGLU,
    /** relu(gate·x) ⊙ up·x */
    REGLU,
    /** relu(gate·x) ⊙ relu(up·x) */
    DRELU;

    public boolean isRelu() {
        return this != SWIGLU;
    }

    public static FfnActivation parse(String s) {
        return switch (s.toLowerCase()) {
            case "silu", "swiglu" -> SWIGLU;
            case "relu", "reglu" -> REGLU;
            case "drelu" -> DRELU;
            default -> throw new IllegalArgumentException("unknown FFN activation '" + s + "' (silu, relu, drelu)");
        };
    }
}
