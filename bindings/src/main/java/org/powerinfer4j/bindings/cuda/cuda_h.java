package org.powerinfer4j.bindings.cuda;

import java.lang.foreign.AddressLayout;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.ArrayList;
import java.util.List;
import org.powerinfer4j.bindings.NativeLibrary;

/**
 * FFM bindings to the CUDA driver API ({@code cuda.h}, CUDA 13.0), laid out as jextract lays out a header class: per
 * function a holder with its {@link FunctionDescriptor}, its symbol address and its downcall {@link MethodHandle}
 * (bound lazily, on the first call), plus a static method of the same name that invokes it and returns the
 * {@code CUresult}.
 *
 * <p>{@code cuda.h} maps many API names to versioned symbols ({@code #define cuMemAlloc cuMemAlloc_v2}); the
 * functions here are named as in C source and bind to the symbol the header selects (listed by
 * {@code name$symbols()}), so the 64-bit {@code CUdeviceptr} ABI is used throughout. Where an older driver exports
 * the same signature under the plain name only ({@code cuEventElapsedTime}, {@code cuDevicePrimaryCtxRelease}), that
 * name is the fallback.
 *
 * <p>The library ({@code libcuda.so.1}, the driver's) is opened on first use; see {@link #LIBRARY}. With no driver
 * nothing here throws during class initialisation: the calls throw {@link UnsatisfiedLinkError}. Use
 * {@link Cuda#available()} before calling.
 */
@SuppressWarnings({"unused", "checkstyle:MethodName"})
public final class cuda_h {
    private cuda_h() {}

    // --- C types ---------------------------------------------------------------------------------------------------
    public static final ValueLayout.OfByte C_BYTE = ValueLayout.JAVA_BYTE;
    public static final ValueLayout.OfInt C_INT = ValueLayout.JAVA_INT;
    public static final ValueLayout.OfLong C_LONG = ValueLayout.JAVA_LONG;
    public static final ValueLayout.OfFloat C_FLOAT = ValueLayout.JAVA_FLOAT;
    public static final AddressLayout C_POINTER = ValueLayout.ADDRESS
            .withTargetLayout(MemoryLayout.sequenceLayout(Long.MAX_VALUE, ValueLayout.JAVA_BYTE));

    /** {@code typedef enum cudaError_enum CUresult} */
    public static final ValueLayout.OfInt CUresult = C_INT;
    /** {@code typedef int CUdevice} */
    public static final ValueLayout.OfInt CUdevice = C_INT;
    /** {@code typedef enum CUdevice_attribute_enum CUdevice_attribute} */
    public static final ValueLayout.OfInt CUdevice_attribute = C_INT;
    /** {@code typedef unsigned long long CUdeviceptr} (64-bit: the {@code _v2} ABI) */
    public static final ValueLayout.OfLong CUdeviceptr = C_LONG;
    /** {@code size_t} (LP64) */
    public static final ValueLayout.OfLong size_t = C_LONG;
    /** {@code typedef struct CUctx_st *CUcontext} */
    public static final AddressLayout CUcontext = C_POINTER;
    /** {@code typedef struct CUstream_st *CUstream} */
    public static final AddressLayout CUstream = C_POINTER;
    /** {@code typedef struct CUevent_st *CUevent} */
    public static final AddressLayout CUevent = C_POINTER;
    /** {@code typedef struct CUmod_st *CUmodule} */
    public static final AddressLayout CUmodule = C_POINTER;
    /** {@code typedef struct CUfunc_st *CUfunction} */
    public static final AddressLayout CUfunction = C_POINTER;

    // --- constants -------------------------------------------------------------------------------------------------
    public static final int CUDA_SUCCESS = 0;
    public static final int CUDA_ERROR_NOT_READY = 600;
    public static final int CU_STREAM_DEFAULT = 0x0;
    public static final int CU_STREAM_NON_BLOCKING = 0x1;
    public static final int CU_EVENT_DEFAULT = 0x0;
    public static final int CU_EVENT_BLOCKING_SYNC = 0x1;
    public static final int CU_EVENT_DISABLE_TIMING = 0x2;
    public static final int CU_MEMHOSTALLOC_PORTABLE = 0x01;
    public static final int CU_MEMHOSTALLOC_DEVICEMAP = 0x02;
    public static final int CU_MEMHOSTALLOC_WRITECOMBINED = 0x04;
    public static final int CU_MEMHOSTREGISTER_PORTABLE = 0x01;
    public static final int CU_MEMHOSTREGISTER_DEVICEMAP = 0x02;
    public static final int CU_MEMHOSTREGISTER_READ_ONLY = 0x08;
    public static final int CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1;
    public static final int CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X = 5;
    public static final int CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8;
    public static final int CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10;
    public static final int CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
    public static final int CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY = 19;
    public static final int CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE = 38;
    public static final int CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING = 41;
    public static final int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
    public static final int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;

    // --- library ---------------------------------------------------------------------------------------------------
    /**
     * The CUDA driver library: {@code -Dpowerinfer4j.cuda=PATH} or {@code POWERINFER4J_CUDA} when set, else
     * {@code libcuda.so.1} through the dynamic loader, then the usual driver locations.
     */
    public static final NativeLibrary LIBRARY = new NativeLibrary("libcuda.so.1", cuda_h::libraryCandidates);

    static List<String> libraryCandidates() {
        List<String> c = new ArrayList<>();
        String override = NativeLibrary.override("powerinfer4j.cuda", "POWERINFER4J_CUDA");
        if (override != null) c.add(override);
        if (System.getProperty("os.name", "").toLowerCase().startsWith("windows")) {
            c.add("nvcuda.dll");
            return c;
        }
        c.add("libcuda.so.1");
        c.add("libcuda.so");
        for (String d : NativeLibrary.pathList(System.getenv("LD_LIBRARY_PATH"))) c.add(d + "/libcuda.so.1");
        c.add("/usr/lib/x86_64-linux-gnu/libcuda.so.1");
        c.add("/usr/lib/aarch64-linux-gnu/libcuda.so.1");
        c.add("/usr/lib64/libcuda.so.1");
        c.add("/usr/local/nvidia/lib64/libcuda.so.1");
        c.add("/usr/lib/wsl/lib/libcuda.so.1");
        return c;
    }

