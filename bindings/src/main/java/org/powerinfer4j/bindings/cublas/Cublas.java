package org.powerinfer4j.bindings.cublas;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.atomic.AtomicBoolean;
import org.powerinfer4j.bindings.cuda.Cuda;
import org.powerinfer4j.bindings.cuda.CudaContext;
import org.powerinfer4j.bindings.cuda.CudaStream;

/**
 * A cuBLAS handle bound to a CUDA context, with typed GEMMs. Matrices are column-major as in BLAS; a row-major
 * {@code rows×cols} weight matrix W is, to cuBLAS, the column-major {@code cols×rows} matrix Wᵀ, so {@code y = W·x} is
 * {@code gemmEx(T, N, rows, batch, cols, 1, W, F16, cols, x, F16, cols, 0, y, F32, rows, COMPUTE_32F)}.
 * Scalars are passed from host memory (the default pointer mode) as floats, which every {@link ComputeType} here takes.
 */
public final class Cublas implements AutoCloseable {
    public enum Op {
        N(cublas_h.CUBLAS_OP_N), T(cublas_h.CUBLAS_OP_T);
        final int value;
        Op(int v) { value = v; }
    }

    /** {@code cudaDataType} of a matrix. */
    public enum DataType {
        R_32F(cublas_h.CUDA_R_32F), R_16F(cublas_h.CUDA_R_16F), R_16BF(cublas_h.CUDA_R_16BF);
        final int value;
        DataType(int v) { value = v; }
    }

    /** {@code cublasComputeType_t}s with float scalars. */
    public enum ComputeType {
        COMPUTE_32F(cublas_h.CUBLAS_COMPUTE_32F), COMPUTE_32F_FAST_16F(cublas_h.CUBLAS_COMPUTE_32F_FAST_16F),
        COMPUTE_32F_FAST_16BF(cublas_h.CUBLAS_COMPUTE_32F_FAST_16BF), COMPUTE_32F_FAST_TF32(cublas_h.CUBLAS_COMPUTE_32F_FAST_TF32);
        final int value;
        ComputeType(int v) { value = v; }
    }

    public enum MathMode {
        DEFAULT(cublas_h.CUBLAS_DEFAULT_MATH), PEDANTIC(cublas_h.CUBLAS_PEDANTIC_MATH), TF32_TENSOR_OP(cublas_h.CUBLAS_TF32_TENSOR_OP_MATH);
        final int value;
        MathMode(int v) { value = v; }
    }

    private final CudaContext context;
    private final MemorySegment handle;
    private final AtomicBoolean closed = new AtomicBoolean();

    private Cublas(CudaContext context, MemorySegment handle) {
        this.context = context;
        this.handle = handle;
    }

    /** True when CUDA is available and the cuBLAS library loads. */
    public static boolean available() {
        return Cuda.available() && cublas_h.LIBRARY.isLoaded();
    }

    /** Why cuBLAS cannot be used (one line), empty when it can. */
    public static String unavailableReason() {
        if (!Cuda.available()) return Cuda.unavailableReason();
        return cublas_h.LIBRARY.failure();
    }

    /** A handle in {@code context} (made current on this thread first). */
    public static Cublas create(CudaContext context) {
        if (!available()) throw new IllegalStateException("cuBLAS is unavailable: " + unavailableReason());
        context.makeCurrent();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment p = a.allocate(cublas_h.C_POINTER);
            CublasException.check(cublas_h.cublasCreate_v2(p), "cublasCreate_v2");
            return new Cublas(context, p.get(cublas_h.C_POINTER, 0));
        }
    }

    public MemorySegment handle() {
        if (closed.get()) throw new IllegalStateException("cuBLAS handle is destroyed");
        return handle;
    }

    /** cuBLAS's version number, e.g. 130000. */
    public int version() {
        context.makeCurrent();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment v = a.allocate(cublas_h.C_INT);
            CublasException.check(cublas_h.cublasGetVersion_v2(handle(), v), "cublasGetVersion_v2");
            return v.get(cublas_h.C_INT, 0);
        }
    }

    /** Issues later calls on {@code stream}. */
    public void setStream(CudaStream stream) {
        context.makeCurrent();
        CublasException.check(cublas_h.cublasSetStream_v2(handle(), stream.handle()), "cublasSetStream_v2");
    }

    public void setMathMode(MathMode mode) {
        context.makeCurrent();
        CublasException.check(cublas_h.cublasSetMathMode(handle(), mode.value), "cublasSetMathMode");
    }

    /** C = alpha·op(A)·op(B) + beta·C (column-major; m×n result, k inner; addresses are device pointers). */
    public void gemmEx(Op transA, Op transB, int m, int n, int k, float alpha, long a, DataType aType, int lda, long b, DataType bType,
                       int ldb, float beta, long c, DataType cType, int ldc, ComputeType compute) {
        context.makeCurrent();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment al = arena.allocateFrom(ValueLayout.JAVA_FLOAT, alpha), be = arena.allocateFrom(ValueLayout.JAVA_FLOAT, beta);
            CublasException.check(cublas_h.cublasGemmEx(handle(), transA.value, transB.value, m, n, k, al, MemorySegment.ofAddress(a), aType.value, lda,
                    MemorySegment.ofAddress(b), bType.value, ldb, be, MemorySegment.ofAddress(c), cType.value, ldc, compute.value,
                    cublas_h.CUBLAS_GEMM_DEFAULT), "cublasGemmEx");
        }
    }

    /** {@code batch} independent GEMMs; matrix i of A, B, C starts {@code i·stride} elements after the first. */
    public void gemmStridedBatchedEx(Op transA, Op transB, int m, int n, int k, float alpha, long a, DataType aType, int lda, long strideA,
                                     long b, DataType bType, int ldb, long strideB, float beta, long c, DataType cType, int ldc, long strideC,
                                     int batch, ComputeType compute) {
        context.makeCurrent();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment al = arena.allocateFrom(ValueLayout.JAVA_FLOAT, alpha), be = arena.allocateFrom(ValueLayout.JAVA_FLOAT, beta);
            CublasException.check(cublas_h.cublasGemmStridedBatchedEx(handle(), transA.value, transB.value, m, n, k, al,
                    MemorySegment.ofAddress(a), aType.value, lda, strideA, MemorySegment.ofAddress(b), bType.value, ldb, strideB, be,
                    MemorySegment.ofAddress(c), cType.value, ldc, strideC, batch, compute.value, cublas_h.CUBLAS_GEMM_DEFAULT),
                    "cublasGemmStridedBatchedEx");
        }
    }

    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) return;
        context.makeCurrent();
        CublasException.check(cublas_h.cublasDestroy_v2(handle), "cublasDestroy_v2");
    }
}
