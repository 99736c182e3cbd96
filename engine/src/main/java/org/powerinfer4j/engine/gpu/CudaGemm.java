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
        product(s, w, x, out, tokens, split, false);
    }

    /**
     * y = h·W (tokens × cols) over neuron-major W (rows × cols): W row-major is, column-major, a cols × rows matrix
     * used as is (op N, lda = cols); h's token t is column t of a rows × tokens matrix. Slabs of W's rows take the
     * matching slice of h and accumulate (beta 1) into y.
     */
    void axpyMatMul(GpuStream s, GpuMatrix w, GpuBuffer h, GpuBuffer y, int tokens) {
        product(s, w, h, y, tokens, GpuBackend.gemmSplit(), true);
    }

    /** Either product ({@code axpy}: y = h·W, else out = x·Wᵀ), slab by slab of W's rows. */
    private void product(GpuStream s, GpuMatrix w, GpuBuffer x, GpuBuffer out, int tokens, boolean split, boolean axpy) {
        int rows = w.rows(), cols = w.cols(), inLen = axpy ? rows : cols, outLen = axpy ? cols : rows;
        Checks.floats(x, (long) tokens * inLen, axpy ? "h" : "x");
        Checks.floats(out, (long) tokens * outLen, axpy ? "y" : "out");
        if (rows == 0) return;
        Cublas blas = CudaBackend.st(s).blas();
        long wAt = CudaBackend.dev(w.data()).address(), outAt = CudaBackend.dev(out).address();
        if (w.type() == GGMLType.F32) {
            slabGemm(blas, axpy, Cublas.DataType.R_32F, rows, cols, tokens, 0, rows, wAt, CudaBackend.dev(x).address(), outAt, 0f);
            return;
        }
        long scratch = axpy ? GpuBackend.axpyGemmScratchBytes(w.type(), rows, cols, tokens) : GpuBackend.gemmScratchBytes(w.type(), rows, cols, tokens, split);
        Inputs in = inputs(s, x, inLen, tokens, scratch, split);
        boolean half = w.type() == GGMLType.F16;   // used in place, exact in F16 already: hi·hi + hi·lo
        int per = half ? rows : GpuBackend.gemmSlabRows(rows, cols);
        long rowBytes = w.type().byteSize(cols);
        for (int r0 = 0; r0 < rows; r0 += per) {
            int m = Math.min(per, rows - r0);
            long[] slab = half ? new long[] {wAt, 0} : dequantize(s, w.type(), wAt + r0 * rowBytes, in, m, cols, per);
            float first = axpy && r0 > 0 ? 1f : 0f;   // the axpy's slabs add up into y; matMul's fill their own rows
            slabGemm(blas, axpy, Cublas.DataType.R_16F, rows, cols, tokens, r0, m, slab[0], in.hi, outAt, first);
            if (in.lo != 0) {
                slabGemm(blas, axpy, Cublas.DataType.R_16F, rows, cols, tokens, r0, m, slab[0], in.lo, outAt, 1f);
                if (slab[1] != 0) slabGemm(blas, axpy, Cublas.DataType.R_16F, rows, cols, tokens, r0, m, slab[1], in.hi, outAt, 1f);
            }
        }
        scaleRows(s, outAt, in.scales, outLen, tokens);
    }

    /**
     * One slab's GEMM, F32 accumulation and output: W's rows [r0, r0 + m) at {@code a} (row-major, cols wide, of
     * {@code type}) against the inputs at {@code b} (the whole batch; the axpy takes the slab's rows of it).
     */
    private static void slabGemm(Cublas blas, boolean axpy, Cublas.DataType type, int rows, int cols, int tokens, int r0, int m, long a, long b, long c,
                                 float beta) {
        if (axpy) {
            long bytes = type == Cublas.DataType.R_32F ? 4 : 2;
            blas.gemmEx(Cublas.Op.N, Cublas.Op.N, cols, tokens, m, 1f, a, type, cols, b + bytes * r0, type, rows, beta, c, Cublas.DataType.R_32F, cols,
                    Cublas.ComputeType.COMPUTE_32F);
        } else {
            blas.gemmEx(Cublas.Op.T, Cublas.Op.N, m, tokens, cols, 1f, a, type, cols, b, type, cols, beta, c + 4L * r0, Cublas.DataType.R_32F, rows,
                    Cublas.ComputeType.COMPUTE_32F);
        }
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
}
