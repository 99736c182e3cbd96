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
        int ff = down.rowLength(), dim = down.rows();
        GGMLType outType = down.type() == GGMLType.F32 ? GGMLType.F32 : GGMLType.F16;
        MemorySegment seg = arena.allocate(outType.byteSize((long) ff * dim), 64);
        RowKernel k = Kernels.forType(down.type());
        float[] row = new float[ff];
        for (int j = 0; j < dim; j++) {
            k.dequantize(down.data(), down.rowOffset(j), row, 0, ff);
            for (int r = 0; r < ff; r++) {
                long idx = (long) r * dim + j;
                if (outType == GGMLType.F32) seg.setAtIndex(F32, idx, row[r]);
                else seg.setAtIndex(F16, idx, Float.floatToFloat16(row[r]));
            }
        }
        String name = down.name().replace("ffn_down", "ffn_down_t");
        return new Tensor(name, outType, new long[]{dim, ff}, seg);
    }

    @Override
    public void close() {
        if (arena.scope().isAlive()) arena.close();
    }
}
