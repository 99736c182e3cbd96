package org.powerinfer4j.bindings.cuda;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Entry point of the typed CUDA layer: whether a usable driver and device exist, the driver version, and the devices.
 *
 * <p>The first call of any method opens {@code libcuda.so.1} and calls {@code cuInit(0)}; the outcome is cached. When
 * anything is missing, {@link #available()} is false and {@link #unavailableReason()} says why in one line (e.g.
 * {@code libcuda.so.1 not found (tried ...)} or {@code cuInit failed: CUDA_ERROR_NO_DEVICE}); no method of this
 * class throws for that reason except {@link #device(int)} and {@link #requireAvailable()}.
 */
public final class Cuda {
    private Cuda() {}

    private record State(boolean available, String reason, int driverVersion, int deviceCount) {}

    private static volatile State state;

    private static State state() {
        State s = state;
        if (s != null) return s;
        synchronized (Cuda.class) {
            if (state == null) state = initialise();
            return state;
        }
    }

    private static State initialise() {
        if (!cuda_h.LIBRARY.isLoaded()) return new State(false, cuda_h.LIBRARY.failure(), 0, 0);
        try (Arena a = Arena.ofConfined()) {
            int r = cuda_h.cuInit(0);
            if (r != cuda_h.CUDA_SUCCESS) return new State(false, "cuInit failed: " + CudaResult.name(r), 0, 0);
            MemorySegment i = a.allocate(cuda_h.C_INT);
            r = cuda_h.cuDriverGetVersion(i);
            int version = r == cuda_h.CUDA_SUCCESS ? i.get(cuda_h.C_INT, 0) : 0;
            r = cuda_h.cuDeviceGetCount(i);
            if (r != cuda_h.CUDA_SUCCESS) return new State(false, "cuDeviceGetCount failed: " + CudaResult.name(r), version, 0);
            int count = i.get(cuda_h.C_INT, 0);
            if (count == 0) return new State(false, "no CUDA device", version, 0);
            return new State(true, "", version, count);
        } catch (UnsatisfiedLinkError e) {
            return new State(false, e.getMessage(), 0, 0);
        } catch (RuntimeException e) { // e.g. native access denied by --illegal-native-access=deny
            return new State(false, "CUDA initialisation failed: " + e, 0, 0);
        }
    }

    /** True when the driver loaded, {@code cuInit} succeeded and at least one device exists. */
    public static boolean available() {
        return state().available;
    }

    /** Why CUDA is unavailable, in one line; empty when it is available. */
    public static String unavailableReason() {
        return state().reason;
    }

    /** Throws {@link IllegalStateException} with {@link #unavailableReason()} unless CUDA is available. */
    public static void requireAvailable() {
        State s = state();
        if (!s.available) throw new IllegalStateException("CUDA is unavailable: " + s.reason);
    }

    /** The driver's CUDA version as {@code 1000*major + 10*minor} (13000 for CUDA 13.0); 0 when unknown. */
    public static int driverVersion() {
        return state().driverVersion;
    }

    /** Number of CUDA devices; 0 when CUDA is unavailable. */
    public static int deviceCount() {
        return state().deviceCount;
    }

    /** Device {@code ordinal}. */
    public static CudaDevice device(int ordinal) {
        requireAvailable();
        if (ordinal < 0 || ordinal >= deviceCount())
            throw new IllegalArgumentException("device " + ordinal + " does not exist (" + deviceCount() + " devices)");
        try (Arena a = Arena.ofConfined()) {
            MemorySegment d = a.allocate(cuda_h.CUdevice);
            CudaException.check(cuda_h.cuDeviceGet(d, ordinal), "cuDeviceGet");
            return new CudaDevice(ordinal, d.get(cuda_h.CUdevice, 0));
        }
    }
}
