package org.powerinfer4j.engine.gpu;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.util.Random;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.powerinfer4j.bindings.cublas.Cublas;
import org.powerinfer4j.engine.tensor.GGMLType;

/** The prompt-batch contract through the PTX kernels and cuBLAS; skipped where CUDA is unavailable. */
@Tag("gpu")
class CudaPrefillTest extends GpuPrefillContract {
    @Override
    protected GpuBackend open() {
        assumeTrue(CudaBackend.isAvailable(), CudaBackend.unavailableReason());
        assumeTrue(Cublas.available(), Cublas.unavailableReason());
        return CudaBackend.open(0);
    }

    /**
     * From the GEMM threshold on, weights and inputs are rounded to F16 (2⁻¹¹ relative each) before the F32
     * accumulation, so a product is off by up to about 2·2⁻¹¹ of Σ|terms|; below it the mat-vecs' float sums.
     */
    @Override
    protected double gemmTolerance(GGMLType t, int tokens) {
        if (tokens < GpuBackend.gemmFrom() || t == GGMLType.F32) return 1e-4;
        return t == GGMLType.F16 ? 6e-4 : 1.1e-3;
    }

    /** The per-query attention kernel ({@code -Dpowerinfer4j.gpu.attention=rows}, the tiled one's comparison) passes the same cases. */
    @Test
    void perQueryCausalAttentionIsEachTokensAttentionOverItsPrefix() {
        String key = "powerinfer4j.gpu.attention";
        System.setProperty(key, "rows");
        try {
            causalAttentionCases(new Random(43), 8, 2, 24);
        } finally {
            System.clearProperty(key);
        }
    }

    /** Split precision (hi + lo F16 parts, three GEMMs) holds the operands to about 22 bits: float-sum accuracy. */
    @Test
    void splitPrecisionGemmsAreAsCloseAsFloatSums() {
        String key = "powerinfer4j.gpu.gemm";
        System.setProperty(key, "split");
        try {
            Random rnd = new Random(44);
            for (GGMLType t : new GGMLType[] {GGMLType.F16, GGMLType.Q8_0, GGMLType.Q4_0, GGMLType.Q4_K, GGMLType.Q5_K, GGMLType.Q6_K}) {
                int cols = t.blockSize == 256 ? 512 : 96;
                matMulCase(TestWeights.random("w", t, 37, cols, rnd, arena), 12, rnd, t + " split", 2e-5);
            }
        } finally {
            System.clearProperty(key);
        }
    }
}
