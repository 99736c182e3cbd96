package org.powerinfer4j.bindings.cublas;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Random;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.powerinfer4j.bindings.cuda.Cuda;
import org.powerinfer4j.bindings.cuda.CudaContext;
import org.powerinfer4j.bindings.cuda.CudaStream;
import org.powerinfer4j.bindings.cuda.DeviceBuffer;

/** y = W·x for a row-major W through cuBLAS (the layout trick documented on {@link Cublas}); skipped without a GPU. */
@Tag("gpu")
class CublasGpuTest {
    @Test
    void gemmExMatchesCpuForF32AndF16() {
        assumeTrue(Cublas.available(), Cublas.unavailableReason());
        int rows = 96, cols = 80, batch = 3;
        Random rnd = new Random(1);
        float[] w = new float[rows * cols], x = new float[batch * cols];
        for (int i = 0; i < w.length; i++) w[i] = Float.float16ToFloat(Float.floatToFloat16(rnd.nextFloat() - 0.5f));
        for (int i = 0; i < x.length; i++) x[i] = Float.float16ToFloat(Float.floatToFloat16(rnd.nextFloat() - 0.5f));
        double[] ref = new double[batch * rows];
        for (int b = 0; b < batch; b++)
            for (int r = 0; r < rows; r++) {
                double s = 0;
                for (int c = 0; c < cols; c++) s += (double) w[r * cols + c] * x[b * cols + c];
                ref[b * rows + r] = s;
            }
        try (CudaContext ctx = Cuda.device(0).retainPrimaryContext(); CudaStream s = ctx.createStream(); Cublas blas = Cublas.create(ctx);
             Arena a = Arena.ofConfined()) {
            blas.setStream(s);
            blas.setMathMode(Cublas.MathMode.DEFAULT);
            System.out.println("cuBLAS version " + blas.version());
            for (Cublas.DataType t : new Cublas.DataType[] {Cublas.DataType.R_32F, Cublas.DataType.R_16F}) {
                int es = t == Cublas.DataType.R_32F ? 4 : 2;
                MemorySegment hw = a.allocate((long) es * w.length), hx = a.allocate((long) es * x.length), hy = a.allocate(4L * batch * rows);
                for (int i = 0; i < w.length; i++) put(hw, t, i, w[i]);
                for (int i = 0; i < x.length; i++) put(hx, t, i, x[i]);
                try (DeviceBuffer dw = ctx.allocate(hw.byteSize()); DeviceBuffer dx = ctx.allocate(hx.byteSize()); DeviceBuffer dy = ctx.allocate(hy.byteSize())) {
                    dw.copyFromHost(hw, 0, s);
                    dx.copyFromHost(hx, 0, s);
                    blas.gemmEx(Cublas.Op.T, Cublas.Op.N, rows, batch, cols, 1f, dw.address(), t, cols, dx.address(), t, cols, 0f,
                            dy.address(), Cublas.DataType.R_32F, rows, Cublas.ComputeType.COMPUTE_32F);
                    dy.copyToHost(0, hy, s);
                    s.synchronize();
                    for (int i = 0; i < ref.length; i++) assertThat((double) hy.getAtIndex(ValueLayout.JAVA_FLOAT, i)).as(t + " " + i).isCloseTo(ref[i], org.assertj.core.data.Offset.offset(1e-3));
                    // the same three products as a strided batch of matrix-vector products
                    dy.fill(0, s);
                    blas.gemmStridedBatchedEx(Cublas.Op.T, Cublas.Op.N, rows, 1, cols, 1f, dw.address(), t, cols, 0, dx.address(), t, cols, cols,
                            0f, dy.address(), Cublas.DataType.R_32F, rows, rows, batch, Cublas.ComputeType.COMPUTE_32F);
                    dy.copyToHost(0, hy, s);
                    s.synchronize();
                    for (int i = 0; i < ref.length; i++) assertThat((double) hy.getAtIndex(ValueLayout.JAVA_FLOAT, i)).isCloseTo(ref[i], org.assertj.core.data.Offset.offset(1e-3));
                }
            }
        }
    }

    private static void put(MemorySegment m, Cublas.DataType t, int i, float v) {
        if (t == Cublas.DataType.R_32F) m.setAtIndex(ValueLayout.JAVA_FLOAT, i, v);
        else m.setAtIndex(ValueLayout.JAVA_SHORT, i, Float.floatToFloat16(v));
    }
}
