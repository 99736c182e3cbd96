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
import org.powerinfer4j.engine.tensor.RepackedQ8;
import org.powerinfer4j.engine.tensor.Tensor;

/**
 * Q8_0 through the repacked layout, against ggml's Q8_0 blocks as the scalar reference kernel reads them (itself
 * bit-exact against gguf-py; the repacked values are checked against gguf-py's dumps directly in
 * {@link DequantReferenceTest}): the same values bit for bit; one-row and four-row dots bit-identical to each other
 * and to the file layout's vector kernel, within float rounding of the exact product; the batched product equal to
 * one vector at a time.
 */
class RepackedQ8Test {

    private static Tensor random(int n, int rows, Random r, Arena arena, boolean extreme) {
        return RepackedChecks.randomRepacked(GGMLType.Q8_0, n, rows, r, arena, extreme);
    }

    @Property(tries = 60)
    void dequantizedValuesAreQ8_0sBitForBit(@ForAll @IntRange(min = 1, max = 12) int blocks, @ForAll @IntRange(min = 1, max = 9) int rows,
                                            @ForAll boolean extreme, @ForAll long seed) {
        Random r = new Random(seed);
        int n = 32 * blocks;
        try (Arena arena = Arena.ofConfined()) {
            Tensor w = random(n, rows, r, arena, extreme);
            RepackedChecks.assertValuesBitExact(w, ((RepackedQ8) w.repacked())::value);
        }
    }

    @Property(tries = 60)
    void dotsMatchTheExactProductAndFourRowsEqualOne(@ForAll @IntRange(min = 1, max = 12) int blocks, @ForAll @IntRange(min = 1, max = 3) int groups,
                                                     @ForAll long seed) {
        Random r = new Random(seed);
        int n = 32 * blocks, rows = 4 * groups;
        try (Arena arena = Arena.ofConfined()) {
            Tensor w = random(n, rows, r, arena, false);
            RepackedQ8 rep = ((RepackedQ8) w.repacked());
            int xOff = r.nextInt(7);
            float[] x = QuantData.randomFloats(r, n + xOff);
            float[] four = new float[rows];
            for (int g = 0; g < rows; g += 4) RepackedQ8Kernels.dot4(rep, g, x, xOff, four, g);
            for (int row = 0; row < rows; row++) {
                float one = RepackedQ8Kernels.dot(rep, row, x, xOff);
                assertThat(one).as("dot and dot4 agree bit for bit (row %d)", row).isEqualTo(four[row]);
                long off = w.rowOffset(row);
                if (Simd.ENABLED)
                    assertThat(one).as("the file layout's kernel, bit for bit (row %d)", row)
                            .isEqualTo(Kernels.forType(GGMLType.Q8_0).dot(w.data(), off, x, xOff, n));
                double exact = QuantData.exactDot(GGMLType.Q8_0, w.data(), off, x, xOff, n);
                var tol = org.assertj.core.data.Offset.offset(QuantData.dotTolerance(GGMLType.Q8_0, w.data(), off, x, xOff, n));
                assertThat((double) one).as("row %d", row).isCloseTo(exact, tol);
                assertThat((double) RepackedQ8Kernels.dotReference(rep, row, x, xOff)).isCloseTo(exact, tol);
            }
        }
    }

    /** matVec through the repacked copy (row ranges starting anywhere, 1 or 2 threads) and matVecBatch, bit for bit one vector alone. */
    @Property(tries = 40)
    void matVecAndItsBatchUseTheRepackedCopyAlike(@ForAll @IntRange(min = 1, max = 9) int blocks, @ForAll @IntRange(min = 1, max = 70) int rows,
                                                   @ForAll @IntRange(min = 1, max = 6) int batch, @ForAll @IntRange(min = 1, max = 2) int threads,
                                                   @ForAll long seed) {
        Random r = new Random(seed);
        int n = 32 * blocks;
        long saved = MatrixOps.parallelThreshold;
        MatrixOps.parallelThreshold = 1;   // small matrices reach the pool's row shares too
        try (Arena arena = Arena.ofShared(); WorkerPool pool = new WorkerPool(threads)) {
            Tensor w = random(n, rows, r, arena, false);
            float[] x = QuantData.randomFloats(r, batch * n);
            float[] alone = RepackedChecks.assertBatchEqualsAlone(pool, w, x, batch);
            RepackedChecks.assertRangeEqualsWhole(pool, w, x, alone, r);
            float[] file = new float[rows];
            MatrixOps.matVec(pool, w.withRepacked(null), x, 0, file, 0);   // the file's blocks alone
            for (int row = 0; row < rows; row++)
                assertThat(alone[row]).as("the same bits as the file's layout, row %d", row).isEqualTo(file[row]);
        } finally {
            MatrixOps.parallelThreshold = saved;
        }
    }

    @Test
    void shapesQ8_0CannotHoldAreRefused() {
        try (Arena arena = Arena.ofConfined()) {
            assertThatThrownBy(() -> RepackedQ8.allocate(arena, 100, 4)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("multiple of 32");
            RepackedMatrix m = RepackedMatrix.allocate(arena, GGMLType.Q8_0, 256, 3);
            assertThat(m).isInstanceOf(RepackedQ8.class);
            Tensor q4 = new Tensor("q4", GGMLType.Q4_0, new long[] {256, 3}, arena.allocate(GGMLType.Q4_0.byteSize(768)));
            assertThatThrownBy(() -> m.repackRows(q4, 0, 3)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("cannot repack q4");
        }
    }
}
