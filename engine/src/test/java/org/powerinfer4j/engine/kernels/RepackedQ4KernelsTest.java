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
import org.powerinfer4j.engine.tensor.RepackedQ4;
import org.powerinfer4j.engine.tensor.Tensor;

/**
 * The repacked Q4_0 layout and its kernels against ggml's Q4_0 block layout (the scalar reference kernel that is
 * itself checked bit for bit against gguf-py): same quants and scales, same dequantized values, and dot products
 * within float rounding of the reference.
 */
class RepackedQ4KernelsTest {

    private record Pair(Tensor q4, RepackedQ4 rep) {}

    private static Pair random(int n, int rows, Random r, Arena arena) {
        MemorySegment seg = arena.allocate(GGMLType.Q4_0.byteSize((long) n * rows));
        QuantData.fill(GGMLType.Q4_0, r, seg, 0, n * rows, false);
        Tensor t = new Tensor("w", GGMLType.Q4_0, new long[] {n, rows}, seg);
        RepackedQ4 rep = RepackedQ4.allocate(arena, n, rows);
        // two calls over a split, as the model's parallel repack does
        int mid = r.nextInt(rows + 1) / 4 * 4;
        rep.repackRows(t, 0, mid);
        rep.repackRows(t, mid, rows);
        return new Pair(t, rep);
    }

    @Property(tries = 80)
    void dequantizedValuesAreQ4_0sBitForBitInPermutedOrder(@ForAll @IntRange(min = 1, max = 24) int blocks,
                                                            @ForAll @IntRange(min = 1, max = 9) int rows, @ForAll long seed) {
        Random r = new Random(seed);
        int n = 32 * blocks;
        try (Arena arena = Arena.ofConfined()) {
            Pair p = random(n, rows, r, arena);
            int np = p.rep().paddedLength();
            float[] ref = new float[n], vec = new float[np], scalar = new float[np];
            for (int row = 0; row < rows; row++) {
                Kernels.scalar(GGMLType.Q4_0).dequantize(p.q4().data(), p.q4().rowOffset(row), ref, 0, n);
                RepackedQ4Kernels.dequantizePermuted(p.rep(), row, vec, 0);
                RepackedQ4Kernels.dequantizePermutedScalar(p.rep(), row, scalar, 0);
                for (int col = 0; col < np; col++) {
                    int at = RepackedQ4.permutedIndex(col);
                    float expected = col < n ? ref[col] : -0f;     // padding: quant 0, scale 0 → (0 − 8)·0
                    assertThat(vec[at]).as("row %d col %d", row, col).isEqualTo(expected);
                    assertThat(scalar[at]).isEqualTo(expected);
                }
            }
        }
    }

    @Property(tries = 80)
    void dotsMatchTheQ4_0ReferenceAndFourRowsEqualOne(@ForAll @IntRange(min = 1, max = 24) int blocks,
                                                       @ForAll @IntRange(min = 1, max = 3) int groups, @ForAll long seed) {
        Random r = new Random(seed);
        int n = 32 * blocks, rows = 4 * groups;
        try (Arena arena = Arena.ofConfined()) {
            Pair p = random(n, rows, r, arena);
            int xOff = r.nextInt(7);
            float[] x = QuantData.randomFloats(r, n + xOff);
            int np = p.rep().paddedLength();
            float[] xp = new float[np + 3], xs8 = new float[np / 8];
            RepackedQ4Kernels.permuteForDot(x, xOff, n, xp, xs8);
            float[] four = new float[rows], lanes = new float[64];
            for (int g = 0; g < rows; g += 4) RepackedQ4Kernels.dot4(p.rep(), g, xp, xs8, four, g, lanes);
            float[] w = new float[n];
            for (int row = 0; row < rows; row++) {
                float one = RepackedQ4Kernels.dot(p.rep(), row, xp, xs8);
                assertThat(one).as("dot and dot4 agree bit for bit (row %d)", row).isEqualTo(four[row]);
                float ref = Kernels.scalar(GGMLType.Q4_0).dot(p.q4().data(), p.q4().rowOffset(row), x, xOff, n);
                Kernels.scalar(GGMLType.Q4_0).dequantize(p.q4().data(), p.q4().rowOffset(row), w, 0, n);
                // the kernel sums raw quants (0..15) and subtracts 8·Σx: rounding scales with 16·d·|x|, not |w·x|
                double mag = 0, d = maxScale(p.q4(), row, n);
                for (int i = 0; i < n; i++) mag += Math.abs(x[xOff + i]) * (Math.abs(w[i]) + 16 * d);
                var tol = org.assertj.core.data.Offset.offset(2.0 * (n + 16) * 0x1p-24 * mag + Float.MIN_NORMAL);
                assertThat((double) one).isCloseTo(ref, tol);
                assertThat((double) RepackedQ4Kernels.dotReference(p.rep(), row, x, xOff)).isCloseTo(ref, tol);
            }
        }
    }

    private static double maxScale(Tensor t, int row, int n) {
        double m = 0;
        for (int b = 0; b < n / 32; b++) m = Math.max(m, Math.abs(Float.float16ToFloat(t.data().get(
                java.lang.foreign.ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(java.nio.ByteOrder.LITTLE_ENDIAN), t.rowOffset(row) + 18L * b))));
        return m;
    }

    @Test
    void permuteWritesEveryColumnOnceAndPadsWithZeros() {
        int n = 160, np = RepackedQ4.paddedLength(n);
        assertThat(np).isEqualTo(256);
        float[] x = new float[n];
        for (int i = 0; i < n; i++) x[i] = i + 1;
        float[] xp = new float[np], xs8 = new float[np / 8];
        RepackedQ4.permute(x, 0, n, xp, 0, xs8);
        boolean[] seen = new boolean[np];
        for (int col = 0; col < np; col++) {
            int at = RepackedQ4.permutedIndex(col);
            assertThat(seen[at]).isFalse();
            seen[at] = true;
            assertThat(xp[at]).isEqualTo(col < n ? col + 1f : 0f);
        }
        // word 0 of chunk 0 multiplies columns 0..7: −8·(1+…+8)
        assertThat(xs8[0]).isEqualTo(-8f * 36);
        assertThat(xs8[np / 8 - 1]).isZero();
    }

    @Test
    void rejectsMismatchedShapesAndMisalignedFourRowCalls() {
        try (Arena arena = Arena.ofConfined()) {
            Pair p = random(64, 8, new Random(3), arena);
            RepackedQ4 other = RepackedQ4.allocate(arena, 96, 8);
            assertThatThrownBy(() -> other.repackRows(p.q4(), 0, 8)).isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> RepackedQ4.allocate(arena, 48, 2)).isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> new Tensor("w", GGMLType.Q8_0, new long[] {64, 8}, p.q4().data(), p.rep()))
                    .isInstanceOf(IllegalArgumentException.class);
            float[] xp = new float[128], xs8 = new float[16];
            assertThatThrownBy(() -> RepackedQ4Kernels.dot4(p.rep(), 2, xp, xs8, new float[8], 0, new float[64]))
                    .isInstanceOf(IllegalArgumentException.class);
        }
    }
}
