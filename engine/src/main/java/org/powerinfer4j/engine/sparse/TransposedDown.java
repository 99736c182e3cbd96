package org.powerinfer4j.engine.sparse;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import org.powerinfer4j.engine.kernels.Kernels;
import org.powerinfer4j.engine.kernels.RowKernel;
import org.powerinfer4j.engine.tensor.GGMLType;
import org.powerinfer4j.engine.tensor.Tensor;

/**
 * Neuron-major copies of {@code ffn_down} for ReLU models stored as dense GGUFs (no {@code ffn_down_t}).
 *
 * <p>Why a transposed copy rather than reading {@code ffn_down} column-wise: {@code ffn_down} is {@code {n_ff, dim}},
 * so neuron r's output weights are column r, strided by a whole row, and for quantized types a column cuts through
 * every block of every row — skipping inactive neurons there saves no memory traffic at 90% sparsity (a 32-wide
 * block is all-zero with probability 0.9³² ≈ 3%). One transposition at load makes each neuron a contiguous row and
 * the sparse axpy reads only active rows. The copy is F32 for F32 weights and F16 otherwise (exact for F16;
 * a rounding of ≤ 2⁻¹¹ relative for dequantized quantized weights), in an off-heap arena owned by the model.
 */
public final class TransposedDown implements AutoCloseable {
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfShort F16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private final Arena arena = Arena.ofShared();

    /** Returns {@code down} ({@code {n_ff, dim}}) transposed to {@code {dim, n_ff}}: row r = neuron r. */
    public Tensor transpose(Tensor down) {
        return transposeAll(java.util.List.of(down), 1)[0];
    }

    /**
     * {@link #transpose} of each matrix, on up to {@code threads} threads (one matrix per thread at a time: a
     * Mixtral-shaped layer has 8 experts' down projections to transpose at load).
     */
    public Tensor[] transposeAll(java.util.List<Tensor> downs, int threads) {
        Tensor[] out = new Tensor[downs.size()];
        for (int i = 0; i < out.length; i++) {   // allocated here, filled in parallel below
            Tensor down = downs.get(i);
            int ff = down.rowLength(), dim = down.rows();
            GGMLType outType = down.type() == GGMLType.F32 ? GGMLType.F32 : GGMLType.F16;
            MemorySegment seg = arena.allocate(outType.byteSize((long) ff * dim), 64);
            out[i] = new Tensor(down.name().replace("ffn_down", "ffn_down_t"), outType, new long[]{dim, ff}, seg);
        }
        java.util.concurrent.atomic.AtomicInteger next = new java.util.concurrent.atomic.AtomicInteger();
        Runnable work = () -> {
            for (int i; (i = next.getAndIncrement()) < out.length; ) fill(downs.get(i), out[i]);
        };
        int n = Math.max(1, Math.min(threads, out.length));
        Thread[] helpers = new Thread[n - 1];
        for (int t = 0; t < helpers.length; t++) helpers[t] = Thread.ofPlatform().name("transpose-down").start(work);
        work.run();
        for (Thread t : helpers) {
            try {
                t.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while transposing ffn_down", e);
            }
        }
        return out;
    }

    /** Rows of {@code down} in tiles of {@link #TILE}: each neuron's TILE outputs are written as one run (a cache line in F16). */
    private static void fill(Tensor down, Tensor t) {
        int ff = down.rowLength(), dim = down.rows();
        boolean f32 = t.type() == GGMLType.F32;
        MemorySegment seg = t.data();
        RowKernel k = Kernels.forType(down.type());
        float[] rows = new float[TILE * ff];
        for (int j0 = 0; j0 < dim; j0 += TILE) {
            int nb = Math.min(TILE, dim - j0);
            for (int i = 0; i < nb; i++) k.dequantize(down.data(), down.rowOffset(j0 + i), rows, i * ff, ff);
            for (int r = 0; r < ff; r++) {
                long base = (long) r * dim + j0;
                for (int i = 0; i < nb; i++) {
                    float v = rows[i * ff + r];
                    if (f32) seg.setAtIndex(F32, base + i, v);
                    else seg.setAtIndex(F16, base + i, Float.floatToFloat16(v));
                }
            }
        }
    }

    /** Output rows per tile: 32 F16 values are one 64-byte cache line of a neuron's row. */
    private static final int TILE = 32;

    @Override
    public void close() {
        if (arena.scope().isAlive()) arena.close();
    }
}
