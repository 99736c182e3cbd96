package org.powerinfer4j.engine.backend;

/**
 * Where the CPU gets the predictor's decision for the cold neurons it computes.
 * <ul>
 *   <li>{@code GPU_EVENT}: the GPU evaluates the whole predictor, copies the mask (n_ff bytes) back and records an
 *       event; the CPU waits for that event, then computes its cold neurons while the GPU goes on with the hot
 *       ones. The predictor runs once, but the CPU is idle until the mask arrives.</li>
 *   <li>{@code CPU_PREDICTOR}: the CPU evaluates the predictor itself for the cold rows only (all of fc1, the cold
 *       rows of fc2) while the GPU evaluates it for everything; no CPU wait, but the CPU reads fc1 and the cold part
 *       of fc2, which costs memory bandwidth on large models.</li>
 * </ul>
 */
public enum ColdMaskSource {
    GPU_EVENT, CPU_PREDICTOR;

    public static ColdMaskSource parse(String s) {
        return switch (s.toLowerCase(java.util.Locale.ROOT).replace('-', '_')) {
            case "gpu", "gpu_event", "event" -> GPU_EVENT;
            case "cpu", "cpu_predictor" -> CPU_PREDICTOR;
            default -> throw new IllegalArgumentException("unknown cold-mask source '" + s + "' (gpu, cpu)");
        };
    }
}
