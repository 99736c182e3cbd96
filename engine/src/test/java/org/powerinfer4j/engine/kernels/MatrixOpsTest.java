package org.powerinfer4j.engine.kernels;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Random;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.BeforeContainer;
import org.junit.jupiter.api.Test;
import org.powerinfer4j.engine.tensor.GGMLType;
import org.powerinfer4j.engine.tensor.Tensor;

/** matVec / matMul against a naive double-precision loop over the scalar dequantization. */
class MatrixOpsTest {

    private static long savedThreshold;

    @BeforeContainer
    static void forceParallel() {
        savedThreshold = MatrixOps.parallelThreshold;
        MatrixOps.parallelThreshold = 0; // small test matrices must still be split over the pool
    }

    @AfterContainer
    static void restore() {
        MatrixOps.parallelThreshold = savedThreshold;
    }

    @Provide
    Arbitrary<GGMLType> types() {
        return Arbitraries.of(QuantData.TYPES);
    }

    /** A random matrix of {@code rows} rows of length {@code n}, at a random offset inside a larger segment. */
    private record Matrix(Tensor tensor, float[][] w, float[][] w0) {
        static Matrix random(GGMLType t, int n, int rows, Random r, Arena arena) {
            long rowBytes = t.byteSize(n);
            int skew = r.nextInt(100);
            MemorySegment all = arena.allocate(rowBytes * rows + skew + 64);
            QuantData.fill(t, r, all, skew, n * rows, false);
            MemorySegment data = all.asSlice(skew, rowBytes * rows);
            float[][] w = new float[rows][n], w0 = new float[rows][n];
            for (int i = 0; i < rows; i++) {
                Kernels.scalar(t).dequantize(data, i * rowBytes, w[i], 0, n);
                if (t.isQuantized()) Kernels.scalar(t).dequantize(QuantData.zeroQuants(t, data, i * rowBytes, n, arena), 0, w0[i], 0, n);
            }
            return new Matrix(new Tensor("w", t, new long[] {n, rows}, data), w, w0);
        }

        void assertRow(int row, float[] x, int xo, float actual) {
            int n = w[row].length;
            double exact = 0, mag = 0;
            for (int i = 0; i < n; i++) {
                exact += (double) w[row][i] * x[xo + i];
                mag += Math.abs(x[xo + i]) * (Math.abs((double) w[row][i]) + Math.abs((double) w0[row][i]));
            }
            double tol = 2.0 * (n + 16) * 0x1p-24 * mag + Float.MIN_NORMAL;
            assertThat((double) actual).as("row %d of %s", row, tensor.type()).isCloseTo(exact, org.assertj.core.data.Offset.offset(tol));
        }
    }

    private static int rowLength(GGMLType t, Random r) {
        return t.isQuantized() ? t.blockSize * (1 + r.nextInt(t.blockSize == 256 ? 3 : 12)) : 1 + r.nextInt(200);
    }

    @Property(tries = 60)
    void matVecMatchesNaiveLoop(@ForAll("types") GGMLType t, @ForAll @IntRange(min = 1, max = 3) int threads,
                                @ForAll @IntRange(min = 1, max = 70) int rows, @ForAll long seed) {
        Random r = new Random(seed);
        int n = rowLength(t, r);
        try (Arena arena = Arena.ofShared(); WorkerPool pool = new WorkerPool(threads)) {
            Matrix m = Matrix.random(t, n, rows, r, arena);
            int xOff = r.nextInt(5), outOff = r.nextInt(5);
            float[] x = QuantData.randomFloats(r, n + xOff), out = new float[rows + outOff + 3];
            out[rows + outOff] = 42f;
            MatrixOps.matVec(pool, m.tensor(), x, xOff, out, outOff);
            for (int i = 0; i < rows; i++) m.assertRow(i, x, xOff, out[outOff + i]);
            assertThat(out[rows + outOff]).as("no write past the output").isEqualTo(42f);

            // a row range writes its rows from outOff on and nothing else
            int from = r.nextInt(rows), to = from + r.nextInt(rows - from + 1);
            float[] part = new float[to - from + 2];
            part[to - from] = 7f;
            MatrixOps.matVec(pool, m.tensor(), from, to, x, xOff, part, 0);
            for (int i = from; i < to; i++) assertThat(part[i - from]).isEqualTo(out[outOff + i]);
            assertThat(part[to - from]).isEqualTo(7f);
        }
    }

