package org.powerinfer4j.engine.kernels;

import static org.powerinfer4j.engine.kernels.Simd.BL;
import static org.powerinfer4j.engine.kernels.Simd.BPARTS;
import static org.powerinfer4j.engine.kernels.Simd.F;
import static org.powerinfer4j.engine.kernels.Simd.FL;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import org.powerinfer4j.engine.tensor.RepackedQ8;

/**
 * Dot products over {@link RepackedQ8} rows. Each row is summed exactly as the file layout's Q8_0 kernel sums it
 * ({@code LegacyQuantKernels.Q8_0_VECTOR.dot}: per 32-column block the int8 → float products in column order from
 * 0, then one FMA with the block scale; the lane sum of {@link Simd#sum}), so a repacked product is bit-identical
 * to the file's, one row or four at a time. {@link #dot4} shares every activation load between a group's four rows
 * and reads each tile's lines in address order (a block's scales first, which puts the tile's first line first).
 */
public final class RepackedQ8Kernels {
    private RepackedQ8Kernels() {}

    private static final ValueLayout.OfFloat FLE = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final int QK = 32;

    /**
     * Whether matVec takes the repacked copy here: at 512 bits. At 256 bits (Zen 5 with -XX:UseAVX=2, 1 thread,
     * 2048 × 512) the 4-row body ran at 9.5 GB/s from DRAM and 10.0 from cache against the file kernel's 11.6 and
     * 12.5 — compute-bound, its 16 accumulators and quants past AVX2's 16 registers — so there Q8_0 is not repacked.
     */
    public static final boolean SUPPORTED = Simd.ENABLED && FL == 16;

    /** Scalar definition: Σ_block d·Σ q·x, in natural column order. */
    public static float dotReference(RepackedQ8 m, int row, float[] x, int xOff) {
        float sum = 0f;
        for (int b = 0; b < m.rowLength() / QK; b++) {
            float p = 0f;
            for (int i = 0; i < QK; i++) p += m.quant(row, QK * b + i) * x[xOff + QK * b + i];
            sum += m.scale(row, b) * p;
        }
        return sum;
    }

    /** Row {@code row} · x[xOff..): the file kernel's bits. */
    public static float dot(RepackedQ8 m, int row, float[] x, int xOff) {
        MemorySegment seg = m.data();
        FloatVector acc = FloatVector.zero(F);
        for (int b = 0; b < m.rowLength() / QK; b++) {
            long qo = m.quantsOffset(row, b);
            int xb = xOff + b * QK;
            FloatVector p = FloatVector.zero(F);
            for (int j = 0; j < QK; j += BL) {
                ByteVector q = Blocks.loadBytes(seg, qo + j);
                for (int part = 0; part < BPARTS; part++) p = Blocks.toFloats(q, part).fma(FloatVector.fromArray(F, x, xb + j + part * FL), p);
            }
            acc = p.fma(Blocks.bc(seg.get(FLE, m.scaleOffset(row, b))), acc);
        }
        return Simd.sum(acc);
    }

    /** {@code out[o..o+4)} = rows {@code row..row+3} · x[xOff..) ({@code row} a multiple of four), each as {@link #dot}. */
    public static void dot4(RepackedQ8 m, int row, float[] x, int xOff, float[] out, int o) {
        if ((row & 3) != 0) throw new IllegalArgumentException("dot4 needs a row group start, not row " + row);
        MemorySegment seg = m.data();
        FloatVector a0 = FloatVector.zero(F), a1 = a0, a2 = a0, a3 = a0;
        int blocks = m.rowLength() / QK;
        long t = m.tileOffset(row, 0);
        for (int b = 0; b < blocks; b++) {
            long to = t + (long) (b / 4) * RepackedQ8.TILE, so = to + 4L * (b % 4);
            // the block's scales before its quants: the tile's scale line is its first
            float d0 = seg.get(FLE, so), d1 = seg.get(FLE, so + 16), d2 = seg.get(FLE, so + 32), d3 = seg.get(FLE, so + 48);
            long qo = to + RepackedQ8.QUANTS + 128L * (b % 4);
            int xb = xOff + b * QK;
            FloatVector p0 = FloatVector.zero(F), p1 = p0, p2 = p0, p3 = p0;
            for (int j = 0; j < QK; j += BL) {
                ByteVector q0 = Blocks.loadBytes(seg, qo + j), q1 = Blocks.loadBytes(seg, qo + 32 + j);
                ByteVector q2 = Blocks.loadBytes(seg, qo + 64 + j), q3 = Blocks.loadBytes(seg, qo + 96 + j);
                for (int part = 0; part < BPARTS; part++) {
                    FloatVector xv = FloatVector.fromArray(F, x, xb + j + part * FL);
                    p0 = Blocks.toFloats(q0, part).fma(xv, p0);
                    p1 = Blocks.toFloats(q1, part).fma(xv, p1);
                    p2 = Blocks.toFloats(q2, part).fma(xv, p2);
                    p3 = Blocks.toFloats(q3, part).fma(xv, p3);
                }
            }
            a0 = p0.fma(Blocks.bc(d0), a0);
            a1 = p1.fma(Blocks.bc(d1), a1);
            a2 = p2.fma(Blocks.bc(d2), a2);
            a3 = p3.fma(Blocks.bc(d3), a3);
        }
        out[o] = Simd.sum(a0);
        out[o + 1] = Simd.sum(a1);
        out[o + 2] = Simd.sum(a2);
        out[o + 3] = Simd.sum(a3);
    }
}
