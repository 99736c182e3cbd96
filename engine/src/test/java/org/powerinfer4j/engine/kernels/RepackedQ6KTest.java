package org.powerinfer4j.engine.kernels;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Random;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;
import org.powerinfer4j.engine.tensor.GGMLType;
import org.powerinfer4j.engine.tensor.RepackedMatrix;
import org.powerinfer4j.engine.tensor.RepackedQ6K;
import org.powerinfer4j.engine.tensor.Tensor;

/**
 * Q6_K through the repacked layout, against ggml's Q6_K block layout as the scalar reference kernel reads it (itself
 * bit-exact against gguf-py; the repacked values are checked against gguf-py's dumps directly in
 * {@link DequantReferenceTest}): the same values bit for bit, one-row and four-row dots bit-identical to each other
 * and within float rounding of the exact product, and the batched product equal to one vector at a time.
 */
class RepackedQ6KTest {

    private static Tensor random(int n, int rows, Random r, Arena arena, boolean extreme) {
        return RepackedChecks.randomRepacked(GGMLType.Q6_K, n, rows, r, arena, extreme);
    }

    @Property(tries = 60)
    void dequantizedValuesAreQ6_KsBitForBit(@ForAll @IntRange(min = 1, max = 5) int superBlocks, @ForAll @IntRange(min = 1, max = 9) int rows,
                                            @ForAll boolean extreme, @ForAll long seed) {
        Random r = new Random(seed);
        int n = 256 * superBlocks;
        try (Arena arena = Arena.ofConfined()) {
            Tensor w = random(n, rows, r, arena, extreme);
            RepackedChecks.assertValuesBitExact(w, ((RepackedQ6K) w.repacked())::value);
        }
    }

    @Property(tries = 60)
    void dotsMatchTheExactProductAndFourRowsEqualOne(@ForAll @IntRange(min = 1, max = 5) int superBlocks, @ForAll @IntRange(min = 1, max = 3) int groups,
                                                     @ForAll long seed) {
        Random r = new Random(seed);
        int n = 256 * superBlocks, rows = 4 * groups;
        try (Arena arena = Arena.ofConfined()) {
            Tensor w = random(n, rows, r, arena, false);
            RepackedQ6K rep = ((RepackedQ6K) w.repacked());
            int xOff = r.nextInt(7);
            float[] x = QuantData.randomFloats(r, n + xOff);
            float[] xp = new float[n], xs = new float[RepackedQ6KKernels.offsetsLength(n)];
            RepackedQ6KKernels.prepare(rep, x, xOff, xp, xs);
            float[] lanes = new float[64];
            RepackedChecks.assertDotsAgreeAndMatchExact(w, x, xOff, new RepackedChecks.RowDots() {
                public float dot(int row) {
                    return RepackedQ6KKernels.dot(rep, row, xp, xs);
                }

                public void dot4(int row, float[] out, int o) {
                    RepackedQ6KKernels.dot4(rep, row, xp, xs, out, o, lanes);
                }
            }, row -> RepackedQ6KKernels.dotReference(rep, row, x, xOff));
        }
    }

    /** matVec through the repacked copy (row ranges starting anywhere, 1 or 2 threads) and matVecBatch, bit for bit one vector alone. */
    @Property(tries = 40)
    void matVecAndItsBatchUseTheRepackedCopyAlike(@ForAll @IntRange(min = 1, max = 3) int superBlocks, @ForAll @IntRange(min = 1, max = 70) int rows,
                                                   @ForAll @IntRange(min = 1, max = 6) int batch, @ForAll @IntRange(min = 1, max = 2) int threads,
                                                   @ForAll long seed) {
        Random r = new Random(seed);
        int n = 256 * superBlocks;
        long saved = MatrixOps.parallelThreshold;
        MatrixOps.parallelThreshold = 1;   // small matrices reach the pool's row shares too
        try (Arena arena = Arena.ofShared(); WorkerPool pool = new WorkerPool(threads)) {
            Tensor w = random(n, rows, r, arena, false);
            float[] x = QuantData.randomFloats(r, batch * n);
            float[] alone = RepackedChecks.assertBatchEqualsAlone(pool, w, x, batch);
            RepackedChecks.assertRangeEqualsWhole(pool, w, x, alone, r);
            if (RepackedQ6KKernels.SUPPORTED) {
                RepackedQ6K rep = ((RepackedQ6K) w.repacked());
                float[] xp = new float[n], xs = new float[RepackedQ6KKernels.offsetsLength(n)];
                RepackedQ6KKernels.prepare(rep, x, 0, xp, xs);
                for (int row = 0; row < rows; row++)
                    assertThat(alone[row]).as("matVec reads the repacked copy, row %d", row).isEqualTo(RepackedQ6KKernels.dot(rep, row, xp, xs));
            }
        } finally {
            MatrixOps.parallelThreshold = saved;
        }
    }

    @Test
    void shapesQ6_KCannotHoldAreRefused() {
        try (Arena arena = Arena.ofConfined()) {
            assertThatThrownBy(() -> RepackedQ6K.allocate(arena, 100, 4)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("multiple of 256");
            RepackedMatrix m = RepackedMatrix.allocate(arena, GGMLType.Q6_K, 256, 3);
            assertThat(m).isInstanceOf(RepackedQ6K.class);
            Tensor q4 = new Tensor("q4", GGMLType.Q4_0, new long[] {256, 3}, arena.allocate(GGMLType.Q4_0.byteSize(768)));
            assertThatThrownBy(() -> m.repackRows(q4, 0, 3)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("cannot repack q4");
        }
    }
}
