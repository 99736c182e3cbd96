package org.powerinfer4j.engine.kernels;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Random;
import org.powerinfer4j.engine.tensor.GGMLType;
import org.powerinfer4j.engine.tensor.RepackedMatrix;
import org.powerinfer4j.engine.tensor.Tensor;

/** What the repacked-layout tests share: random matrices with their copy, the bit-exact value check, batched = alone. */
final class RepackedChecks {
    private RepackedChecks() {}

    /** A value of the repacked copy by row and column. */
    interface RowColValue {
        float value(int row, int col);
    }

    /** A random {@code rows × n} matrix of {@code type} with its repacked copy attached (filled by two calls over disjoint rows, as the load's threads make them). */
    static Tensor randomRepacked(GGMLType type, int n, int rows, Random r, Arena arena, boolean extreme) {
        MemorySegment seg = arena.allocate(type.byteSize((long) n * rows));
        QuantData.fill(type, r, seg, 0, n * rows, extreme);
        Tensor t = new Tensor("w", type, new long[] {n, rows}, seg);
        RepackedMatrix rep = RepackedMatrix.allocate(arena, type, n, rows);
        int mid = r.nextInt(rows + 1);
        rep.repackRows(t, 0, mid);
        rep.repackRows(t, mid, rows);
        return t.withRepacked(rep);
    }

    /** Every value of the copy bit for bit what the type's scalar dequantization gives from the file's blocks. */
    static void assertValuesBitExact(Tensor t, RowColValue copy) {
        int n = t.rowLength();
        float[] ref = new float[n];
        for (int row = 0; row < t.rows(); row++) {
            Kernels.scalar(t.type()).dequantize(t.data(), t.rowOffset(row), ref, 0, n);
            for (int col = 0; col < n; col++)
                assertThat(Float.floatToRawIntBits(copy.value(row, col))).as("row %d col %d", row, col).isEqualTo(Float.floatToRawIntBits(ref[col]));
        }
    }

    /** matVecBatch over {@code batch} vectors of x equals matVec of each alone, bit for bit; returns the products alone. */
    static float[] assertBatchEqualsAlone(WorkerPool pool, Tensor w, float[] x, int batch) {
        int n = w.rowLength(), rows = w.rows();
        float[] batched = new float[batch * rows], alone = new float[batch * rows];
        MatrixOps.matVecBatch(pool, w, x, batch, batched);
        for (int b = 0; b < batch; b++) MatrixOps.matVec(pool, w, x, b * n, alone, b * rows);
        for (int i = 0; i < batched.length; i++)
            assertThat(batched[i]).as("vector %d row %d", i / rows, i % rows).isEqualTo(alone[i]);
        return alone;
    }

    /** A repacked layout's two kernels against one prepared x: one row, or the 4-row group starting at {@code row}. */
    interface RowDots {
        float dot(int row);

        void dot4(int row, float[] out, int o);
    }

    /**
     * For every row of {@code w} (a multiple of four rows): {@code dot} and {@code dot4} agree bit for bit, and both it and
     * {@code reference} (the layout's scalar definition) are within the dot tolerance of the exact product of the file's row and x.
     */
    static void assertDotsAgreeAndMatchExact(Tensor w, float[] x, int xOff, RowDots k, java.util.function.IntToDoubleFunction reference) {
        int rows = w.rows(), n = w.rowLength();
        float[] four = new float[rows];
        for (int g = 0; g < rows; g += 4) k.dot4(g, four, g);
        for (int row = 0; row < rows; row++) {
            float one = k.dot(row);
            assertThat(one).as("dot and dot4 agree bit for bit (row %d)", row).isEqualTo(four[row]);
            long off = w.rowOffset(row);
            double exact = QuantData.exactDot(w.type(), w.data(), off, x, xOff, n);
            var tol = org.assertj.core.data.Offset.offset(QuantData.dotTolerance(w.type(), w.data(), off, x, xOff, n));
            assertThat((double) one).as("row %d", row).isCloseTo(exact, tol);
            assertThat(reference.applyAsDouble(row)).isCloseTo(exact, tol);
        }
    }

    /** matVec over a random row range of w gives the rows of {@code whole} (a range's 4-row groups need not start at its first row). */
    static void assertRangeEqualsWhole(WorkerPool pool, Tensor w, float[] x, float[] whole, Random r) {
        int rows = w.rows();
        int from = r.nextInt(rows), to = from + 1 + r.nextInt(rows - from);
        float[] part = new float[to - from];
        MatrixOps.matVec(pool, w, from, to, x, 0, part, 0);
        for (int row = from; row < to; row++)
            assertThat(part[row - from]).as("rows [%d, %d) row %d", from, to, row).isEqualTo(whole[row]);
    }
}
