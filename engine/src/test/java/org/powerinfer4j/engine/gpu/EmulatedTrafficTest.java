package org.powerinfer4j.engine.gpu;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.ValueLayout;
import java.util.Random;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.powerinfer4j.engine.tensor.GGMLType;
import org.powerinfer4j.engine.tensor.Tensor;

/**
 * What the sparse kernels read, counted by cuda-emu (every {@code __ldg} of the kernels): the predictor's mask must
 * cut the weight traffic of the row-sparse mat-vec in proportion (inactive rows are skipped before any weight byte
 * is read), and zero activations must cut the sparse axpy's. On a GPU that traffic is the decode time.
 */
@Tag("gpu")
class EmulatedTrafficTest {
    @ParameterizedTest
    @EnumSource(value = GGMLType.class, names = {"F16", "Q8_0", "Q4_0"})
    void sparseOperatorsReadOnlyActiveRows(GGMLType t) throws Throwable {
        assumeTrue(CudaEmu.loaded(), "needs the emulator's load counter");
        int rows = 2048, cols = 512;
        double density = 0.1;
        Random rnd = new Random(40 + t.ordinal());
        try (CudaBackend gpu = CudaBackend.open(0); GpuStream s = gpu.createStream(); Arena arena = Arena.ofConfined()) {
            Tensor w = TestWeights.random("w", t, rows, cols, rnd, arena);
            long weightBytes = t.byteSize((long) rows * cols);
            byte[] mask = new byte[rows];
            float[] h = new float[rows];
            int active = 0;
            for (int r = 0; r < rows; r++) {
                if (rnd.nextDouble() < density) {
                    mask[r] = 1;
                    h[r] = 1f + rnd.nextFloat();
                    active++;
                }
            }
            GpuMatrix m = gpu.uploadMatrix(s, w);
            try (GpuBuffer x = gpu.uploadFloats(s, TestWeights.floats(rnd, cols, 0f)); GpuBuffer out = gpu.allocate(4L * rows);
                 GpuBuffer mb = gpu.allocate(rows); GpuBuffer hb = gpu.uploadFloats(s, h); GpuBuffer y = gpu.allocate(4L * cols)) {
                gpu.upload(s, arena.allocateFrom(ValueLayout.JAVA_BYTE, mask), mb, 0);
                gpu.synchronize(s);

                long b0 = CudaEmu.loadedBytes();
                gpu.matVec(s, m, x, out, false);
                gpu.synchronize(s);
                long dense = CudaEmu.loadedBytes() - b0;
                b0 = CudaEmu.loadedBytes();
                gpu.rowSparseMatVec(s, m, x, mb, null, out);
                gpu.synchronize(s);
                long sparse = CudaEmu.loadedBytes() - b0;
                // dense reads every weight byte (plus x); sparse reads the mask and the active rows (plus x for them)
                assertThat(dense).isGreaterThanOrEqualTo(weightBytes);
                double share = (double) active / rows;
                assertThat((double) sparse / dense).as("%s mat-vec: traffic share at %.0f%% active rows", t, 100 * share)
                        .isBetween(share * 0.8, share * 1.3 + (double) rows / dense);

                // down_t as rows of the same matrix: rows whose activation is zero are skipped by the axpy
                // (compared with every activation non-zero: the counter counts each thread's loads, not DRAM sectors)
                float[] all = new float[rows];
                java.util.Arrays.fill(all, 0.5f);
                try (GpuBuffer allb = gpu.uploadFloats(s, all)) {
                    gpu.synchronize(s);
                    b0 = CudaEmu.loadedBytes();
                    gpu.sparseAxpy(s, m, allb, y, false);
                    gpu.synchronize(s);
                    long full = CudaEmu.loadedBytes() - b0;
                    b0 = CudaEmu.loadedBytes();
                    gpu.sparseAxpy(s, m, hb, y, false);
                    gpu.synchronize(s);
                    long axpy = CudaEmu.loadedBytes() - b0;
                    assertThat((double) axpy / full).as("%s axpy: traffic share at %.0f%% non-zero activations", t, 100 * share)
                            .isBetween(share * 0.8, share * 1.3 + 4.0 * rows / full);
                }
            } finally {
                m.data().close();
            }
        }
    }
}
