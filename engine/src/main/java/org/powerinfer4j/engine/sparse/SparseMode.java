package org.powerinfer4j.engine.sparse;

/**
 * How the FFN exploits activation sparsity ({@code --sparse}).
 * <ul>
 *   <li>{@code OFF}: dense math, every neuron computed.</li>
 *   <li>{@code EXACT}: no predictor; the gate (or up, without a gate) is computed densely, then only neurons
 *       whose activation is non-zero are computed in the other matrices. Lossless for ReLU models.</li>
 *   <li>{@code PREDICT}: PowerInfer's path; the per-layer predictor chooses the neurons, and only their rows
 *       of gate, up and down are read. Approximate: a missed neuron is skipped.</li>
 * </ul>
 */
public enum SparseMode {
    OFF, EXACT, PREDICT;

    public static SparseMode parse(String s) {
        return switch (s.toLowerCase()) {
            case "off", "dense" -> OFF;
            case "exact" -> EXACT;
            case "predict", "predictor" -> PREDICT;
            default -> throw new IllegalArgumentException("unknown sparse mode '" + s + "' (off, exact, predict)");
        };
    }
}
