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
import org.powerinfer4j.engine.kernels.Simd;
import org.powerinfer4j.engine.kernels.WorkerPool;

/**
 * Decode path: one matVec of a cols × rows weight matrix per op, rotating over copies spanning 256 MiB so the
 * weights come from DRAM. The {@code gbps} line is weight bytes streamed per second in GB (10^9 B), the number
 * to compare with {@link BandwidthProbe}.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 2, time = 1)
@Measurement(iterations = 3, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED", "-Xmx2g"})
public class MatVecBench {

    @Param({"Q8_0", "Q8_0_REPACKED", "Q4_0", "Q4_0_REPACKED", "Q4_1", "Q4_K", "Q4_K_REPACKED", "Q5_K", "Q5_K_REPACKED", "Q6_K", "Q6_K_REPACKED", "F16", "BF16", "F32"})
    public String type;

    @Param({"1", "2"})
    public int threads;

    @Param({"4096"})
    public int cols;

    @Param({"4096"})
    public int rows;

    /** MiB the rotated copies span at least: the default streams from DRAM; 0 keeps one copy (cache-resident when small). */
    @Param({"256"})
    public int workingSetMiB;

    private Arena arena;
    private WeightData weights;
    private WorkerPool pool;
    private float[] x, out;
    private int next;

    /** Per-op counters JMH reports as rates: {@code gbps} is GB of weights per second. */
    @State(Scope.Thread)
    @AuxCounters(AuxCounters.Type.OPERATIONS)
    public static class Traffic {
        public double gbps;
    }

    @Setup(Level.Trial)
    public void setup() {
        arena = Arena.ofShared();
        weights = WeightData.forParam(arena, type, cols, rows, (long) workingSetMiB << 20, 42);
        pool = new WorkerPool(threads);
        x = WeightData.randomFloats(cols, 1);
        out = new float[rows];
        System.out.println("# " + Simd.describe() + ", " + weights.copies.length + " copies of " + weights.matrixBytes + " bytes");
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        pool.close();
        arena.close();
    }

    @Benchmark
    public float matVec(Traffic traffic) {
        MatrixOps.matVec(pool, weights.copies[next], x, 0, out, 0);
        if (++next == weights.copies.length) next = 0;
        traffic.gbps += weights.streamedBytes() * 1e-9;
        return out[0];
    }
}