    static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException r) return r;
        if (t instanceof Error e) throw e;
        return new IllegalStateException(t);
    }

    // --- functions -------------------------------------------------------------------------------------------------

    /**
     * {@snippet lang=c :
     * CUresult cuInit(unsigned int Flags)
     * }
     */
    private static final class cuInit {
        static final FunctionDescriptor DESC = FunctionDescriptor.of(CUresult, C_INT);
        static final String[] SYMBOLS = {"cuInit"};

        private static final class Bound { // initialised on first call: only then is the library opened
            static final MemorySegment ADDR = LIBRARY.find(SYMBOLS);
            static final MethodHandle HANDLE = LIBRARY.downcall(ADDR, DESC, SYMBOLS[0]);
        }
    }

    public static FunctionDescriptor cuInit$descriptor() {
        return cuInit.DESC;
    }

    /** The exported symbols this function binds to, preferred first. */
    public static List<String> cuInit$symbols() {
        return List.of(cuInit.SYMBOLS);
    }

    public static MemorySegment cuInit$address() {
        return cuInit.Bound.ADDR;
    }

    public static MethodHandle cuInit$handle() {
        return cuInit.Bound.HANDLE;
    }

    public static int cuInit(int Flags) {
        try {
            return (int) cuInit.Bound.HANDLE.invokeExact(Flags);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
    /**
     * {@snippet lang=c :
     * CUresult cuDriverGetVersion(int *driverVersion)
     * }
     */
    private static final class cuDriverGetVersion {
        static final FunctionDescriptor DESC = FunctionDescriptor.of(CUresult, C_POINTER);
        static final String[] SYMBOLS = {"cuDriverGetVersion"};

        private static final class Bound { // initialised on first call: only then is the library opened
            static final MemorySegment ADDR = LIBRARY.find(SYMBOLS);
            static final MethodHandle HANDLE = LIBRARY.downcall(ADDR, DESC, SYMBOLS[0]);
        }
    }

    public static FunctionDescriptor cuDriverGetVersion$descriptor() {
        return cuDriverGetVersion.DESC;
    }

    /** The exported symbols this function binds to, preferred first. */
    public static List<String> cuDriverGetVersion$symbols() {
        return List.of(cuDriverGetVersion.SYMBOLS);
    }

    public static MemorySegment cuDriverGetVersion$address() {
        return cuDriverGetVersion.Bound.ADDR;
    }

    public static MethodHandle cuDriverGetVersion$handle() {
        return cuDriverGetVersion.Bound.HANDLE;
    }

    public static int cuDriverGetVersion(MemorySegment driverVersion) {
        try {
            return (int) cuDriverGetVersion.Bound.HANDLE.invokeExact(driverVersion);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
    /**
     * {@snippet lang=c :
     * CUresult cuDeviceGet(CUdevice *device, int ordinal)
     * }
     */
    private static final class cuDeviceGet {
        static final FunctionDescriptor DESC = FunctionDescriptor.of(CUresult, C_POINTER, C_INT);
        static final String[] SYMBOLS = {"cuDeviceGet"};

        private static final class Bound { // initialised on first call: only then is the library opened
            static final MemorySegment ADDR = LIBRARY.find(SYMBOLS);
            static final MethodHandle HANDLE = LIBRARY.downcall(ADDR, DESC, SYMBOLS[0]);
        }
    }

    public static FunctionDescriptor cuDeviceGet$descriptor() {
        return cuDeviceGet.DESC;
    }

    /** The exported symbols this function binds to, preferred first. */
    public static List<String> cuDeviceGet$symbols() {
        return List.of(cuDeviceGet.SYMBOLS);
    }

    public static MemorySegment cuDeviceGet$address() {
        return cuDeviceGet.Bound.ADDR;
    }

    public static MethodHandle cuDeviceGet$handle() {
        return cuDeviceGet.Bound.HANDLE;
    }

    public static int cuDeviceGet(MemorySegment device, int ordinal) {
        try {
            return (int) cuDeviceGet.Bound.HANDLE.invokeExact(device, ordinal);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
    /**
     * {@snippet lang=c :
     * CUresult cuDeviceGetCount(int *count)
     * }
     */
    private static final class cuDeviceGetCount {
        static final FunctionDescriptor DESC = FunctionDescriptor.of(CUresult, C_POINTER);
        static final String[] SYMBOLS = {"cuDeviceGetCount"};

        private static final class Bound { // initialised on first call: only then is the library opened
            static final MemorySegment ADDR = LIBRARY.find(SYMBOLS);
            static final MethodHandle HANDLE = LIBRARY.downcall(ADDR, DESC, SYMBOLS[0]);
        }
    }

    public static FunctionDescriptor cuDeviceGetCount$descriptor() {
        return cuDeviceGetCount.DESC;
    }

    /** The exported symbols this function binds to, preferred first. */
    public static List<String> cuDeviceGetCount$symbols() {
        return List.of(cuDeviceGetCount.SYMBOLS);
    }

    public static MemorySegment cuDeviceGetCount$address() {
        return cuDeviceGetCount.Bound.ADDR;
    }

    public static MethodHandle cuDeviceGetCount$handle() {
        return cuDeviceGetCount.Bound.HANDLE;
    }

    public static int cuDeviceGetCount(MemorySegment count) {
        try {
            return (int) cuDeviceGetCount.Bound.HANDLE.invokeExact(count);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
    /**
     * {@snippet lang=c :
     * CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
     * }
     */
    private static final class cuDeviceGetName {
        static final FunctionDescriptor DESC = FunctionDescriptor.of(CUresult, C_POINTER, C_INT, CUdevice);
        static final String[] SYMBOLS = {"cuDeviceGetName"};

        private static final class Bound { // initialised on first call: only then is the library opened
            static final MemorySegment ADDR = LIBRARY.find(SYMBOLS);
            static final MethodHandle HANDLE = LIBRARY.downcall(ADDR, DESC, SYMBOLS[0]);
        }
    }

    public static FunctionDescriptor cuDeviceGetName$descriptor() {
        return cuDeviceGetName.DESC;
    }

    /** The exported symbols this function binds to, preferred first. */
    public static List<String> cuDeviceGetName$symbols() {
        return List.of(cuDeviceGetName.SYMBOLS);
    }

    public static MemorySegment cuDeviceGetName$address() {
        return cuDeviceGetName.Bound.ADDR;
    }

    public static MethodHandle cuDeviceGetName$handle() {
        return cuDeviceGetName.Bound.HANDLE;
    }

    public static int cuDeviceGetName(MemorySegment name, int len, int dev) {
        try {
            return (int) cuDeviceGetName.Bound.HANDLE.invokeExact(name, len, dev);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
    /**
     * {@snippet lang=c :
     * CUresult cuDeviceTotalMem(size_t *bytes, CUdevice dev)
     * } Bound to {@code cuDeviceTotalMem_v2} (first found).
     */
    private static final class cuDeviceTotalMem {
        static final FunctionDescriptor DESC = FunctionDescriptor.of(CUresult, C_POINTER, CUdevice);
        static final String[] SYMBOLS = {"cuDeviceTotalMem_v2"};

        private static final class Bound { // initialised on first call: only then is the library opened
            static final MemorySegment ADDR = LIBRARY.find(SYMBOLS);
            static final MethodHandle HANDLE = LIBRARY.downcall(ADDR, DESC, SYMBOLS[0]);
        }
    }

    public static FunctionDescriptor cuDeviceTotalMem$descriptor() {
        return cuDeviceTotalMem.DESC;
    }

    /** The exported symbols this function binds to, preferred first. */
    public static List<String> cuDeviceTotalMem$symbols() {
        return List.of(cuDeviceTotalMem.SYMBOLS);
    }

    public static MemorySegment cuDeviceTotalMem$address() {
        return cuDeviceTotalMem.Bound.ADDR;
    }

    public static MethodHandle cuDeviceTotalMem$handle() {
        return cuDeviceTotalMem.Bound.HANDLE;
    }

    public static int cuDeviceTotalMem(MemorySegment bytes, int dev) {
        try {
            return (int) cuDeviceTotalMem.Bound.HANDLE.invokeExact(bytes, dev);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
    /**
     * {@snippet lang=c :
     * CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
     * }
     */
    private static final class cuDeviceGetAttribute {
        static final FunctionDescriptor DESC = FunctionDescriptor.of(CUresult, C_POINTER, CUdevice_attribute, CUdevice);
        static final String[] SYMBOLS = {"cuDeviceGetAttribute"};

        private static final class Bound { // initialised on first call: only then is the library opened
            static final MemorySegment ADDR = LIBRARY.find(SYMBOLS);
            static final MethodHandle HANDLE = LIBRARY.downcall(ADDR, DESC, SYMBOLS[0]);
        }
    }

    public static FunctionDescriptor cuDeviceGetAttribute$descriptor() {
        return cuDeviceGetAttribute.DESC;
    }

    /** The exported symbols this function binds to, preferred first. */
    public static List<String> cuDeviceGetAttribute$symbols() {
        return List.of(cuDeviceGetAttribute.SYMBOLS);
    }

    public static MemorySegment cuDeviceGetAttribute$address() {
        return cuDeviceGetAttribute.Bound.ADDR;
    }

    public static MethodHandle cuDeviceGetAttribute$handle() {
        return cuDeviceGetAttribute.Bound.HANDLE;
    }

    public static int cuDeviceGetAttribute(MemorySegment pi, int attrib, int dev) {
        try {
            return (int) cuDeviceGetAttribute.Bound.HANDLE.invokeExact(pi, attrib, dev);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
    /**
     * {@snippet lang=c :
     * CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
     * }
     */
    private static final class cuDevicePrimaryCtxRetain {
        static final FunctionDescriptor DESC = FunctionDescriptor.of(CUresult, C_POINTER, CUdevice);
        static final String[] SYMBOLS = {"cuDevicePrimaryCtxRetain"};

        private static final class Bound { // initialised on first call: only then is the library opened
            static final MemorySegment ADDR = LIBRARY.find(SYMBOLS);
            static final MethodHandle HANDLE = LIBRARY.downcall(ADDR, DESC, SYMBOLS[0]);
        }
    }

    public static FunctionDescriptor cuDevicePrimaryCtxRetain$descriptor() {
        return cuDevicePrimaryCtxRetain.DESC;
    }

    /** The exported symbols this function binds to, preferred first. */
    public static List<String> cuDevicePrimaryCtxRetain$symbols() {
        return List.of(cuDevicePrimaryCtxRetain.SYMBOLS);
    }

    public static MemorySegment cuDevicePrimaryCtxRetain$address() {
        return cuDevicePrimaryCtxRetain.Bound.ADDR;
    }

    public static MethodHandle cuDevicePrimaryCtxRetain$handle() {
        return cuDevicePrimaryCtxRetain.Bound.HANDLE;
    }

    public static int cuDevicePrimaryCtxRetain(MemorySegment pctx, int dev) {
        try {
            return (int) cuDevicePrimaryCtxRetain.Bound.HANDLE.invokeExact(pctx, dev);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
    /**
     * {@snippet lang=c :
     * CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
     * } Bound to {@code cuDevicePrimaryCtxRelease_v2}, {@code cuDevicePrimaryCtxRelease} (first found).
     */
    private static final class cuDevicePrimaryCtxRelease {
        static final FunctionDescriptor DESC = FunctionDescriptor.of(CUresult, CUdevice);
        static final String[] SYMBOLS = {"cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"};

        private static final class Bound { // initialised on first call: only then is the library opened
            static final MemorySegment ADDR = LIBRARY.find(SYMBOLS);
            static final MethodHandle HANDLE = LIBRARY.downcall(ADDR, DESC, SYMBOLS[0]);
        }
    }

    public static FunctionDescriptor cuDevicePrimaryCtxRelease$descriptor() {
        return cuDevicePrimaryCtxRelease.DESC;
    }

    /** The exported symbols this function binds to, preferred first. */
    public static List<String> cuDevicePrimaryCtxRelease$symbols() {
        return List.of(cuDevicePrimaryCtxRelease.SYMBOLS);
    }

    public static MemorySegment cuDevicePrimaryCtxRelease$address() {
        return cuDevicePrimaryCtxRelease.Bound.ADDR;
    }

    public static MethodHandle cuDevicePrimaryCtxRelease$handle() {
        return cuDevicePrimaryCtxRelease.Bound.HANDLE;
    }

    public static int cuDevicePrimaryCtxRelease(int dev) {
        try {
            return (int) cuDevicePrimaryCtxRelease.Bound.HANDLE.invokeExact(dev);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
    /**
     * {@snippet lang=c :
     * CUresult cuCtxSetCurrent(CUcontext ctx)
     * }
     */
    private static final class cuCtxSetCurrent {
        static final FunctionDescriptor DESC = FunctionDescriptor.of(CUresult, CUcontext);
        static final String[] SYMBOLS = {"cuCtxSetCurrent"};

        private static final class Bound { // initialised on first call: only then is the library opened
            static final MemorySegment ADDR = LIBRARY.find(SYMBOLS);
            static final MethodHandle HANDLE = LIBRARY.downcall(ADDR, DESC, SYMBOLS[0]);
        }
    }

    public static FunctionDescriptor cuCtxSetCurrent$descriptor() {
        return cuCtxSetCurrent.DESC;
    }

    /** The exported symbols this function binds to, preferred first. */
    public static List<String> cuCtxSetCurrent$symbols() {
        return List.of(cuCtxSetCurrent.SYMBOLS);
    }

    public static MemorySegment cuCtxSetCurrent$address() {
        return cuCtxSetCurrent.Bound.ADDR;
    }

    public static MethodHandle cuCtxSetCurrent$handle() {
        return cuCtxSetCurrent.Bound.HANDLE;
    }

    public static int cuCtxSetCurrent(MemorySegment ctx) {
        try {
            return (int) cuCtxSetCurrent.Bound.HANDLE.invokeExact(ctx);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
    /**
     * {@snippet lang=c :
     * CUresult cuCtxGetCurrent(CUcontext *pctx)
     * }
     */
    private static final class cuCtxGetCurrent {
        static final FunctionDescriptor DESC = FunctionDescriptor.of(CUresult, C_POINTER);
        static final String[] SYMBOLS = {"cuCtxGetCurrent"};

        private static final class Bound { // initialised on first call: only then is the library opened
            static final MemorySegment ADDR = LIBRARY.find(SYMBOLS);
            static final MethodHandle HANDLE = LIBRARY.downcall(ADDR, DESC, SYMBOLS[0]);
        }
    }

    public static FunctionDescriptor cuCtxGetCurrent$descriptor() {
        return cuCtxGetCurrent.DESC;
    }

    /** The exported symbols this function binds to, preferred first. */
    public static List<String> cuCtxGetCurrent$symbols() {
        return List.of(cuCtxGetCurrent.SYMBOLS);
    }

    public static MemorySegment cuCtxGetCurrent$address() {
        return cuCtxGetCurrent.Bound.ADDR;
    }

    public static MethodHandle cuCtxGetCurrent$handle() {
        return cuCtxGetCurrent.Bound.HANDLE;
    }

    public static int cuCtxGetCurrent(MemorySegment pctx) {
        try {
            return (int) cuCtxGetCurrent.Bound.HANDLE.invokeExact(pctx);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
    /**
     * {@snippet lang=c :
     * CUresult cuCtxSynchronize(void)
     * }
     */
    private static final class cuCtxSynchronize {
        static final FunctionDescriptor DESC = FunctionDescriptor.of(CUresult);
        static final String[] SYMBOLS = {"cuCtxSynchronize"};

        private static final class Bound { // initialised on first call: only then is the library opened
            static final MemorySegment ADDR = LIBRARY.find(SYMBOLS);
            static final MethodHandle HANDLE = LIBRARY.downcall(ADDR, DESC, SYMBOLS[0]);
        }
    }

    public static FunctionDescriptor cuCtxSynchronize$descriptor() {
        return cuCtxSynchronize.DESC;
    }

    /** The exported symbols this function binds to, preferred first. */
    public static List<String> cuCtxSynchronize$symbols() {
        return List.of(cuCtxSynchronize.SYMBOLS);
    }

    public static MemorySegment cuCtxSynchronize$address() {
        return cuCtxSynchronize.Bound.ADDR;
    }

    public static MethodHandle cuCtxSynchronize$handle() {
        return cuCtxSynchronize.Bound.HANDLE;
    }

    public static int cuCtxSynchronize() {
        try {
            return (int) cuCtxSynchronize.Bound.HANDLE.invokeExact();
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
    /**
     * {@snippet lang=c :
     * CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags)
     * }
     */
    private static final class cuStreamCreate {
        static final FunctionDescriptor DESC = FunctionDescriptor.of(CUresult, C_POINTER, C_INT);
        static final String[] SYMBOLS = {"cuStreamCreate"};

        private static final class Bound { // initialised on first call: only then is the library opened
            static final MemorySegment ADDR = LIBRARY.find(SYMBOLS);
            static final MethodHandle HANDLE = LIBRARY.downcall(ADDR, DESC, SYMBOLS[0]);
        }
    }

    public static FunctionDescriptor cuStreamCreate$descriptor() {
        return cuStreamCreate.DESC;
    }

    /** The exported symbols this function binds to, preferred first. */
    public static List<String> cuStreamCreate$symbols() {
        return List.of(cuStreamCreate.SYMBOLS);
    }

    public static MemorySegment cuStreamCreate$address() {
        return cuStreamCreate.Bound.ADDR;
    }

    public static MethodHandle cuStreamCreate$handle() {
        return cuStreamCreate.Bound.HANDLE;
    }

    public static int cuStreamCreate(MemorySegment phStream, int Flags) {
        try {
            return (int) cuStreamCreate.Bound.HANDLE.invokeExact(phStream, Flags);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
    /**
     * {@snippet lang=c :
     * CUresult cuStreamDestroy(CUstream hStream)
     * } Bound to {@code cuStreamDestroy_v2}, {@code cuStreamDestroy} (first found).
     */
    private static final class cuStreamDestroy {
        static final FunctionDescriptor DESC = FunctionDescriptor.of(CUresult, CUstream);
        static final String[] SYMBOLS = {"cuStreamDestroy_v2", "cuStreamDestroy"};

        private static final class Bound { // initialised on first call: only then is the library opened
            static final MemorySegment ADDR = LIBRARY.find(SYMBOLS);
            static final MethodHandle HANDLE = LIBRARY.downcall(ADDR, DESC, SYMBOLS[0]);
        }
    }

    public static FunctionDescriptor cuStreamDestroy$descriptor() {
        return cuStreamDestroy.DESC;
    }

    /** The exported symbols this function binds to, preferred first. */
    public static List<String> cuStreamDestroy$symbols() {
        return List.of(cuStreamDestroy.SYMBOLS);
    }

    public static MemorySegment cuStreamDestroy$address() {
        return cuStreamDestroy.Bound.ADDR;
    }

    public static MethodHandle cuStreamDestroy$handle() {
        return cuStreamDestroy.Bound.HANDLE;
    }

    public static int cuStreamDestroy(MemorySegment hStream) {
        try {
            return (int) cuStreamDestroy.Bound.HANDLE.invokeExact(hStream);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
    /**
     * {@snippet lang=c :
     * CUresult cuStreamSynchronize(CUstream hStream)
     * }
     */
    private static final class cuStreamSynchronize {
        static final FunctionDescriptor DESC = FunctionDescriptor.of(CUresult, CUstream);
        static final String[] SYMBOLS = {"cuStreamSynchronize"};

        private static final class Bound { // initialised on first call: only then is the library opened
            static final MemorySegment ADDR = LIBRARY.find(SYMBOLS);
            static final MethodHandle HANDLE = LIBRARY.downcall(ADDR, DESC, SYMBOLS[0]);
        }
    }

    public static FunctionDescriptor cuStreamSynchronize$descriptor() {
        return cuStreamSynchronize.DESC;
    }

    /** The exported symbols this function binds to, preferred first. */
    public static List<String> cuStreamSynchronize$symbols() {
        return List.of(cuStreamSynchronize.SYMBOLS);
    }

    public static MemorySegment cuStreamSynchronize$address() {
        return cuStreamSynchronize.Bound.ADDR;
    }

    public static MethodHandle cuStreamSynchronize$handle() {
        return cuStreamSynchronize.Bound.HANDLE;
    }

    public static int cuStreamSynchronize(MemorySegment hStream) {
        try {
            return (int) cuStreamSynchronize.Bound.HANDLE.invokeExact(hStream);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
    /**
     * {@snippet lang=c :
     * CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags)
     * }
     */
    private static final class cuStreamWaitEvent {
        static final FunctionDescriptor DESC = FunctionDescriptor.of(CUresult, CUstream, CUevent, C_INT);
        static final String[] SYMBOLS = {"cuStreamWaitEvent"};

        private static final class Bound { // initialised on first call: only then is the library opened
            static final MemorySegment ADDR = LIBRARY.find(SYMBOLS);
            static final MethodHandle HANDLE = LIBRARY.downcall(ADDR, DESC, SYMBOLS[0]);
        }
    }

    public static FunctionDescriptor cuStreamWaitEvent$descriptor() {
        return cuStreamWaitEvent.DESC;
    }

    /** The exported symbols this function binds to, preferred first. */
    public static List<String> cuStreamWaitEvent$symbols() {
        return List.of(cuStreamWaitEvent.SYMBOLS);
    }

    public static MemorySegment cuStreamWaitEvent$address() {
        return cuStreamWaitEvent.Bound.ADDR;
    }

    public static MethodHandle cuStreamWaitEvent$handle() {
        return cuStreamWaitEvent.Bound.HANDLE;
    }

    public static int cuStreamWaitEvent(MemorySegment hStream, MemorySegment hEvent, int Flags) {
        try {
            return (int) cuStreamWaitEvent.Bound.HANDLE.invokeExact(hStream, hEvent, Flags);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
    /**
     * {@snippet lang=c :
     * CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags)
     * }
     */
    private static final class cuEventCreate {
        static final FunctionDescriptor DESC = FunctionDescriptor.of(CUresult, C_POINTER, C_INT);
        static final String[] SYMBOLS = {"cuEventCreate"};

        private static final class Bound { // initialised on first call: only then is the library opened
            static final MemorySegment ADDR = LIBRARY.find(SYMBOLS);
            static final MethodHandle HANDLE = LIBRARY.downcall(ADDR, DESC, SYMBOLS[0]);
        }
    }

    public static FunctionDescriptor cuEventCreate$descriptor() {
        return cuEventCreate.DESC;
    }

    /** The exported symbols this function binds to, preferred first. */
    public static List<String> cuEventCreate$symbols() {
        return List.of(cuEventCreate.SYMBOLS);
    }

    public static MemorySegment cuEventCreate$address() {
        return cuEventCreate.Bound.ADDR;
    }

    public static MethodHandle cuEventCreate$handle() {
        return cuEventCreate.Bound.HANDLE;
    }

    public static int cuEventCreate(MemorySegment phEvent, int Flags) {
        try {
            return (int) cuEventCreate.Bound.HANDLE.invokeExact(phEvent, Flags);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
    /**
     * {@snippet lang=c :
     * CUresult cuEventRecord(CUevent hEvent, CUstream hStream)
     * }
     */
    private static final class cuEventRecord {
        static final FunctionDescriptor DESC = FunctionDescriptor.of(CUresult, CUevent, CUstream);
        static final String[] SYMBOLS = {"cuEventRecord"};

        private static final class Bound { // initialised on first call: only then is the library opened
            static final MemorySegment ADDR = LIBRARY.find(SYMBOLS);
            static final MethodHandle HANDLE = LIBRARY.downcall(ADDR, DESC, SYMBOLS[0]);
        }
    }

    public static FunctionDescriptor cuEventRecord$descriptor() {
        return cuEventRecord.DESC;
    }

    /** The exported symbols this function binds to, preferred first. */
    public static List<String> cuEventRecord$symbols() {
        return List.of(cuEventRecord.SYMBOLS);
    }

    public static MemorySegment cuEventRecord$address() {
        return cuEventRecord.Bound.ADDR;
    }

    public static MethodHandle cuEventRecord$handle() {
        return cuEventRecord.Bound.HANDLE;
    }

    public static int cuEventRecord(MemorySegment hEvent, MemorySegment hStream) {
        try {
            return (int) cuEventRecord.Bound.HANDLE.invokeExact(hEvent, hStream);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
    /**
     * {@snippet lang=c :
     * CUresult cuEventSynchronize(CUevent hEvent)
     * }
     */
    private static final class cuEventSynchronize {
        static final FunctionDescriptor DESC = FunctionDescriptor.of(CUresult, CUevent);
        static final String[] SYMBOLS = {"cuEventSynchronize"};

        private static final class Bound { // initialised on first call: only then is the library opened
            static final MemorySegment ADDR = LIBRARY.find(SYMBOLS);
            static final MethodHandle HANDLE = LIBRARY.downcall(ADDR, DESC, SYMBOLS[0]);
        }
    }

    public static FunctionDescriptor cuEventSynchronize$descriptor() {
        return cuEventSynchronize.DESC;
    }

    /** The exported symbols this function binds to, preferred first. */
    public static List<String> cuEventSynchronize$symbols() {
        return List.of(cuEventSynchronize.SYMBOLS);
    }

    public static MemorySegment cuEventSynchronize$address() {
        return cuEventSynchronize.Bound.ADDR;
    }

    public static MethodHandle cuEventSynchronize$handle() {
        return cuEventSynchronize.Bound.HANDLE;
    }

    public static int cuEventSynchronize(MemorySegment hEvent) {
        try {
            return (int) cuEventSynchronize.Bound.HANDLE.invokeExact(hEvent);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
    /**
     * {@snippet lang=c :
     * CUresult cuEventQuery(CUevent hEvent)
     * }
     */
    private static final class cuEventQuery {
        static final FunctionDescriptor DESC = FunctionDescriptor.of(CUresult, CUevent);
        static final String[] SYMBOLS = {"cuEventQuery"};

        private static final class Bound { // initialised on first call: only then is the library opened
            static final MemorySegment ADDR = LIBRARY.find(SYMBOLS);
            static final MethodHandle HANDLE = LIBRARY.downcall(ADDR, DESC, SYMBOLS[0]);
        }
    }

    public static FunctionDescriptor cuEventQuery$descriptor() {
        return cuEventQuery.DESC;
    }

    /** The exported symbols this function binds to, preferred first. */
    public static List<String> cuEventQuery$symbols() {
        return List.of(cuEventQuery.SYMBOLS);
    }

    public static MemorySegment cuEventQuery$address() {
        return cuEventQuery.Bound.ADDR;
    }

    public static MethodHandle cuEventQuery$handle() {
        return cuEventQuery.Bound.HANDLE;
    }

    public static int cuEventQuery(MemorySegment hEvent) {
        try {
            return (int) cuEventQuery.Bound.HANDLE.invokeExact(hEvent);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
    /**
     * {@snippet lang=c :
     * CUresult cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd)
     * } Bound to {@code cuEventElapsedTime_v2}, {@code cuEventElapsedTime} (first found).
     */
    private static final class cuEventElapsedTime {
        static final FunctionDescriptor DESC = FunctionDescriptor.of(CUresult, C_POINTER, CUevent, CUevent);
        static final String[] SYMBOLS = {"cuEventElapsedTime_v2", "cuEventElapsedTime"};

        private static final class Bound { // initialised on first call: only then is the library opened
            static final MemorySegment ADDR = LIBRARY.find(SYMBOLS);
            static final MethodHandle HANDLE = LIBRARY.downcall(ADDR, DESC, SYMBOLS[0]);
        }
    }

    public static FunctionDescriptor cuEventElapsedTime$descriptor() {
        return cuEventElapsedTime.DESC;
    }

    /** The exported symbols this function binds to, preferred first. */
    public static List<String> cuEventElapsedTime$symbols() {
        return List.of(cuEventElapsedTime.SYMBOLS);
    }

    public static MemorySegment cuEventElapsedTime$address() {
        return cuEventElapsedTime.Bound.ADDR;
    }

    public static MethodHandle cuEventElapsedTime$handle() {
        return cuEventElapsedTime.Bound.HANDLE;
    }

    public static int cuEventElapsedTime(MemorySegment pMilliseconds, MemorySegment hStart, MemorySegment hEnd) {
        try {
            return (int) cuEventElapsedTime.Bound.HANDLE.invokeExact(pMilliseconds, hStart, hEnd);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
    /**
     * {@snippet lang=c :
     * CUresult cuEventDestroy(CUevent hEvent)
     * } Bound to {@code cuEventDestroy_v2}, {@code cuEventDestroy} (first found).
     */
    private static final class cuEventDestroy {
        static final FunctionDescriptor DESC = FunctionDescriptor.of(CUresult, CUevent);
        static final String[] SYMBOLS = {"cuEventDestroy_v2", "cuEventDestroy"};

        private static final class Bound { // initialised on first call: only then is the library opened
            static final MemorySegment ADDR = LIBRARY.find(SYMBOLS);
            static final MethodHandle HANDLE = LIBRARY.downcall(ADDR, DESC, SYMBOLS[0]);
        }
    }

    public static FunctionDescriptor cuEventDestroy$descriptor() {
        return cuEventDestroy.DESC;
    }

    /** The exported symbols this function binds to, preferred first. */
    public static List<String> cuEventDestroy$symbols() {
        return List.of(cuEventDestroy.SYMBOLS);
    }

    public static MemorySegment cuEventDestroy$address() {
        return cuEventDestroy.Bound.ADDR;
    }

    public static MethodHandle cuEventDestroy$handle() {
        return cuEventDestroy.Bound.HANDLE;
    }

    public static int cuEventDestroy(MemorySegment hEvent) {
        try {
            return (int) cuEventDestroy.Bound.HANDLE.invokeExact(hEvent);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
    /**
     * {@snippet lang=c :
     * CUresult cuMemAlloc(CUdeviceptr *dptr, size_t bytesize)
     * } Bound to {@code cuMemAlloc_v2} (first found).
     */
    private static final class cuMemAlloc {
        static final FunctionDescriptor DESC = FunctionDescriptor.of(CUresult, C_POINTER, size_t);
        static final String[] SYMBOLS = {"cuMemAlloc_v2"};

        private static final class Bound { // initialised on first call: only then is the library opened
            static final MemorySegment ADDR = LIBRARY.find(SYMBOLS);
            static final MethodHandle HANDLE = LIBRARY.downcall(ADDR, DESC, SYMBOLS[0]);
        }
    }

    public static FunctionDescriptor cuMemAlloc$descriptor() {
        return cuMemAlloc.DESC;
    }

    /** The exported symbols this function binds to, preferred first. */
    public static List<String> cuMemAlloc$symbols() {
        return List.of(cuMemAlloc.SYMBOLS);
    }

    public static MemorySegment cuMemAlloc$address() {
        return cuMemAlloc.Bound.ADDR;
    }

    public static MethodHandle cuMemAlloc$handle() {
        return cuMemAlloc.Bound.HANDLE;
    }

    public static int cuMemAlloc(MemorySegment dptr, long bytesize) {
        try {
            return (int) cuMemAlloc.Bound.HANDLE.invokeExact(dptr, bytesize);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
    /**
     * {@snippet lang=c :
     * CUresult cuMemFree(CUdeviceptr dptr)
     * } Bound to {@code cuMemFree_v2} (first found).
     */
    private static final class cuMemFree {
        static final FunctionDescriptor DESC = FunctionDescriptor.of(CUresult, CUdeviceptr);
        static final String[] SYMBOLS = {"cuMemFree_v2"};

        private static final class Bound { // initialised on first call: only then is the library opened
            static final MemorySegment ADDR = LIBRARY.find(SYMBOLS);
            static final MethodHandle HANDLE = LIBRARY.downcall(ADDR, DESC, SYMBOLS[0]);
        }
    }

    public static FunctionDescriptor cuMemFree$descriptor() {
        return cuMemFree.DESC;
    }

    /** The exported symbols this function binds to, preferred first. */
    public static List<String> cuMemFree$symbols() {
        return List.of(cuMemFree.SYMBOLS);
    }

    public static MemorySegment cuMemFree$address() {
        return cuMemFree.Bound.ADDR;
    }

    public static MethodHandle cuMemFree$handle() {
        return cuMemFree.Bound.HANDLE;
    }

    public static int cuMemFree(long dptr) {
        try {
            return (int) cuMemFree.Bound.HANDLE.invokeExact(dptr);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
    /**
     * {@snippet lang=c :
     * CUresult cuMemGetInfo(size_t *free, size_t *total)
     * } Bound to {@code cuMemGetInfo_v2} (first found).
     */
    private static final class cuMemGetInfo {
        static final FunctionDescriptor DESC = FunctionDescriptor.of(CUresult, C_POINTER, C_POINTER);
        static final String[] SYMBOLS = {"cuMemGetInfo_v2"};

        private static final class Bound { // initialised on first call: only then is the library opened
            static final MemorySegment ADDR = LIBRARY.find(SYMBOLS);
            static final MethodHandle HANDLE = LIBRARY.downcall(ADDR, DESC, SYMBOLS[0]);
        }
    }

    public static FunctionDescriptor cuMemGetInfo$descriptor() {
        return cuMemGetInfo.DESC;
    }

    /** The exported symbols this function binds to, preferred first. */
    public static List<String> cuMemGetInfo$symbols() {
        return List.of(cuMemGetInfo.SYMBOLS);
    }

    public static MemorySegment cuMemGetInfo$address() {
        return cuMemGetInfo.Bound.ADDR;
    }

    public static MethodHandle cuMemGetInfo$handle() {
        return cuMemGetInfo.Bound.HANDLE;
    }

    public static int cuMemGetInfo(MemorySegment free, MemorySegment total) {
        try {
            return (int) cuMemGetInfo.Bound.HANDLE.invokeExact(free, total);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
    /**
     * {@snippet lang=c :
     * CUresult cuMemcpyHtoD(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
     * } Bound to {@code cuMemcpyHtoD_v2} (first found).
     */
    private static final class cuMemcpyHtoD {
        static final FunctionDescriptor DESC = FunctionDescriptor.of(CUresult, CUdeviceptr, C_POINTER, size_t);
        static final String[] SYMBOLS = {"cuMemcpyHtoD_v2"};

        private static final class Bound { // initialised on first call: only then is the library opened
            static final MemorySegment ADDR = LIBRARY.find(SYMBOLS);
            static final MethodHandle HANDLE = LIBRARY.downcall(ADDR, DESC, SYMBOLS[0]);
        }
    }

    public static FunctionDescriptor cuMemcpyHtoD$descriptor() {
        return cuMemcpyHtoD.DESC;
    }

    /** The exported symbols this function binds to, preferred first. */
    public static List<String> cuMemcpyHtoD$symbols() {
        return List.of(cuMemcpyHtoD.SYMBOLS);
    }

    public static MemorySegment cuMemcpyHtoD$address() {
        return cuMemcpyHtoD.Bound.ADDR;
    }

    public static MethodHandle cuMemcpyHtoD$handle() {
        return cuMemcpyHtoD.Bound.HANDLE;
    }

    public static int cuMemcpyHtoD(long dstDevice, MemorySegment srcHost, long ByteCount) {
        try {
            return (int) cuMemcpyHtoD.Bound.HANDLE.invokeExact(dstDevice, srcHost, ByteCount);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
    /**
     * {@snippet lang=c :
     * CUresult cuMemcpyDtoH(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
     * } Bound to {@code cuMemcpyDtoH_v2} (first found).
     */
    private static final class cuMemcpyDtoH {
        static final FunctionDescriptor DESC = FunctionDescriptor.of(CUresult, C_POINTER, CUdeviceptr, size_t);
        static final String[] SYMBOLS = {"cuMemcpyDtoH_v2"};

        private static final class Bound { // initialised on first call: only then is the library opened
            static final MemorySegment ADDR = LIBRARY.find(SYMBOLS);
            static final MethodHandle HANDLE = LIBRARY.downcall(ADDR, DESC, SYMBOLS[0]);
        }
    }

    public static FunctionDescriptor cuMemcpyDtoH$descriptor() {
        return cuMemcpyDtoH.DESC;
    }

    /** The exported symbols this function binds to, preferred first. */
    public static List<String> cuMemcpyDtoH$symbols() {
        return List.of(cuMemcpyDtoH.SYMBOLS);
    }

    public static MemorySegment cuMemcpyDtoH$address() {
        return cuMemcpyDtoH.Bound.ADDR;
    }

    public static MethodHandle cuMemcpyDtoH$handle() {
        return cuMemcpyDtoH.Bound.HANDLE;
    }

    public static int cuMemcpyDtoH(MemorySegment dstHost, long srcDevice, long ByteCount) {
        try {
            return (int) cuMemcpyDtoH.Bound.HANDLE.invokeExact(dstHost, srcDevice, ByteCount);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
    /**
     * {@snippet lang=c :
     * CUresult cuMemcpyHtoDAsync(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream)
     * } Bound to {@code cuMemcpyHtoDAsync_v2} (first found).
     */
    private static final class cuMemcpyHtoDAsync {
        static final FunctionDescriptor DESC = FunctionDescriptor.of(CUresult, CUdeviceptr, C_POINTER, size_t, CUstream);
        static final String[] SYMBOLS = {"cuMemcpyHtoDAsync_v2"};

        private static final class Bound { // initialised on first call: only then is the library opened
            static final MemorySegment ADDR = LIBRARY.find(SYMBOLS);
            static final MethodHandle HANDLE = LIBRARY.downcall(ADDR, DESC, SYMBOLS[0]);
        }
    }

    public static FunctionDescriptor cuMemcpyHtoDAsync$descriptor() {
        return cuMemcpyHtoDAsync.DESC;
    }

    /** The exported symbols this function binds to, preferred first. */
    public static List<String> cuMemcpyHtoDAsync$symbols() {
        return List.of(cuMemcpyHtoDAsync.SYMBOLS);
    }

    public static MemorySegment cuMemcpyHtoDAsync$address() {
        return cuMemcpyHtoDAsync.Bound.ADDR;
    }

    public static MethodHandle cuMemcpyHtoDAsync$handle() {
        return cuMemcpyHtoDAsync.Bound.HANDLE;
    }

    public static int cuMemcpyHtoDAsync(long dstDevice, MemorySegment srcHost, long ByteCount, MemorySegment hStream) {
        try {
            return (int) cuMemcpyHtoDAsync.Bound.HANDLE.invokeExact(dstDevice, srcHost, ByteCount, hStream);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
    /**
     * {@snippet lang=c :
     * CUresult cuMemcpyDtoHAsync(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream)
     * } Bound to {@code cuMemcpyDtoHAsync_v2} (first found).
     */
    private static final class cuMemcpyDtoHAsync {
        static final FunctionDescriptor DESC = FunctionDescriptor.of(CUresult, C_POINTER, CUdeviceptr, size_t, CUstream);
        static final String[] SYMBOLS = {"cuMemcpyDtoHAsync_v2"};

        private static final class Bound { // initialised on first call: only then is the library opened
            static final MemorySegment ADDR = LIBRARY.find(SYMBOLS);
            static final MethodHandle HANDLE = LIBRARY.downcall(ADDR, DESC, SYMBOLS[0]);
        }
    }

    public static FunctionDescriptor cuMemcpyDtoHAsync$descriptor() {
        return cuMemcpyDtoHAsync.DESC;
    }

    /** The exported symbols this function binds to, preferred first. */
    public static List<String> cuMemcpyDtoHAsync$symbols() {
        return List.of(cuMemcpyDtoHAsync.SYMBOLS);
    }

    public static MemorySegment cuMemcpyDtoHAsync$address() {
        return cuMemcpyDtoHAsync.Bound.ADDR;
    }

    public static MethodHandle cuMemcpyDtoHAsync$handle() {
        return cuMemcpyDtoHAsync.Bound.HANDLE;
    }

    public static int cuMemcpyDtoHAsync(MemorySegment dstHost, long srcDevice, long ByteCount, MemorySegment hStream) {
        try {
            return (int) cuMemcpyDtoHAsync.Bound.HANDLE.invokeExact(dstHost, srcDevice, ByteCount, hStream);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
    /**
     * {@snippet lang=c :
     * CUresult cuMemcpyDtoDAsync(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream)
     * } Bound to {@code cuMemcpyDtoDAsync_v2} (first found).
     */
    private static final class cuMemcpyDtoDAsync {
        static final FunctionDescriptor DESC = FunctionDescriptor.of(CUresult, CUdeviceptr, CUdeviceptr, size_t, CUstream);
        static final String[] SYMBOLS = {"cuMemcpyDtoDAsync_v2"};

        private static final class Bound { // initialised on first call: only then is the library opened
            static final MemorySegment ADDR = LIBRARY.find(SYMBOLS);
            static final MethodHandle HANDLE = LIBRARY.downcall(ADDR, DESC, SYMBOLS[0]);
        }
    }

    public static FunctionDescriptor cuMemcpyDtoDAsync$descriptor() {
        return cuMemcpyDtoDAsync.DESC;
    }

    /** The exported symbols this function binds to, preferred first. */
    public static List<String> cuMemcpyDtoDAsync$symbols() {
        return List.of(cuMemcpyDtoDAsync.SYMBOLS);
    }

    public static MemorySegment cuMemcpyDtoDAsync$address() {
        return cuMemcpyDtoDAsync.Bound.ADDR;
    }

    public static MethodHandle cuMemcpyDtoDAsync$handle() {
        return cuMemcpyDtoDAsync.Bound.HANDLE;
    }

    public static int cuMemcpyDtoDAsync(long dstDevice, long srcDevice, long ByteCount, MemorySegment hStream) {
        try {
            return (int) cuMemcpyDtoDAsync.Bound.HANDLE.invokeExact(dstDevice, srcDevice, ByteCount, hStream);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
    /**
     * {@snippet lang=c :
     * CUresult cuMemsetD8(CUdeviceptr dstDevice, unsigned char uc, size_t N)
     * } Bound to {@code cuMemsetD8_v2} (first found).
     */
    private static final class cuMemsetD8 {
        static final FunctionDescriptor DESC = FunctionDescriptor.of(CUresult, CUdeviceptr, C_BYTE, size_t);
        static final String[] SYMBOLS = {"cuMemsetD8_v2"};

        private static final class Bound { // initialised on first call: only then is the library opened
            static final MemorySegment ADDR = LIBRARY.find(SYMBOLS);
            static final MethodHandle HANDLE = LIBRARY.downcall(ADDR, DESC, SYMBOLS[0]);
        }
    }

    public static FunctionDescriptor cuMemsetD8$descriptor() {
        return cuMemsetD8.DESC;
    }

    /** The exported symbols this function binds to, preferred first. */
    public static List<String> cuMemsetD8$symbols() {
        return List.of(cuMemsetD8.SYMBOLS);
    }

    public static MemorySegment cuMemsetD8$address() {
        return cuMemsetD8.Bound.ADDR;
    }

    public static MethodHandle cuMemsetD8$handle() {
        return cuMemsetD8.Bound.HANDLE;
    }

    public static int cuMemsetD8(long dstDevice, byte uc, long N) {
        try {
            return (int) cuMemsetD8.Bound.HANDLE.invokeExact(dstDevice, uc, N);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
    /**
     * {@snippet lang=c :
     * CUresult cuMemsetD32(CUdeviceptr dstDevice, unsigned int ui, size_t N)
     * } Bound to {@code cuMemsetD32_v2} (first found).
     */
    private static final class cuMemsetD32 {
        static final FunctionDescriptor DESC = FunctionDescriptor.of(CUresult, CUdeviceptr, C_INT, size_t);
        static final String[] SYMBOLS = {"cuMemsetD32_v2"};

        private static final class Bound { // initialised on first call: only then is the library opened
            static final MemorySegment ADDR = LIBRARY.find(SYMBOLS);
            static final MethodHandle HANDLE = LIBRARY.downcall(ADDR, DESC, SYMBOLS[0]);
        }
    }

    public static FunctionDescriptor cuMemsetD32$descriptor() {
        return cuMemsetD32.DESC;
    }

    /** The exported symbols this function binds to, preferred first. */
    public static List<String> cuMemsetD32$symbols() {
        return List.of(cuMemsetD32.SYMBOLS);
    }

    public static MemorySegment cuMemsetD32$address() {
        return cuMemsetD32.Bound.ADDR;
    }

    public static MethodHandle cuMemsetD32$handle() {
        return cuMemsetD32.Bound.HANDLE;
    }

    public static int cuMemsetD32(long dstDevice, int ui, long N) {
        try {
            return (int) cuMemsetD32.Bound.HANDLE.invokeExact(dstDevice, ui, N);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
    /**
     * {@snippet lang=c :
     * CUresult cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream)
     * }
     */
    private static final class cuMemsetD8Async {
        static final FunctionDescriptor DESC = FunctionDescriptor.of(CUresult, CUdeviceptr, C_BYTE, size_t, CUstream);
        static final String[] SYMBOLS = {"cuMemsetD8Async"};

        private static final class Bound { // initialised on first call: only then is the library opened
            static final MemorySegment ADDR = LIBRARY.find(SYMBOLS);
            static final MethodHandle HANDLE = LIBRARY.downcall(ADDR, DESC, SYMBOLS[0]);
        }
    }

    public static FunctionDescriptor cuMemsetD8Async$descriptor() {
        return cuMemsetD8Async.DESC;
    }

    /** The exported symbols this function binds to, preferred first. */
    public static List<String> cuMemsetD8Async$symbols() {
        return List.of(cuMemsetD8Async.SYMBOLS);
    }

    public static MemorySegment cuMemsetD8Async$address() {
        return cuMemsetD8Async.Bound.ADDR;
    }

    public static MethodHandle cuMemsetD8Async$handle() {
        return cuMemsetD8Async.Bound.HANDLE;
    }

    public static int cuMemsetD8Async(long dstDevice, byte uc, long N, MemorySegment hStream) {
        try {
            return (int) cuMemsetD8Async.Bound.HANDLE.invokeExact(dstDevice, uc, N, hStream);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
    /**
     * {@snippet lang=c :
     * CUresult cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream)
     * }
     */
    private static final class cuMemsetD32Async {
        static final FunctionDescriptor DESC = FunctionDescriptor.of(CUresult, CUdeviceptr, C_INT, size_t, CUstream);
        static final String[] SYMBOLS = {"cuMemsetD32Async"};

        private static final class Bound { // initialised on first call: only then is the library opened
            static final MemorySegment ADDR = LIBRARY.find(SYMBOLS);
            static final MethodHandle HANDLE = LIBRARY.downcall(ADDR, DESC, SYMBOLS[0]);
        }
    }

    public static FunctionDescriptor cuMemsetD32Async$descriptor() {
        return cuMemsetD32Async.DESC;
    }

    /** The exported symbols this function binds to, preferred first. */
    public static List<String> cuMemsetD32Async$symbols() {
        return List.of(cuMemsetD32Async.SYMBOLS);
    }

    public static MemorySegment cuMemsetD32Async$address() {
        return cuMemsetD32Async.Bound.ADDR;
    }

    public static MethodHandle cuMemsetD32Async$handle() {
        return cuMemsetD32Async.Bound.HANDLE;
    }

    public static int cuMemsetD32Async(long dstDevice, int ui, long N, MemorySegment hStream) {
        try {
            return (int) cuMemsetD32Async.Bound.HANDLE.invokeExact(dstDevice, ui, N, hStream);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
    /**
     * {@snippet lang=c :
     * CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
     * }
     */
    private static final class cuMemHostAlloc {
        static final FunctionDescriptor DESC = FunctionDescriptor.of(CUresult, C_POINTER, size_t, C_INT);
        static final String[] SYMBOLS = {"cuMemHostAlloc"};

        private static final class Bound { // initialised on first call: only then is the library opened
            static final MemorySegment ADDR = LIBRARY.find(SYMBOLS);
            static final MethodHandle HANDLE = LIBRARY.downcall(ADDR, DESC, SYMBOLS[0]);
        }
    }

    public static FunctionDescriptor cuMemHostAlloc$descriptor() {
        return cuMemHostAlloc.DESC;
    }

    /** The exported symbols this function binds to, preferred first. */
    public static List<String> cuMemHostAlloc$symbols() {
        return List.of(cuMemHostAlloc.SYMBOLS);
    }

    public static MemorySegment cuMemHostAlloc$address() {
        return cuMemHostAlloc.Bound.ADDR;
    }

    public static MethodHandle cuMemHostAlloc$handle() {
        return cuMemHostAlloc.Bound.HANDLE;
    }

    public static int cuMemHostAlloc(MemorySegment pp, long bytesize, int Flags) {
        try {
            return (int) cuMemHostAlloc.Bound.HANDLE.invokeExact(pp, bytesize, Flags);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
    /**
     * {@snippet lang=c :
     * CUresult cuMemFreeHost(void *p)
     * }
     */
    private static final class cuMemFreeHost {
        static final FunctionDescriptor DESC = FunctionDescriptor.of(CUresult, C_POINTER);
        static final String[] SYMBOLS = {"cuMemFreeHost"};

        private static final class Bound { // initialised on first call: only then is the library opened
            static final MemorySegment ADDR = LIBRARY.find(SYMBOLS);
            static final MethodHandle HANDLE = LIBRARY.downcall(ADDR, DESC, SYMBOLS[0]);
        }
    }

    public static FunctionDescriptor cuMemFreeHost$descriptor() {
        return cuMemFreeHost.DESC;
    }

    /** The exported symbols this function binds to, preferred first. */
    public static List<String> cuMemFreeHost$symbols() {
        return List.of(cuMemFreeHost.SYMBOLS);
    }

    public static MemorySegment cuMemFreeHost$address() {
        return cuMemFreeHost.Bound.ADDR;
    }

    public static MethodHandle cuMemFreeHost$handle() {
        return cuMemFreeHost.Bound.HANDLE;
    }

    public static int cuMemFreeHost(MemorySegment p) {
        try {
            return (int) cuMemFreeHost.Bound.HANDLE.invokeExact(p);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
    /**
     * {@snippet lang=c :
     * CUresult cuMemHostGetDevicePointer(CUdeviceptr *pdptr, void *p, unsigned int Flags)
     * } Bound to {@code cuMemHostGetDevicePointer_v2} (first found).
     */
    private static final class cuMemHostGetDevicePointer {
        static final FunctionDescriptor DESC = FunctionDescriptor.of(CUresult, C_POINTER, C_POINTER, C_INT);
        static final String[] SYMBOLS = {"cuMemHostGetDevicePointer_v2"};

        private static final class Bound { // initialised on first call: only then is the library opened
            static final MemorySegment ADDR = LIBRARY.find(SYMBOLS);
            static final MethodHandle HANDLE = LIBRARY.downcall(ADDR, DESC, SYMBOLS[0]);
        }
    }

    public static FunctionDescriptor cuMemHostGetDevicePointer$descriptor() {
        return cuMemHostGetDevicePointer.DESC;
    }

    /** The exported symbols this function binds to, preferred first. */
    public static List<String> cuMemHostGetDevicePointer$symbols() {
        return List.of(cuMemHostGetDevicePointer.SYMBOLS);
    }

    public static MemorySegment cuMemHostGetDevicePointer$address() {
        return cuMemHostGetDevicePointer.Bound.ADDR;
    }

    public static MethodHandle cuMemHostGetDevicePointer$handle() {
        return cuMemHostGetDevicePointer.Bound.HANDLE;
    }

    public static int cuMemHostGetDevicePointer(MemorySegment pdptr, MemorySegment p, int Flags) {
        try {
            return (int) cuMemHostGetDevicePointer.Bound.HANDLE.invokeExact(pdptr, p, Flags);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
    /**
     * {@snippet lang=c :
     * CUresult cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags)
     * } Bound to {@code cuMemHostRegister_v2}, {@code cuMemHostRegister} (first found).
     */
    private static final class cuMemHostRegister {
        static final FunctionDescriptor DESC = FunctionDescriptor.of(CUresult, C_POINTER, size_t, C_INT);
        static final String[] SYMBOLS = {"cuMemHostRegister_v2", "cuMemHostRegister"};

        private static final class Bound { // initialised on first call: only then is the library opened
            static final MemorySegment ADDR = LIBRARY.find(SYMBOLS);
            static final MethodHandle HANDLE = LIBRARY.downcall(ADDR, DESC, SYMBOLS[0]);
        }
    }

    public static FunctionDescriptor cuMemHostRegister$descriptor() {
        return cuMemHostRegister.DESC;
    }

    /** The exported symbols this function binds to, preferred first. */
    public static List<String> cuMemHostRegister$symbols() {
        return List.of(cuMemHostRegister.SYMBOLS);
    }

    public static MemorySegment cuMemHostRegister$address() {
        return cuMemHostRegister.Bound.ADDR;
    }

    public static MethodHandle cuMemHostRegister$handle() {
        return cuMemHostRegister.Bound.HANDLE;
    }

    public static int cuMemHostRegister(MemorySegment p, long bytesize, int Flags) {
        try {
            return (int) cuMemHostRegister.Bound.HANDLE.invokeExact(p, bytesize, Flags);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
    /**
     * {@snippet lang=c :
     * CUresult cuMemHostUnregister(void *p)
     * }
     */
    private static final class cuMemHostUnregister {
        static final FunctionDescriptor DESC = FunctionDescriptor.of(CUresult, C_POINTER);
        static final String[] SYMBOLS = {"cuMemHostUnregister"};

        private static final class Bound { // initialised on first call: only then is the library opened
            static final MemorySegment ADDR = LIBRARY.find(SYMBOLS);
            static final MethodHandle HANDLE = LIBRARY.downcall(ADDR, DESC, SYMBOLS[0]);
        }
    }

    public static FunctionDescriptor cuMemHostUnregister$descriptor() {
        return cuMemHostUnregister.DESC;
    }

    /** The exported symbols this function binds to, preferred first. */
    public static List<String> cuMemHostUnregister$symbols() {
        return List.of(cuMemHostUnregister.SYMBOLS);
    }

    public static MemorySegment cuMemHostUnregister$address() {
        return cuMemHostUnregister.Bound.ADDR;
    }

    public static MethodHandle cuMemHostUnregister$handle() {
        return cuMemHostUnregister.Bound.HANDLE;
    }

    public static int cuMemHostUnregister(MemorySegment p) {
        try {
            return (int) cuMemHostUnregister.Bound.HANDLE.invokeExact(p);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
    /**
     * {@snippet lang=c :
     * CUresult cuModuleLoadData(CUmodule *module, const void *image)
     * }
     */
    private static final class cuModuleLoadData {
        static final FunctionDescriptor DESC = FunctionDescriptor.of(CUresult, C_POINTER, C_POINTER);
        static final String[] SYMBOLS = {"cuModuleLoadData"};

        private static final class Bound { // initialised on first call: only then is the library opened
            static final MemorySegment ADDR = LIBRARY.find(SYMBOLS);
            static final MethodHandle HANDLE = LIBRARY.downcall(ADDR, DESC, SYMBOLS[0]);
        }
    }

    public static FunctionDescriptor cuModuleLoadData$descriptor() {
        return cuModuleLoadData.DESC;
    }

    /** The exported symbols this function binds to, preferred first. */
    public static List<String> cuModuleLoadData$symbols() {
        return List.of(cuModuleLoadData.SYMBOLS);
    }

    public static MemorySegment cuModuleLoadData$address() {
        return cuModuleLoadData.Bound.ADDR;
    }

    public static MethodHandle cuModuleLoadData$handle() {
        return cuModuleLoadData.Bound.HANDLE;
    }

    public static int cuModuleLoadData(MemorySegment module, MemorySegment image) {
        try {
            return (int) cuModuleLoadData.Bound.HANDLE.invokeExact(module, image);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
    /**
     * {@snippet lang=c :
     * CUresult cuModuleUnload(CUmodule hmod)
     * }
     */
    private static final class cuModuleUnload {
        static final FunctionDescriptor DESC = FunctionDescriptor.of(CUresult, CUmodule);
        static final String[] SYMBOLS = {"cuModuleUnload"};

        private static final class Bound { // initialised on first call: only then is the library opened
            static final MemorySegment ADDR = LIBRARY.find(SYMBOLS);
            static final MethodHandle HANDLE = LIBRARY.downcall(ADDR, DESC, SYMBOLS[0]);
        }
    }

    public static FunctionDescriptor cuModuleUnload$descriptor() {
        return cuModuleUnload.DESC;
    }

    /** The exported symbols this function binds to, preferred first. */
    public static List<String> cuModuleUnload$symbols() {
        return List.of(cuModuleUnload.SYMBOLS);
    }

    public static MemorySegment cuModuleUnload$address() {
        return cuModuleUnload.Bound.ADDR;
    }

    public static MethodHandle cuModuleUnload$handle() {
        return cuModuleUnload.Bound.HANDLE;
    }

    public static int cuModuleUnload(MemorySegment hmod) {
        try {
            return (int) cuModuleUnload.Bound.HANDLE.invokeExact(hmod);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
    /**
     * {@snippet lang=c :
     * CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
     * }
     */
    private static final class cuModuleGetFunction {
        static final FunctionDescriptor DESC = FunctionDescriptor.of(CUresult, C_POINTER, CUmodule, C_POINTER);
        static final String[] SYMBOLS = {"cuModuleGetFunction"};

        private static final class Bound { // initialised on first call: only then is the library opened
            static final MemorySegment ADDR = LIBRARY.find(SYMBOLS);
            static final MethodHandle HANDLE = LIBRARY.downcall(ADDR, DESC, SYMBOLS[0]);
        }
    }

    public static FunctionDescriptor cuModuleGetFunction$descriptor() {
        return cuModuleGetFunction.DESC;
    }

    /** The exported symbols this function binds to, preferred first. */
    public static List<String> cuModuleGetFunction$symbols() {
        return List.of(cuModuleGetFunction.SYMBOLS);
    }

    public static MemorySegment cuModuleGetFunction$address() {
        return cuModuleGetFunction.Bound.ADDR;
    }

    public static MethodHandle cuModuleGetFunction$handle() {
        return cuModuleGetFunction.Bound.HANDLE;
    }

    public static int cuModuleGetFunction(MemorySegment hfunc, MemorySegment hmod, MemorySegment name) {
        try {
            return (int) cuModuleGetFunction.Bound.HANDLE.invokeExact(hfunc, hmod, name);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
    /**
     * {@snippet lang=c :
     * CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra)
     * }
     */
    private static final class cuLaunchKernel {
        static final FunctionDescriptor DESC = FunctionDescriptor.of(CUresult, CUfunction, C_INT, C_INT, C_INT, C_INT, C_INT, C_INT, C_INT, CUstream, C_POINTER, C_POINTER);
        static final String[] SYMBOLS = {"cuLaunchKernel"};

        private static final class Bound { // initialised on first call: only then is the library opened
            static final MemorySegment ADDR = LIBRARY.find(SYMBOLS);
            static final MethodHandle HANDLE = LIBRARY.downcall(ADDR, DESC, SYMBOLS[0]);
        }
    }

    public static FunctionDescriptor cuLaunchKernel$descriptor() {
        return cuLaunchKernel.DESC;
    }

    /** The exported symbols this function binds to, preferred first. */
    public static List<String> cuLaunchKernel$symbols() {
        return List.of(cuLaunchKernel.SYMBOLS);
    }

    public static MemorySegment cuLaunchKernel$address() {
        return cuLaunchKernel.Bound.ADDR;
    }

    public static MethodHandle cuLaunchKernel$handle() {
        return cuLaunchKernel.Bound.HANDLE;
    }

    public static int cuLaunchKernel(MemorySegment f, int gridDimX, int gridDimY, int gridDimZ, int blockDimX, int blockDimY, int blockDimZ, int sharedMemBytes, MemorySegment hStream, MemorySegment kernelParams, MemorySegment extra) {
        try {
            return (int) cuLaunchKernel.Bound.HANDLE.invokeExact(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream, kernelParams, extra);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
    /**
     * {@snippet lang=c :
     * CUresult cuGetErrorName(CUresult error, const char **pStr)
     * }
     */
    private static final class cuGetErrorName {
        static final FunctionDescriptor DESC = FunctionDescriptor.of(CUresult, CUresult, C_POINTER);
        static final String[] SYMBOLS = {"cuGetErrorName"};

        private static final class Bound { // initialised on first call: only then is the library opened
            static final MemorySegment ADDR = LIBRARY.find(SYMBOLS);
            static final MethodHandle HANDLE = LIBRARY.downcall(ADDR, DESC, SYMBOLS[0]);
        }
    }

    public static FunctionDescriptor cuGetErrorName$descriptor() {
        return cuGetErrorName.DESC;
    }

    /** The exported symbols this function binds to, preferred first. */
    public static List<String> cuGetErrorName$symbols() {
        return List.of(cuGetErrorName.SYMBOLS);
    }

    public static MemorySegment cuGetErrorName$address() {
        return cuGetErrorName.Bound.ADDR;
    }

    public static MethodHandle cuGetErrorName$handle() {
        return cuGetErrorName.Bound.HANDLE;
    }

    public static int cuGetErrorName(int error, MemorySegment pStr) {
        try {
            return (int) cuGetErrorName.Bound.HANDLE.invokeExact(error, pStr);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
    /**
     * {@snippet lang=c :
     * CUresult cuGetErrorString(CUresult error, const char **pStr)
     * }
     */
    private static final class cuGetErrorString {
        static final FunctionDescriptor DESC = FunctionDescriptor.of(CUresult, CUresult, C_POINTER);
        static final String[] SYMBOLS = {"cuGetErrorString"};

        private static final class Bound { // initialised on first call: only then is the library opened
            static final MemorySegment ADDR = LIBRARY.find(SYMBOLS);
            static final MethodHandle HANDLE = LIBRARY.downcall(ADDR, DESC, SYMBOLS[0]);
        }
    }

    public static FunctionDescriptor cuGetErrorString$descriptor() {
        return cuGetErrorString.DESC;
    }

    /** The exported symbols this function binds to, preferred first. */
    public static List<String> cuGetErrorString$symbols() {
        return List.of(cuGetErrorString.SYMBOLS);
    }

    public static MemorySegment cuGetErrorString$address() {
        return cuGetErrorString.Bound.ADDR;
    }

    public static MethodHandle cuGetErrorString$handle() {
        return cuGetErrorString.Bound.HANDLE;
    }

    public static int cuGetErrorString(int error, MemorySegment pStr) {
        try {
            return (int) cuGetErrorString.Bound.HANDLE.invokeExact(error, pStr);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
}