    /** Decode passes of a few sequences (1..17) and prompt chunks (18..150). */
    @Provide
    Arbitrary<Integer> batches() {
        return Arbitraries.oneOf(Arbitraries.integers().between(1, 17), Arbitraries.integers().between(18, 150));
    }

    /**
     * Within the naive loop's bound; and whole groups of {@link BroadcastTiles#COLS} columns of a prompt-sized batch go
     * through the broadcast tiles, whose every output is exactly {@link BroadcastTiles#reference}'s FMA chain (any
     * thread count, panel or k block).
     */
    @Property(tries = 80)
    void matMulMatchesNaiveLoop(@ForAll("types") GGMLType t, @ForAll @IntRange(min = 1, max = 3) int threads,
                                @ForAll("batches") int batch, @ForAll @IntRange(min = 1, max = 45) int rows,
                                @ForAll long seed) {
        Random r = new Random(seed);
        int n = rowLength(t, r);
        try (Arena arena = Arena.ofShared(); WorkerPool pool = new WorkerPool(threads)) {
            Matrix m = Matrix.random(t, n, rows, r, arena);
            float[] x = QuantData.randomFloats(r, batch * n), out = new float[batch * rows];
            MatrixOps.matMul(pool, m.tensor(), x, batch, out);
            int cols = BroadcastTiles.columns(batch);
            for (int b = 0; b < batch; b++) {
                for (int i = 0; i < rows; i++) {
                    m.assertRow(i, x, b * n, out[b * rows + i]);
                    if (b < cols) assertThat(out[b * rows + i]).as("row %d column %d", i, b).isEqualTo(BroadcastTiles.reference(m.w()[i], 0, x, b * n, n));
                }
            }
        }
    }

    // ---- repacked Q4_0 (tensor.RepackedQ4): the dense products read the repacked copy when one is attached ----

    private static Matrix repacked(int n, int rows, Random r, Arena arena) {
        Matrix m = Matrix.random(GGMLType.Q4_0, n, rows, r, arena);
        org.powerinfer4j.engine.tensor.RepackedQ4 rep = org.powerinfer4j.engine.tensor.RepackedQ4.allocate(arena, n, rows);
        rep.repackRows(m.tensor(), 0, rows);
        return new Matrix(m.tensor().withRepacked(rep), m.w(), m.w0());
    }

    @Property(tries = 60)
    void repackedMatVecMatchesNaiveLoopForAnyThreadsAndRowRange(@ForAll @IntRange(min = 1, max = 3) int threads,
                                                                 @ForAll @IntRange(min = 1, max = 70) int rows, @ForAll long seed) {
        Random r = new Random(seed);
        int n = 32 * (1 + r.nextInt(20));             // 32..640: whole chunks of 128 and padded ones
        try (Arena arena = Arena.ofShared(); WorkerPool pool = new WorkerPool(threads); WorkerPool one = new WorkerPool(1)) {
            Matrix m = repacked(n, rows, r, arena);
            int xOff = r.nextInt(5), outOff = r.nextInt(5);
            float[] x = QuantData.randomFloats(r, n + xOff), out = new float[rows + outOff + 3];
            out[rows + outOff] = 42f;
            MatrixOps.matVec(pool, m.tensor(), x, xOff, out, outOff);
            for (int i = 0; i < rows; i++) m.assertRow(i, x, xOff, out[outOff + i]);
            assertThat(out[rows + outOff]).as("no write past the output").isEqualTo(42f);

            // bit-identical on one thread, and for a row range starting anywhere (not only at a 4-row group)
            float[] single = new float[rows + outOff];
            MatrixOps.matVec(one, m.tensor(), x, xOff, single, outOff);
            for (int i = 0; i < rows; i++) assertThat(single[outOff + i]).isEqualTo(out[outOff + i]);
            int from = r.nextInt(rows), to = from + r.nextInt(rows - from + 1);
            float[] part = new float[to - from + 1];
            part[to - from] = 7f;
            MatrixOps.matVec(pool, m.tensor(), from, to, x, xOff, part, 0);
            for (int i = from; i < to; i++) assertThat(part[i - from]).isEqualTo(out[outOff + i]);
            assertThat(part[to - from]).isEqualTo(7f);
        }
    }

