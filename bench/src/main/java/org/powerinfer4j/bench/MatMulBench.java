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
import org.powerinfer4j.engine.kernels.MatrixOps;
import org.powerinfer4j.engine.kernels.WorkerPool;

/** Prefill path: matMul of a cols × rows weight matrix with a batch of activations; {@code gflops} is GFLOP/s (2·rows·cols·batch per op). */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 2, time = 2)
@Measurement(iterations = 3, time = 2)
@Fork(value = 1, jvmArgsAppend = {"--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED", "-Xmx2g"})
public class MatMulBench {

    @Param({"Q8_0", "Q4_0", "Q4_0_REPACKED", "Q4_K", "Q6_K", "F16", "F32"})
    public String type;

    @Param({"1", "2"})
    public int threads;

    @Param({"128"})
    public int batch;

    @Param({"4096"})
    public int cols;

    @Param({"1024"})
    public int rows;

    private Arena arena;
    private WeightData weights;
    private WorkerPool pool;
    private float[] x, out;

    @State(Scope.Thread)
    @AuxCounters(AuxCounters.Type.OPERATIONS)
    public static class Flops {
        public double gflops;
    }

    @Setup(Level.Trial)
    public void setup() {
        arena = Arena.ofShared();
        weights = WeightData.forParam(arena, type, cols, rows, 0, 42);
        pool = new WorkerPool(threads);
        x = WeightData.randomFloats(batch * cols, 1);
        out = new float[batch * rows];
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        pool.close();
        arena.close();
    }

    @Benchmark
    public float matMul(Flops flops) {
        MatrixOps.matMul(pool, weights.copies[0], x, batch, out);
        flops.gflops += 2e-9 * rows * cols * batch;
        return out[0];
    }

    /** The batched decode pass's route on repacked Q4 (and exact mode's everywhere): fused per-vector dots, weights read once for the batch. */
    @Benchmark
    public float matVecBatch(Flops flops) {
        MatrixOps.matVecBatch(pool, weights.copies[0], x, batch, out);
        flops.gflops += 2e-9 * rows * cols * batch;
        return out[0];
    }
}
