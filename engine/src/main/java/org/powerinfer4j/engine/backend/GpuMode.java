package org.powerinfer4j.engine.backend;

import java.util.Locale;
import org.powerinfer4j.engine.gpu.CudaBackend;
import org.powerinfer4j.engine.gpu.GpuBackend;
import org.powerinfer4j.engine.gpu.SimulatedBackend;
import org.powerinfer4j.engine.model.ModelException;

/**
 * Which device runs the hot neurons ({@code --gpu}).
 * <ul>
 *   <li>{@code AUTO}: CUDA when a driver and device are usable, otherwise CPU only. The simulated device is never
 *       chosen automatically: it computes on the CPU and would only slow a CPU-only run down.</li>
 *   <li>{@code OFF}: CPU only.</li>
 *   <li>{@code CUDA}: CUDA device 0; an error when it is not usable.</li>
 *   <li>{@code SIMULATED}: {@link SimulatedBackend}, the device semantics on CPU threads (tests, debugging).</li>
 * </ul>
 */
public enum GpuMode {
    AUTO, OFF, CUDA, SIMULATED;

    public static GpuMode parse(String s) {
        return switch (s.toLowerCase(Locale.ROOT)) {
            case "auto" -> AUTO;
            case "off", "none", "cpu" -> OFF;
            case "cuda" -> CUDA;
            case "simulated", "sim" -> SIMULATED;
            default -> throw new IllegalArgumentException("unknown --gpu '" + s + "' (auto, off, cuda, simulated)");
        };
    }

    /**
     * Opens the backend this mode asks for; null for CPU only. AUTO without a usable device (no driver, or one that
     * cannot take the kernels: a driver too old for the PTX, say) says why in one line through {@code info} and runs
     * on the CPU; CUDA turns the same failure into a {@link ModelException}.
     */
    public GpuBackend open(java.util.function.Consumer<String> info) {
        return switch (this) {
            case OFF -> null;
            case SIMULATED -> new SimulatedBackend();
            case AUTO -> {
                if (!CudaBackend.isAvailable()) yield null;
                try {
                    yield CudaBackend.open(0);
                } catch (RuntimeException e) {
                    info.accept("note: --gpu auto: the CUDA device is unusable (" + e.getMessage() + "); running on the CPU");
                    yield null;
                }
            }
            case CUDA -> {
                if (!CudaBackend.isAvailable()) throw new ModelException("--gpu cuda: " + CudaBackend.unavailableReason());
                try {
                    yield CudaBackend.open(0);
                } catch (RuntimeException e) {
                    throw new ModelException("--gpu cuda: cannot use the device: " + e.getMessage());
                }
            }
        };
    }
}