    @Property(tries = 40)
    void repackedMatMulMatchesNaiveLoop(@ForAll @IntRange(min = 1, max = 3) int threads, @ForAll @IntRange(min = 2, max = 17) int batch,
                                        @ForAll @IntRange(min = 1, max = 45) int rows, @ForAll long seed) {
        Random r = new Random(seed);
        int n = 32 * (1 + r.nextInt(20));
        try (Arena arena = Arena.ofShared(); WorkerPool pool = new WorkerPool(threads)) {
            Matrix m = repacked(n, rows, r, arena);
            float[] x = QuantData.randomFloats(r, batch * n), out = new float[batch * rows];
            MatrixOps.matMul(pool, m.tensor(), x, batch, out);
            for (int b = 0; b < batch; b++) {
                for (int i = 0; i < rows; i++) m.assertRow(i, x, b * n, out[b * rows + i]);
            }
        }
    }

    /** q/k/v-style products of one input in one pass: each output bit-identical to its own matMul, repacked or not. */
    @Property(tries = 25)
    void sharedInputProductsEqualTheirOwnMatMuls(@ForAll @IntRange(min = 1, max = 3) int threads, @ForAll @IntRange(min = 2, max = 140) int batch,
                                                 @ForAll long seed) {
        Random r = new Random(seed);
        int n = 256 * (1 + r.nextInt(3));
        GGMLType[] kinds = {GGMLType.Q8_0, GGMLType.Q6_K, GGMLType.F16, GGMLType.Q4_K};
        try (Arena arena = Arena.ofShared(); WorkerPool pool = new WorkerPool(threads)) {
            Tensor[] ws = new Tensor[2 + r.nextInt(2)];
            for (int i = 0; i < ws.length; i++) {
                int rows = 1 + r.nextInt(40);
                ws[i] = r.nextBoolean() ? repacked(n, rows, r, arena).tensor() : Matrix.random(kinds[r.nextInt(kinds.length)], n, rows, r, arena).tensor();
            }
            float[] x = QuantData.randomFloats(r, batch * n);
            float[][] outs = new float[ws.length][];
            for (int i = 0; i < ws.length; i++) outs[i] = new float[batch * ws[i].rows()];
            MatrixOps.matMulShared(pool, ws, x, batch, outs);
            for (int i = 0; i < ws.length; i++) {
                float[] alone = new float[batch * ws[i].rows()];
                MatrixOps.matMul(pool, ws[i], x, batch, alone);
                assertThat(outs[i]).as("matrix %d (%s)", i, ws[i].type()).isEqualTo(alone);
            }
        }
    }

    @Test
    void matMulOverSeveralPanelsAndThreads() {
        // long rows make panels of 4 rows, so one thread's share spans many panels
        Random r = new Random(7);
        GGMLType t = GGMLType.Q4_K;
        int n = 256 * 80, rows = 23, batch = 7;
        try (Arena arena = Arena.ofShared(); WorkerPool pool = new WorkerPool(2)) {
            Matrix m = Matrix.random(t, n, rows, r, arena);
            float[] x = QuantData.randomFloats(r, batch * n), out = new float[batch * rows];
            MatrixOps.matMul(pool, m.tensor(), x, batch, out);
            for (int b = 0; b < batch; b++) {
                for (int i = 0; i < rows; i++) m.assertRow(i, x, b * n, out[b * rows + i]);
            }
        }
    }

    @Test
    void rejectsShortBuffers() {
        try (Arena arena = Arena.ofShared(); WorkerPool pool = new WorkerPool(1)) {
            Matrix m = Matrix.random(GGMLType.Q8_0, 64, 4, new Random(1), arena);
            assertThatThrownBy(() -> MatrixOps.matVec(pool, m.tensor(), new float[63], 0, new float[4], 0)).isInstanceOf(IndexOutOfBoundsException.class);
            assertThatThrownBy(() -> MatrixOps.matVec(pool, m.tensor(), new float[64], 0, new float[3], 0)).isInstanceOf(IndexOutOfBoundsException.class);
            assertThatThrownBy(() -> MatrixOps.matVec(pool, m.tensor(), 2, 5, new float[64], 0, new float[3], 0)).isInstanceOf(IndexOutOfBoundsException.class);
            assertThatThrownBy(() -> MatrixOps.matMul(pool, m.tensor(), new float[64 * 2], 3, new float[12])).isInstanceOf(IndexOutOfBoundsException.class);
        }
    }
}
