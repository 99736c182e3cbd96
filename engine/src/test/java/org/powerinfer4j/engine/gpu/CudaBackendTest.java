package org.powerinfer4j.engine.gpu;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.util.Random;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.powerinfer4j.bindings.cublas.Cublas;
import org.powerinfer4j.engine.tensor.GGMLType;

/** The contract on a real GPU through the PTX kernels; skipped where CUDA is unavailable. */
@Tag("gpu")
class CudaBackendTest extends GpuBackendContract {
    @Override
    protected GpuBackend open() {
        assumeTrue(CudaBackend.isAvailable(), CudaBackend.unavailableReason());
        GpuBackend b = CudaBackend.open(0);
        System.out.println("GPU backend: " + b.name());
        return b;
    }

    /** Hot counts far from multiples of 256 and rows beyond 65535 (the gridDim.y limit PowerInfer's kernels have). */
    @Test
    void largeAndOddRowCounts() {
        Random rnd = new Random(30);
        int rows = 70_001, cols = 64;
        try (java.lang.foreign.Arena a = java.lang.foreign.Arena.ofConfined()) {
            var w = TestWeights.random("w", GGMLType.Q8_0, rows, cols, rnd, a);
            float[] x = TestWeights.floats(rnd, cols, 0f);
            GpuMatrix m = gpu.uploadMatrix(s, w);
            try (GpuBuffer xb = gpu.uploadFloats(s, x); GpuBuffer out = gpu.allocate(4L * rows)) {
                gpu.matVec(s, m, xb, out, false);
                float[] got = gpu.downloadFloats(s, out, 0, rows);
                for (int r : new int[] {0, 255, 256, 65535, 65536, rows - 1}) {
                    float[] row = TestWeights.row(w, r);
                    double d = 0, mag = 0;
                    for (int c = 0; c < cols; c++) {
                        d += (double) row[c] * x[c];
                        mag += Math.abs((double) row[c] * x[c]);
                    }
                    assertThat((double) got[r]).as("row %d", r).isCloseTo(d, org.assertj.core.data.Offset.offset(1e-4 * mag + 1e-5));
                }
            } finally {
                m.data().close();
            }
        }
    }

    /** F16 conversion kernels round-trip, and cuBLAS is usable in the backend's context. */
    @Test
    void halfConversionAndCublasInTheSameContext() {
        CudaBackend cuda = (CudaBackend) gpu;
        float[] v = {0f, 1f, -2.5f, 65504f, 1e-8f, 0.1f};
        try (GpuBuffer f = gpu.uploadFloats(s, v); GpuBuffer h = gpu.allocate(2L * v.length); GpuBuffer back = gpu.allocate(4L * v.length)) {
            cuda.toHalf(s, f, h, v.length);
            cuda.fromHalf(s, h, back, v.length);
            float[] got = gpu.downloadFloats(s, back, 0, v.length);
            for (int i = 0; i < v.length; i++) assertThat(got[i]).isEqualTo(Float.float16ToFloat(Float.floatToFloat16(v[i])));
        }
        if (Cublas.available()) {
            try (Cublas blas = Cublas.create(cuda.context())) {
                assertThat(blas.version()).isPositive();
            }
        }
    }
}
