package org.powerinfer4j.engine.gpu;

import org.powerinfer4j.bindings.cublas.Cublas;
import org.powerinfer4j.bindings.cuda.DeviceBuffer;
import org.powerinfer4j.bindings.cuda.Dim3;
import org.powerinfer4j.engine.gpu.PtxKernels.Spec;
import org.powerinfer4j.engine.tensor.GGMLType;

/**
 * The CUDA backend's GEMMs over a batch of tokens, through cuBLAS GemmEx on the stream's own handle. cuBLAS is
 * column-major, so a row-major matrix W (rows × cols) is Wᵀ to it with leading dimension cols. F32 weights multiply
 * the F32 inputs directly; F16 weights are used in place; the other types are dequantized to F16 a slab of rows at
 * a time into the stream's scratch, behind the inputs converted to F16 (each token's row scaled by a power of two
 * where it would overflow F16, its outputs scaled back). Split precision ({@link GpuBackend#gemmSplit()}) adds the
 * operands' low F16 parts in two more GEMMs.
 */
final class CudaGemm {
    private static final int THREADS = CudaBackend.THREADS;
    private final CudaBackend cuda;

    CudaGemm(CudaBackend cuda) {
        this.cuda = cuda;
    }

    private static Spec dequantKernel(GGMLType t) {
        return switch (t) {
            case F32 -> Spec.DEQUANT_F16_F32;
            case Q8_0 -> Spec.DEQUANT_F16_Q8_0;
            case Q4_0 -> Spec.DEQUANT_F16_Q4_0;
            case Q4_K -> Spec.DEQUANT_F16_Q4_K;
            case Q5_K -> Spec.DEQUANT_F16_Q5_K;
            case Q6_K -> Spec.DEQUANT_F16_Q6_K;
            default -> throw new IllegalArgumentException("no F16 dequantization kernel for " + t);
        };
    }

    /** out = x·Wᵀ (tokens × rows): op(A) = T over lda = cols; {@code split}: in split precision. */
    void matMul(GpuStream s, GpuMatrix w, GpuBuffer x, GpuBuffer out, int tokens, boolean split) {
        int rows = w.rows(), cols = w.cols();
        Checks.floats(x, (long) tokens * cols, "x");
        Checks.floats(out, (long) tokens * rows, "out");
        if (rows == 0) return;
        Cublas blas = CudaBackend.st(s).blas();
        long wAt = CudaBackend.dev(w.data()).address(), outAt = CudaBackend.dev(out).address();
        if (w.type() == GGMLType.F32) {
            blas.gemmEx(Cublas.Op.T, Cublas.Op.N, rows, tokens, cols, 1f, wAt, Cublas.DataType.R_32F, cols, CudaBackend.dev(x).address(),
                    Cublas.DataType.R_32F, cols, 0f, outAt, Cublas.DataType.R_32F, rows, Cublas.ComputeType.COMPUTE_32F);
            return;
        }
        Inputs in = inputs(s, x, cols, tokens, GpuBackend.gemmScratchBytes(w.type(), rows, cols, tokens, split), split);
        if (w.type() == GGMLType.F16) {   // exact in F16 already: hi·hi + hi·lo
            gemm16(blas, Cublas.Op.T, rows, tokens, cols, wAt, cols, in.hi, cols, outAt, rows, 0f);
            if (in.lo != 0) gemm16(blas, Cublas.Op.T, rows, tokens, cols, wAt, cols, in.lo, cols, outAt, rows, 1f);
            scaleRows(s, outAt, in.scales, rows, tokens);
            return;
        }
        int per = GpuBackend.gemmSlabRows(rows, cols);
        long rowBytes = w.type().byteSize(cols);
        for (int r0 = 0; r0 < rows; r0 += per) {
            int m = Math.min(per, rows - r0);
            long[] slab = dequantize(s, w.type(), wAt + r0 * rowBytes, in, m, cols, per);
            long o = outAt + 4L * r0;
            gemm16(blas, Cublas.Op.T, m, tokens, cols, slab[0], cols, in.hi, cols, o, rows, 0f);
            if (in.lo != 0) {
                gemm16(blas, Cublas.Op.T, m, tokens, cols, slab[0], cols, in.lo, cols, o, rows, 1f);
                gemm16(blas, Cublas.Op.T, m, tokens, cols, slab[1], cols, in.hi, cols, o, rows, 1f);
            }
        }
        scaleRows(s, outAt, in.scales, rows, tokens);
    }

