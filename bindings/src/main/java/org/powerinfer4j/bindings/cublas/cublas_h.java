package org.powerinfer4j.bindings.cublas;

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
 * FFM bindings to the part of cuBLAS ({@code cublas_api.h}, v2 API) the engine uses, laid out as jextract lays out a
 * header class: per function a holder with its {@link FunctionDescriptor}, symbol address and downcall
 * {@link MethodHandle}, bound on the first call, and a static method of the same name returning the
 * {@code cublasStatus_t}. The library is opened on first use (see {@link #LIBRARY}); without it nothing throws at
 * class initialisation and the calls throw {@link UnsatisfiedLinkError}.
 */
@SuppressWarnings({"unused", "checkstyle:MethodName"})
public final class cublas_h {
    private cublas_h() {}

    public static final ValueLayout.OfInt C_INT = ValueLayout.JAVA_INT;
    public static final ValueLayout.OfLong C_LONG = ValueLayout.JAVA_LONG;
    public static final AddressLayout C_POINTER = ValueLayout.ADDRESS
            .withTargetLayout(MemoryLayout.sequenceLayout(Long.MAX_VALUE, ValueLayout.JAVA_BYTE));

    /** {@code typedef enum cublasStatus_t} */
    public static final ValueLayout.OfInt cublasStatus_t = C_INT;
    /** {@code typedef struct cublasContext *cublasHandle_t} */
    public static final AddressLayout cublasHandle_t = C_POINTER;
    /** {@code typedef struct CUstream_st *cudaStream_t} (the same object as a driver-API {@code CUstream}) */
    public static final AddressLayout cudaStream_t = C_POINTER;
    public static final ValueLayout.OfInt cublasOperation_t = C_INT;
    /** {@code typedef enum cudaDataType_t cudaDataType} */
    public static final ValueLayout.OfInt cudaDataType = C_INT;
    public static final ValueLayout.OfInt cublasComputeType_t = C_INT;
    public static final ValueLayout.OfInt cublasGemmAlgo_t = C_INT;
    public static final ValueLayout.OfInt cublasMath_t = C_INT;
    /** {@code long long int} */
    public static final ValueLayout.OfLong long_long = C_LONG;

    public static final int CUBLAS_STATUS_SUCCESS = 0;
    public static final int CUBLAS_OP_N = 0;
    public static final int CUBLAS_OP_T = 1;
    public static final int CUBLAS_OP_C = 2;
    public static final int CUDA_R_32F = 0;
    public static final int CUDA_R_16F = 2;
    public static final int CUDA_R_16BF = 14;
    public static final int CUBLAS_COMPUTE_32F = 68;
    public static final int CUBLAS_COMPUTE_32F_FAST_16F = 74;
    public static final int CUBLAS_COMPUTE_32F_FAST_16BF = 75;
    public static final int CUBLAS_COMPUTE_32F_FAST_TF32 = 77;
    public static final int CUBLAS_GEMM_DEFAULT = -1;
    public static final int CUBLAS_DEFAULT_MATH = 0;
    public static final int CUBLAS_PEDANTIC_MATH = 2;
    public static final int CUBLAS_TF32_TENSOR_OP_MATH = 3;

    /**
     * cuBLAS: {@code -Dpowerinfer4j.cublas=PATH} or {@code POWERINFER4J_CUBLAS} when set, else {@code libcublas.so.13},
     * {@code .12}, {@code .11} through the dynamic loader, then in {@code $CUDA_HOME/lib64}, {@code $CUDA_PATH/lib64},
     * each {@code LD_LIBRARY_PATH} directory and {@code /usr/local/cuda/lib64}.
     */
    public static final NativeLibrary LIBRARY = new NativeLibrary("libcublas.so", cublas_h::libraryCandidates);

    static List<String> libraryCandidates() {
        List<String> c = new ArrayList<>();
        String override = NativeLibrary.override("powerinfer4j.cublas", "POWERINFER4J_CUBLAS");
        if (override != null) c.add(override);
        boolean windows = System.getProperty("os.name", "").toLowerCase().startsWith("windows");
        List<String> names = windows ? List.of("cublas64_13.dll", "cublas64_12.dll", "cublas64_11.dll")
                : List.of("libcublas.so.13", "libcublas.so.12", "libcublas.so.11", "libcublas.so");
        c.addAll(names);
        List<String> dirs = new ArrayList<>();
        for (String env : List.of("CUDA_HOME", "CUDA_PATH")) {
            String home = System.getenv(env);
            if (home != null && !home.isBlank()) dirs.add(home + (windows ? "/bin" : "/lib64"));
        }
        dirs.addAll(NativeLibrary.pathList(System.getenv("LD_LIBRARY_PATH")));
        if (!windows) dirs.add("/usr/local/cuda/lib64");
        for (String d : dirs) for (String n : names) c.add(d + "/" + n);
        return c;
    }

    static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException r) return r;
        if (t instanceof Error e) throw e;
        return new IllegalStateException(t);
    }

    /**
     * {@snippet lang=c :
     * cublasStatus_t cublasCreate_v2(cublasHandle_t *handle)
     * }
     */
    private static final class cublasCreate_v2 {
        static final FunctionDescriptor DESC = FunctionDescriptor.of(cublasStatus_t, C_POINTER);
        static final String[] SYMBOLS = {"cublasCreate_v2"};

        private static final class Bound { // initialised on first call: only then is the library opened
            static final MemorySegment ADDR = LIBRARY.find(SYMBOLS);
            static final MethodHandle HANDLE = LIBRARY.downcall(ADDR, DESC, SYMBOLS[0]);
        }
    }

    public static FunctionDescriptor cublasCreate_v2$descriptor() {
        return cublasCreate_v2.DESC;
    }

    /** The exported symbols this function binds to, preferred first. */
    public static List<String> cublasCreate_v2$symbols() {
        return List.of(cublasCreate_v2.SYMBOLS);
    }

    public static MemorySegment cublasCreate_v2$address() {
        return cublasCreate_v2.Bound.ADDR;
    }

    public static MethodHandle cublasCreate_v2$handle() {
        return cublasCreate_v2.Bound.HANDLE;
    }

    public static int cublasCreate_v2(MemorySegment handle) {
        try {
            return (int) cublasCreate_v2.Bound.HANDLE.invokeExact(handle);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
    /**
     * {@snippet lang=c :
     * cublasStatus_t cublasDestroy_v2(cublasHandle_t handle)
     * }
     */
    private static final class cublasDestroy_v2 {
        static final FunctionDescriptor DESC = FunctionDescriptor.of(cublasStatus_t, cublasHandle_t);
        static final String[] SYMBOLS = {"cublasDestroy_v2"};

        private static final class Bound { // initialised on first call: only then is the library opened
            static final MemorySegment ADDR = LIBRARY.find(SYMBOLS);
            static final MethodHandle HANDLE = LIBRARY.downcall(ADDR, DESC, SYMBOLS[0]);
        }
    }

    public static FunctionDescriptor cublasDestroy_v2$descriptor() {
        return cublasDestroy_v2.DESC;
    }

    /** The exported symbols this function binds to, preferred first. */
    public static List<String> cublasDestroy_v2$symbols() {
        return List.of(cublasDestroy_v2.SYMBOLS);
    }

    public static MemorySegment cublasDestroy_v2$address() {
        return cublasDestroy_v2.Bound.ADDR;
    }

    public static MethodHandle cublasDestroy_v2$handle() {
        return cublasDestroy_v2.Bound.HANDLE;
    }

    public static int cublasDestroy_v2(MemorySegment handle) {
        try {
            return (int) cublasDestroy_v2.Bound.HANDLE.invokeExact(handle);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
    /**
     * {@snippet lang=c :
     * cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t streamId)
     * }
     */
    private static final class cublasSetStream_v2 {
        static final FunctionDescriptor DESC = FunctionDescriptor.of(cublasStatus_t, cublasHandle_t, cudaStream_t);
        static final String[] SYMBOLS = {"cublasSetStream_v2"};

        private static final class Bound { // initialised on first call: only then is the library opened
            static final MemorySegment ADDR = LIBRARY.find(SYMBOLS);
            static final MethodHandle HANDLE = LIBRARY.downcall(ADDR, DESC, SYMBOLS[0]);
        }
    }

    public static FunctionDescriptor cublasSetStream_v2$descriptor() {
        return cublasSetStream_v2.DESC;
    }

    /** The exported symbols this function binds to, preferred first. */
    public static List<String> cublasSetStream_v2$symbols() {
        return List.of(cublasSetStream_v2.SYMBOLS);
    }

    public static MemorySegment cublasSetStream_v2$address() {
        return cublasSetStream_v2.Bound.ADDR;
    }

    public static MethodHandle cublasSetStream_v2$handle() {
        return cublasSetStream_v2.Bound.HANDLE;
    }

    public static int cublasSetStream_v2(MemorySegment handle, MemorySegment streamId) {
        try {
            return (int) cublasSetStream_v2.Bound.HANDLE.invokeExact(handle, streamId);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
    /**
     * {@snippet lang=c :
     * cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode)
     * }
     */
    private static final class cublasSetMathMode {
        static final FunctionDescriptor DESC = FunctionDescriptor.of(cublasStatus_t, cublasHandle_t, cublasMath_t);
        static final String[] SYMBOLS = {"cublasSetMathMode"};

        private static final class Bound { // initialised on first call: only then is the library opened
            static final MemorySegment ADDR = LIBRARY.find(SYMBOLS);
            static final MethodHandle HANDLE = LIBRARY.downcall(ADDR, DESC, SYMBOLS[0]);
        }
    }

    public static FunctionDescriptor cublasSetMathMode$descriptor() {
        return cublasSetMathMode.DESC;
    }

    /** The exported symbols this function binds to, preferred first. */
    public static List<String> cublasSetMathMode$symbols() {
        return List.of(cublasSetMathMode.SYMBOLS);
    }

    public static MemorySegment cublasSetMathMode$address() {
        return cublasSetMathMode.Bound.ADDR;
    }

    public static MethodHandle cublasSetMathMode$handle() {
        return cublasSetMathMode.Bound.HANDLE;
    }

    public static int cublasSetMathMode(MemorySegment handle, int mode) {
        try {
            return (int) cublasSetMathMode.Bound.HANDLE.invokeExact(handle, mode);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
    /**
     * {@snippet lang=c :
     * cublasStatus_t cublasGetVersion_v2(cublasHandle_t handle, int *version)
     * }
     */
    private static final class cublasGetVersion_v2 {
        static final FunctionDescriptor DESC = FunctionDescriptor.of(cublasStatus_t, cublasHandle_t, C_POINTER);
        static final String[] SYMBOLS = {"cublasGetVersion_v2"};

        private static final class Bound { // initialised on first call: only then is the library opened
            static final MemorySegment ADDR = LIBRARY.find(SYMBOLS);
            static final MethodHandle HANDLE = LIBRARY.downcall(ADDR, DESC, SYMBOLS[0]);
        }
    }

    public static FunctionDescriptor cublasGetVersion_v2$descriptor() {
        return cublasGetVersion_v2.DESC;
    }

    /** The exported symbols this function binds to, preferred first. */
    public static List<String> cublasGetVersion_v2$symbols() {
        return List.of(cublasGetVersion_v2.SYMBOLS);
    }

    public static MemorySegment cublasGetVersion_v2$address() {
        return cublasGetVersion_v2.Bound.ADDR;
    }

    public static MethodHandle cublasGetVersion_v2$handle() {
        return cublasGetVersion_v2.Bound.HANDLE;
    }

    public static int cublasGetVersion_v2(MemorySegment handle, MemorySegment version) {
        try {
            return (int) cublasGetVersion_v2.Bound.HANDLE.invokeExact(handle, version);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
    /**
     * {@snippet lang=c :
     * cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k, const void *alpha, const void *A, cudaDataType Atype, int lda, const void *B, cudaDataType Btype, int ldb, const void *beta, void *C, cudaDataType Ctype, int ldc, cublasComputeType_t computeType, cublasGemmAlgo_t algo)
     * }
     */
    private static final class cublasGemmEx {
        static final FunctionDescriptor DESC = FunctionDescriptor.of(cublasStatus_t, cublasHandle_t, cublasOperation_t, cublasOperation_t, C_INT, C_INT, C_INT, C_POINTER, C_POINTER, cudaDataType, C_INT, C_POINTER, cudaDataType, C_INT, C_POINTER, C_POINTER, cudaDataType, C_INT, cublasComputeType_t, cublasGemmAlgo_t);
        static final String[] SYMBOLS = {"cublasGemmEx"};

        private static final class Bound { // initialised on first call: only then is the library opened
            static final MemorySegment ADDR = LIBRARY.find(SYMBOLS);
            static final MethodHandle HANDLE = LIBRARY.downcall(ADDR, DESC, SYMBOLS[0]);
        }
    }

    public static FunctionDescriptor cublasGemmEx$descriptor() {
        return cublasGemmEx.DESC;
    }

    /** The exported symbols this function binds to, preferred first. */
    public static List<String> cublasGemmEx$symbols() {
        return List.of(cublasGemmEx.SYMBOLS);
    }

    public static MemorySegment cublasGemmEx$address() {
        return cublasGemmEx.Bound.ADDR;
    }

    public static MethodHandle cublasGemmEx$handle() {
        return cublasGemmEx.Bound.HANDLE;
    }

    public static int cublasGemmEx(MemorySegment handle, int transa, int transb, int m, int n, int k, MemorySegment alpha, MemorySegment A, int Atype, int lda, MemorySegment B, int Btype, int ldb, MemorySegment beta, MemorySegment C, int Ctype, int ldc, int computeType, int algo) {
        try {
            return (int) cublasGemmEx.Bound.HANDLE.invokeExact(handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C, Ctype, ldc, computeType, algo);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
    /**
     * {@snippet lang=c :
     * cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k, const void *alpha, const void *A, cudaDataType Atype, int lda, long long int strideA, const void *B, cudaDataType Btype, int ldb, long long int strideB, const void *beta, void *C, cudaDataType Ctype, int ldc, long long int strideC, int batchCount, cublasComputeType_t computeType, cublasGemmAlgo_t algo)
     * }
     */
    private static final class cublasGemmStridedBatchedEx {
        static final FunctionDescriptor DESC = FunctionDescriptor.of(cublasStatus_t, cublasHandle_t, cublasOperation_t, cublasOperation_t, C_INT, C_INT, C_INT, C_POINTER, C_POINTER, cudaDataType, C_INT, long_long, C_POINTER, cudaDataType, C_INT, long_long, C_POINTER, C_POINTER, cudaDataType, C_INT, long_long, C_INT, cublasComputeType_t, cublasGemmAlgo_t);
        static final String[] SYMBOLS = {"cublasGemmStridedBatchedEx"};

        private static final class Bound { // initialised on first call: only then is the library opened
            static final MemorySegment ADDR = LIBRARY.find(SYMBOLS);
            static final MethodHandle HANDLE = LIBRARY.downcall(ADDR, DESC, SYMBOLS[0]);
        }
    }

    public static FunctionDescriptor cublasGemmStridedBatchedEx$descriptor() {
        return cublasGemmStridedBatchedEx.DESC;
    }

    /** The exported symbols this function binds to, preferred first. */
    public static List<String> cublasGemmStridedBatchedEx$symbols() {
        return List.of(cublasGemmStridedBatchedEx.SYMBOLS);
    }

    public static MemorySegment cublasGemmStridedBatchedEx$address() {
        return cublasGemmStridedBatchedEx.Bound.ADDR;
    }

    public static MethodHandle cublasGemmStridedBatchedEx$handle() {
        return cublasGemmStridedBatchedEx.Bound.HANDLE;
    }

    public static int cublasGemmStridedBatchedEx(MemorySegment handle, int transa, int transb, int m, int n, int k, MemorySegment alpha, MemorySegment A, int Atype, int lda, long strideA, MemorySegment B, int Btype, int ldb, long strideB, MemorySegment beta, MemorySegment C, int Ctype, int ldc, long strideC, int batchCount, int computeType, int algo) {
        try {
            return (int) cublasGemmStridedBatchedEx.Bound.HANDLE.invokeExact(handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B, Btype, ldb, strideB, beta, C, Ctype, ldc, strideC, batchCount, computeType, algo);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
}
