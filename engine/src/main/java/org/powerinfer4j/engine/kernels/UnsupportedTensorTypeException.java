package org.powerinfer4j.engine.kernels;

import org.powerinfer4j.engine.tensor.GGMLType;

/** Thrown when asked for a kernel of a ggml type the CPU kernels do not implement. */
public final class UnsupportedTensorTypeException extends IllegalArgumentException {
    private final GGMLType type;

    public UnsupportedTensorTypeException(GGMLType type) {
        super("no CPU kernel for tensor type " + type + " (supported: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q4_K, Q5_K, Q6_K)");
        this.type = type;
    }

    public GGMLType type() {
        return type;
    }
}