    /**
     * y = h·W (tokens × cols) over neuron-major W (rows × cols): W row-major is, column-major, a cols × rows matrix
     * used as is (op N, lda = cols); h's token t is column t of a rows × tokens matrix. Slabs of W's rows take the
     * matching slice of h and accumulate (beta 1) into y.
     */
    void axpyMatMul(GpuStream s, GpuMatrix w, GpuBuffer h, GpuBuffer y, int tokens) {
        int rows = w.rows(), cols = w.cols();
        Checks.floats(h, (long) tokens * rows, "h");
        Checks.floats(y, (long) tokens * cols, "y");
        Cublas blas = CudaBackend.st(s).blas();
        long wAt = CudaBackend.dev(w.data()).address(), yAt = CudaBackend.dev(y).address();
        if (w.type() == GGMLType.F32) {
            blas.gemmEx(Cublas.Op.N, Cublas.Op.N, cols, tokens, rows, 1f, wAt, Cublas.DataType.R_32F, cols, CudaBackend.dev(h).address(),
                    Cublas.DataType.R_32F, rows, 0f, yAt, Cublas.DataType.R_32F, cols, Cublas.ComputeType.COMPUTE_32F);
            return;
        }
        Inputs in = inputs(s, h, rows, tokens, GpuBackend.axpyGemmScratchBytes(w.type(), rows, cols, tokens), GpuBackend.gemmSplit());
        if (w.type() == GGMLType.F16) {
            gemm16(blas, Cublas.Op.N, cols, tokens, rows, wAt, cols, in.hi, rows, yAt, cols, 0f);
            if (in.lo != 0) gemm16(blas, Cublas.Op.N, cols, tokens, rows, wAt, cols, in.lo, rows, yAt, cols, 1f);
            scaleRows(s, yAt, in.scales, cols, tokens);
            return;
        }
        int per = GpuBackend.gemmSlabRows(rows, cols);
        long rowBytes = w.type().byteSize(cols);
        for (int r0 = 0; r0 < rows; r0 += per) {
            int m = Math.min(per, rows - r0);
            long[] slab = dequantize(s, w.type(), wAt + r0 * rowBytes, in, m, cols, per);
            long hHi = in.hi + 2L * r0, hLo = in.lo + 2L * r0;   // the slab's rows of every token (ldb = rows)
            float beta = r0 == 0 ? 0f : 1f;
            gemm16(blas, Cublas.Op.N, cols, tokens, m, slab[0], cols, hHi, rows, yAt, cols, beta);
            if (in.lo != 0) {
                gemm16(blas, Cublas.Op.N, cols, tokens, m, slab[0], cols, hLo, rows, yAt, cols, 1f);
                gemm16(blas, Cublas.Op.N, cols, tokens, m, slab[1], cols, hHi, rows, yAt, cols, 1f);
            }
        }
        scaleRows(s, yAt, in.scales, cols, tokens);
    }

    /** Addresses in the stream's scratch: the per-token scales, the inputs' F16 high [and low] parts, then the slab. */
    private record Inputs(long scales, long hi, long lo, long slab) {}

    /** Converts {@code tokens} rows of {@code n} floats to F16 (scaled per token) into scratch of {@code bytes}. */
    private Inputs inputs(GpuStream s, GpuBuffer x, int n, int tokens, long bytes, boolean split) {
        DeviceBuffer scratch = CudaBackend.st(s).workspace(bytes);
        long inBytes = GpuBackend.gemmInputBytes(tokens, n);
        long scales = scratch.address(), hi = scales + GpuBackend.gemmScaleBytes(tokens), lo = split ? hi + inBytes : 0;
        cuda.launch(Spec.SCALED_F32_F16, Dim3.of(Math.min(tokens, 65535)), THREADS, s, CudaBackend.dev(x), hi, split ? lo : null, scales, n, tokens);
        return new Inputs(scales, hi, lo, hi + (split ? 2 : 1) * inBytes);
    }

    /** Dequantizes m rows of W (at {@code at}) into the slab: {hi, lo} addresses (lo 0 without split precision). */
    private long[] dequantize(GpuStream s, GGMLType type, long at, Inputs in, int m, int cols, int per) {
        long lo = in.lo != 0 ? in.slab + 2L * per * cols : 0;
        cuda.launch(dequantKernel(type), Dim3.of(CudaBackend.blocks((long) m * (cols / 32), THREADS)), THREADS, s, at, in.slab, lo != 0 ? lo : null, m, cols);
        return new long[] {in.slab, lo};
    }

    private void scaleRows(GpuStream s, long out, long scales, int rows, int tokens) {
        cuda.launch(Spec.SCALE_ROWS_F32, Dim3.of(CudaBackend.blocks((long) rows * tokens, THREADS)), THREADS, s, out, scales, rows, tokens);
    }

    /** C (+)= op(A)·B over F16 operands with F32 accumulation and output (column-major, as cuBLAS). */
    private static void gemm16(Cublas blas, Cublas.Op opA, int m, int n, int k, long a, int lda, long b, int ldb, long c, int ldc, float beta) {
        blas.gemmEx(opA, Cublas.Op.N, m, n, k, 1f, a, Cublas.DataType.R_16F, lda, b, Cublas.DataType.R_16F, ldb, beta, c, Cublas.DataType.R_32F, ldc,
                Cublas.ComputeType.COMPUTE_32F);
    }
}
