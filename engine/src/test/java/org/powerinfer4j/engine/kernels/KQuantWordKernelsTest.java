package org.powerinfer4j.engine.kernels;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Random;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.assertj.core.data.Offset;
import org.powerinfer4j.engine.tensor.GGMLType;
import org.powerinfer4j.engine.tensor.Tensor;

/**
 * The word-order Q4_K/Q5_K/Q6_K decode kernels against the scalar reference dots (written like ggml's dequantize, and
 * themselves checked bit for bit against gguf-py's dequantization): within the float rounding budget of two
 * summation orders, for random blocks (extreme scales included), row lengths and activation offsets, at whatever
 * vector width this run uses (the build runs the kernel tests at 512 and 256 bits). Also through
 * {@link MatrixOps#matVec} on several threads, which must give each row the single-row kernel's bits.
 */
class KQuantWordKernelsTest {
    private static final GGMLType[] TYPES = {GGMLType.Q4_K, GGMLType.Q5_K, GGMLType.Q6_K};

    @Property(tries = 120)
    void dotsMatchTheScalarReference(@ForAll @IntRange(min = 1, max = 12) int superBlocks, @ForAll @IntRange(min = 0, max = 2) int kind,
                                     @ForAll boolean extreme, @ForAll long seed) {
        if (!KQuantWordKernels.SUPPORTED) return;   // scalar or 128-bit run: matVec uses the block kernels
        GGMLType t = TYPES[kind];
        Random r = new Random(seed);
        int n = 256 * superBlocks, rows = 3;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = arena.allocate(t.byteSize((long) n * rows));
            QuantData.fill(t, r, s, 0, n * rows, extreme);
            int xOff = r.nextInt(5);
            float[] x = QuantData.randomFloats(r, n + xOff);
            float[] xp = new float[n], xs = new float[KQuantWordKernels.offsetsLength(n)];
            KQuantWordKernels.prepare(t, x, xOff, n, xp, xs);
            long rowBytes = t.byteSize(n);
            for (int row = 0; row < rows; row++) {
                float got = KQuantWordKernels.dot(t, s, row * rowBytes, n, xp, xs, KQuantWordKernels.scalesScratch());
                float ref = Kernels.scalar(t).dot(s, row * rowBytes, x, xOff, n);
                double tol = QuantData.dotTolerance(t, s, row * rowBytes, x, xOff, n);
                if (Float.isFinite(ref)) assertThat((double) got).as("%s row %d", t, row).isCloseTo(ref, Offset.offset(tol));
            }
        }
    }

    @Property(tries = 20)
    void matVecOnAPoolGivesEachRowTheKernelsBits(@ForAll @IntRange(min = 1, max = 4) int superBlocks, @ForAll @IntRange(min = 0, max = 2) int kind,
                                                 @ForAll @IntRange(min = 1, max = 70) int rows, @ForAll long seed) {
        if (!KQuantWordKernels.SUPPORTED) return;   // scalar or 128-bit run: matVec uses the block kernels
        GGMLType t = TYPES[kind];
        Random r = new Random(seed);
        int n = 256 * superBlocks;
        long saved = MatrixOps.parallelThreshold;
        MatrixOps.parallelThreshold = 0;     // force the pool even for small products
        try (Arena arena = Arena.ofShared(); WorkerPool pool = new WorkerPool(3)) {
            MemorySegment s = arena.allocate(t.byteSize((long) n * rows));
            QuantData.fill(t, r, s, 0, n * rows, false);
            Tensor w = new Tensor("w", t, new long[] {n, rows}, s);
            float[] x = QuantData.randomFloats(r, n), out = new float[rows + 2];
            MatrixOps.matVec(pool, w, x, 0, out, 1);
            float[] xp = new float[n], xs = new float[KQuantWordKernels.offsetsLength(n)];
            KQuantWordKernels.prepare(t, x, 0, n, xp, xs);
            for (int row = 0; row < rows; row++) {
                assertThat(out[1 + row]).isEqualTo(KQuantWordKernels.dot(t, s, w.rowOffset(row), n, xp, xs, KQuantWordKernels.scalesScratch()));
            }
        } finally {
            MatrixOps.parallelThreshold = saved;
        }
    }
}
