package org.powerinfer4j.engine.kernels;

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
 * The batched decode product over repacked Q4_0/Q4_K ({@link MatrixOps#matVecBatch}, whose 4-vector groups run
 * {@link RepackedQ4Kernels#dot2x4}) gives every vector exactly what {@link MatrixOps#matVec} gives it alone, for any
 * batch (groups of four and a remainder), any row count (4-row groups and a tail) and on 1 or 2 threads: what lets
 * decode batching share the weight stream without changing any stream's logits.
 */
class MatVecBatchRepackedTest {

    @Property(tries = 80)
    void batchedEqualsOneByOneBitForBit(@ForAll boolean q4k, @ForAll @IntRange(min = 1, max = 4) int blocks, @ForAll @IntRange(min = 1, max = 19) int rows,
                                        @ForAll @IntRange(min = 1, max = 9) int batch, @ForAll @IntRange(min = 1, max = 2) int threads, @ForAll long seed) {
        Random r = new Random(seed);
        GGMLType type = q4k ? GGMLType.Q4_K : GGMLType.Q4_0;
        int n = q4k ? 256 * blocks : 32 * (3 * blocks + 1);   // Q4_0: also lengths that are not whole 128-column chunks
        try (Arena arena = Arena.ofShared(); WorkerPool pool = new WorkerPool(threads)) {
            MemorySegment seg = arena.allocate(type.byteSize((long) n * rows));
            QuantData.fill(type, r, seg, 0, n * rows, false);
            Tensor plain = new Tensor("w", type, new long[] {n, rows}, seg);
            RepackedQ4 rep = RepackedQ4.allocate(arena, type, n, rows);
            rep.repackRows(plain, 0, rows);
            Tensor w = plain.withRepacked(rep);
            RepackedChecks.assertBatchEqualsAlone(pool, w, QuantData.randomFloats(r, batch * n), batch);
        }
    }
}
