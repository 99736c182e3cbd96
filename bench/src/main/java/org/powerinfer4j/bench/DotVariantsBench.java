package org.powerinfer4j.bench;

import java.lang.foreign.Arena;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.AuxCounters;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.powerinfer4j.engine.kernels.Kernels;
import org.powerinfer4j.engine.kernels.Q8Activations;
import org.powerinfer4j.engine.kernels.RowKernel;
import org.powerinfer4j.engine.tensor.GGMLType;
import org.powerinfer4j.engine.tensor.Tensor;

/**
 * Q8_0 weights · activations, single thread, on a matrix that fits in L2 (so the kernel's compute rate is
 * measured, not DRAM): float activations (bytes widened to floats, FMA) vs activations quantized to Q8 with
 * integer products ({@link Q8Activations}, quantization included in each op as llama.cpp does per matVec).
 * {@code gweights} is 10^9 weights per second.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 2, time = 1)
@Measurement(iterations = 3, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED", "-Xmx1g"})
public class DotVariantsBench {

    @Param({"4096"})
    public int cols;

    @Param({"256"})
    public int rows;

    private Arena arena;
    private Tensor w;
    private float[] x, out;
    private RowKernel kernel;

    @State(Scope.Thread)
    @AuxCounters(AuxCounters.Type.OPERATIONS)
    public static class Weights {
        public double gweights;
    }

    @Setup(Level.Trial)
    public void setup() {
        arena = Arena.ofShared();
        w = new WeightData(arena, GGMLType.Q8_0, cols, rows, 0, 3).copies[0];
        x = WeightData.randomFloats(cols, 4);
        out = new float[rows];
        kernel = Kernels.forType(GGMLType.Q8_0);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        arena.close();
    }

    @Benchmark
    public float floatActivations(Weights c) {
        long rb = w.rowBytes();
        for (int r = 0; r < rows; r++) out[r] = kernel.dot(w.data(), r * rb, x, 0, cols);
        c.gweights += 1e-9 * rows * cols;
        return out[0];
    }

    @Benchmark
    public float q8Activations(Weights c) {
        long rb = w.rowBytes();
        Q8Activations a = Q8Activations.quantize(x, 0, cols);
        for (int r = 0; r < rows; r++) out[r] = Q8Activations.dotQ8_0(w.data(), r * rb, a, cols);
        c.gweights += 1e-9 * rows * cols;
        return out[0];
    }
}
