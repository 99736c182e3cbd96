package org.powerinfer4j.engine.kernels;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Random;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.powerinfer4j.engine.tensor.GGMLType;
import org.powerinfer4j.engine.tensor.RepackedQ4;
import org.powerinfer4j.engine.tensor.Tensor;

/**
 * Q4_K through the repacked layout, against ggml's Q4_K block layout as the scalar reference kernel reads it
 * (itself bit-exact against gguf-py, and the repacked dequantization is checked against gguf-py's dumps directly
 * in {@link DequantReferenceTest}): the same values bit for bit, one-row and four-row dots bit-identical to each
 * other and within float rounding of the reference.
 */
class RepackedQ4KTest {

    private record Pair(Tensor q4k, RepackedQ4 rep) {}

    private static Pair random(int n, int rows, Random r, Arena arena) {
        MemorySegment seg = arena.allocate(GGMLType.Q4_K.byteSize((long) n * rows));
        QuantData.fill(GGMLType.Q4_K, r, seg, 0, n * rows, false);
        Tensor t = new Tensor("w", GGMLType.Q4_K, new long[] {n, rows}, seg);
        RepackedQ4 rep = RepackedQ4.allocate(arena, GGMLType.Q4_K, n, rows);
        int mid = r.nextInt(rows + 1) / 4 * 4;
        rep.repackRows(t, 0, mid);
        rep.repackRows(t, mid, rows);
        return new Pair(t, rep.mins() ? rep : null);
    }

    @Property(tries = 60)
    void dequantizedValuesAreQ4_KsBitForBit(@ForAll @IntRange(min = 1, max = 6) int superBlocks, @ForAll @IntRange(min = 1, max = 9) int rows,
                                            @ForAll long seed) {
        Random r = new Random(seed);
        int n = 256 * superBlocks;
        try (Arena arena = Arena.ofConfined()) {
            Pair p = random(n, rows, r, arena);
            float[] ref = new float[n], vec = new float[n], scalar = new float[n];
            for (int row = 0; row < rows; row++) {
                Kernels.scalar(GGMLType.Q4_K).dequantize(p.q4k().data(), p.q4k().rowOffset(row), ref, 0, n);
                RepackedQ4Kernels.dequantizePermuted(p.rep(), row, vec, 0);
                RepackedQ4Kernels.dequantizePermutedScalar(p.rep(), row, scalar, 0);
                for (int col = 0; col < n; col++) {
                    int at = RepackedQ4.permutedIndex(col);
                    assertThat(vec[at]).as("row %d col %d", row, col).isEqualTo(ref[col]);
                    assertThat(scalar[at]).isEqualTo(ref[col]);
                    assertThat(p.rep().value(row, col)).isEqualTo(ref[col]);
                }
            }
        }
    }

    @Property(tries = 60)
    void dotsMatchTheQ4_KReferenceAndFourRowsEqualOne(@ForAll @IntRange(min = 1, max = 6) int superBlocks,
                                                      @ForAll @IntRange(min = 1, max = 3) int groups, @ForAll long seed) {
        Random r = new Random(seed);
        int n = 256 * superBlocks, rows = 4 * groups;
        try (Arena arena = Arena.ofConfined()) {
            Pair p = random(n, rows, r, arena);
            int xOff = r.nextInt(7);
            float[] x = QuantData.randomFloats(r, n + xOff);
            int np = p.rep().paddedLength();
            float[] xp = new float[np + 3], xs = new float[np / 8];
            RepackedQ4Kernels.prepare(p.rep(), x, xOff, xp, xs);
            float[] four = new float[rows], lanes = new float[64], w = new float[n];
            for (int g = 0; g < rows; g += 4) RepackedQ4Kernels.dot4(p.rep(), g, xp, xs, four, g, lanes);
            for (int row = 0; row < rows; row++) {
                float one = RepackedQ4Kernels.dot(p.rep(), row, xp, xs);
                assertThat(one).as("dot and dot4 agree bit for bit (row %d)", row).isEqualTo(four[row]);
                double exact = 0, mag = 0;
                Kernels.scalar(GGMLType.Q4_K).dequantize(p.q4k().data(), p.q4k().rowOffset(row), w, 0, n);
                for (int i = 0; i < n; i++) {
                    exact += (double) w[i] * x[xOff + i];
                    // the kernel sums raw quants (0..15) times the scale and subtracts min·Σx: rounding scales with
                    // (16·scale + min)·|x|, not |w·x|
                    mag += Math.abs(x[xOff + i]) * (16 * Math.abs(p.rep().scale(row, i / 32)) + Math.abs(p.rep().min(row, i / 32)));
                }
                var tol = org.assertj.core.data.Offset.offset(2.0 * (n + 16) * 0x1p-24 * mag + Float.MIN_NORMAL);
                assertThat((double) one).isCloseTo(exact, tol);
                assertThat((double) RepackedQ4Kernels.dotReference(p.rep(), row, x, xOff)).isCloseTo(exact, tol);
                float ref = Kernels.scalar(GGMLType.Q4_K).dot(p.q4k().data(), p.q4k().rowOffset(row), x, xOff, n);
                assertThat((double) ref).isCloseTo(exact, tol);
            }
        }
    }
}
