package org.powerinfer4j.engine.kernels;

import org.powerinfer4j.engine.tensor.GGMLType;

/** Thrown when asked for a kernel of a ggml type the CPU kernels do not implement. */
public final class UnsupportedTensorTypeException extends IllegalArgumentException {
    private final GGMLType type;

    public UnsupportedTensorTypeException(GGMLType type) {
        super("no CPU kernel for tensor type " + type + " (supported: " + supportedList() + ")");
        this.type = type;
    }

    /** The types with kernels, in ggml's numbering order: "F32, F16, Q4_0, ...". */
    public static String supportedList() {
        return java.util.Arrays.stream(GGMLType.values()).filter(GGMLType::computeSupported).map(Enum::name)
                .collect(java.util.stream.Collectors.joining(", "));
    }

    public GGMLType type() {
        return type;
    }
}
