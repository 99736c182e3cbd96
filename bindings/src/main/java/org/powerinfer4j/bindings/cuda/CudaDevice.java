package org.powerinfer4j.bindings.cuda;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/** A CUDA device: queries, and the retained primary context through which it is used. */
public final class CudaDevice {
    private final int ordinal;
    private final int handle;

    CudaDevice(int ordinal, int handle) {
        this.ordinal = ordinal;
        this.handle = handle;
    }

    /** Compute capability, e.g. 9.0 for H100/H200. */
    public record ComputeCapability(int major, int minor) {
        @Override
        public String toString() {
            return major + "." + minor;
        }
    }

    public int ordinal() {
        return ordinal;
    }

    /** The {@code CUdevice} handle. */
    public int handle() {
        return handle;
    }

    public String name() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment buf = a.allocate(256);
            CudaException.check(cuda_h.cuDeviceGetName(buf, 256, handle), "cuDeviceGetName");
            return buf.getString(0);
        }
    }

    /** Total device memory in bytes. */
    public long totalMemory() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment b = a.allocate(cuda_h.size_t);
            CudaException.check(cuda_h.cuDeviceTotalMem(b, handle), "cuDeviceTotalMem_v2");
            return b.get(cuda_h.size_t, 0);
        }
    }

    /** A {@code CU_DEVICE_ATTRIBUTE_*} value. */
    public int attribute(int attribute) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment v = a.allocate(cuda_h.C_INT);
            CudaException.check(cuda_h.cuDeviceGetAttribute(v, attribute, handle), "cuDeviceGetAttribute(" + attribute + ")");
            return v.get(cuda_h.C_INT, 0);
        }
    }

    public ComputeCapability computeCapability() {
        return new ComputeCapability(attribute(cuda_h.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
                attribute(cuda_h.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR));
    }

    public int multiprocessorCount() {
        return attribute(cuda_h.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    }

    /** Retains the device's primary context (the one the runtime API and cuBLAS use); close the result to release it. */
    public CudaContext retainPrimaryContext() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment p = a.allocate(cuda_h.C_POINTER);
            CudaException.check(cuda_h.cuDevicePrimaryCtxRetain(p, handle), "cuDevicePrimaryCtxRetain");
            return new CudaContext(this, p.get(cuda_h.C_POINTER, 0));
        }
    }

    @Override
    public String toString() {
        return "CUDA device " + ordinal;
    }
}
