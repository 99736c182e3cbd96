package org.powerinfer4j.engine.kernels;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Random;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.powerinfer4j.engine.tensor.GGMLType;
import org.powerinfer4j.engine.tensor.Quantizer;
import org.powerinfer4j.engine.tensor.Tensor;

/**
 * The sparse axpy (down projection): the fused single-token path, the batched path and any thread count give the
 * same bits, and they match the float64 reference. The per-token row-sparse product of a sequence batch gives
 * each vector exactly its single-vector product.
 */
class SparseOpsTest {

    @Property(tries = 40)
    void sparseAxpyIsDeterministicAndMatchesReference(@ForAll @IntRange(min = 0, max = 2) int typeIndex,
                                                      @ForAll @IntRange(min = 1, max = 8) int dimBlocks,
                                                      @ForAll @IntRange(min = 1, max = 300) int ff, @ForAll long seed) {
        GGMLType t = new GGMLType[]{GGMLType.Q4_0, GGMLType.F16, GGMLType.Q8_0}[typeIndex];
        int dim = dimBlocks * 64;
        Random r = new Random(seed);
        float[] wf = new float[dim * ff];
        for (int i = 0; i < wf.length; i++) wf[i] = (float) r.nextGaussian();
        float[] h = new float[2 * ff];   // token 0 random sparse, token 1 all zero
        int[] rows = new int[ff];
        int count = 0;
        for (int i = 0; i < ff; i++)
            if (r.nextInt(4) == 0) {
                rows[count++] = i;
                if (r.nextInt(5) != 0) h[i] = (float) r.nextGaussian();   // some listed rows have h = 0 (false positives)
            }
        try (Arena arena = Arena.ofShared(); WorkerPool one = new WorkerPool(1); WorkerPool two = new WorkerPool(2)) {
            byte[] q = Quantizer.quantize(t, wf);
            MemorySegment seg = arena.allocate(q.length);
            seg.copyFrom(MemorySegment.ofArray(q));
            Tensor w = new Tensor("down_t", t, new long[]{dim, ff}, seg);
            float[] y1 = new float[2 * dim], y2 = new float[2 * dim], yb = new float[2 * dim], ref = new float[dim];
            java.util.Arrays.fill(y1, Float.NaN);   // the output is overwritten, not accumulated
            SparseOps.sparseAxpy(one, w, rows, count, h, ff, 1, y1);
            SparseOps.sparseAxpy(two, w, rows, count, h, ff, 1, y2);
            SparseOps.sparseAxpy(two, w, rows, count, h, ff, 2, yb);
            SparseOps.sparseAxpyReference(w, rows, count, h, 0, ref, 0);
            for (int j = 0; j < dim; j++) {
                assertThat(Float.floatToIntBits(y2[j])).as("2 threads, element %d", j).isEqualTo(Float.floatToIntBits(y1[j]));
                assertThat(Float.floatToIntBits(yb[j])).as("batched, element %d", j).isEqualTo(Float.floatToIntBits(y1[j]));
                assertThat(yb[dim + j]).isZero();
                assertThat((double) y1[j]).isCloseTo(ref[j], org.assertj.core.data.Offset.offset(1e-4 * (1 + Math.sqrt(count) * 4)));
            }
        }
    }

    @Property(tries = 30)
    void rowSparseMatVecBatchEqualsEachVectorAlone(@ForAll @IntRange(min = 0, max = 2) int typeIndex, @ForAll @IntRange(min = 1, max = 6) int batch,
                                                   @ForAll @IntRange(min = 1, max = 200) int ff, @ForAll long seed) {
        GGMLType t = new GGMLType[]{GGMLType.Q4_0, GGMLType.F16, GGMLType.Q8_0}[typeIndex];
        int n = 128;
        Random r = new Random(seed);
        float[] wf = new float[n * ff], x = new float[batch * n];
        for (int i = 0; i < wf.length; i++) wf[i] = (float) r.nextGaussian();
        for (int i = 0; i < x.length; i++) x[i] = (float) r.nextGaussian();
        int[] rows = new int[ff];
        int count = 0;
        for (int i = 0; i < ff; i++) if (r.nextInt(3) == 0) rows[count++] = i;
        try (Arena arena = Arena.ofShared(); WorkerPool two = new WorkerPool(2)) {
            byte[] q = Quantizer.quantize(t, wf);
            MemorySegment seg = arena.allocate(q.length);
            seg.copyFrom(MemorySegment.ofArray(q));
            Tensor w = new Tensor("up", t, new long[]{n, ff}, seg);
            float[] got = new float[batch * ff], want = new float[batch * ff];
            SparseOps.rowSparseMatVecBatch(two, w, rows, count, x, batch, got, ff);
            for (int b = 0; b < batch; b++) SparseOps.rowSparseMatVec(two, w, rows, count, x, b * n, want, b * ff);
            for (int i = 0; i < got.length; i++)
                assertThat(Float.floatToIntBits(got[i])).as("element %d", i).isEqualTo(Float.floatToIntBits(want[i]));
        }
    }
}
