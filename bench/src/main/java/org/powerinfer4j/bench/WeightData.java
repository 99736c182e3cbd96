package org.powerinfer4j.bench;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Random;
import org.powerinfer4j.engine.tensor.GGMLType;
import org.powerinfer4j.engine.tensor.RepackedMatrix;
import org.powerinfer4j.engine.tensor.Tensor;

/**
 * Off-heap weight matrices filled with valid random blocks, for benchmarks. A benchmark that should measure
 * DRAM bandwidth rotates over {@link #copies} copies of the matrix spanning at least {@link #MIN_WORKING_SET}
 * bytes, so that consecutive calls never find the weights in the 32 MiB L3.
 */
final class WeightData {
    static final long MIN_WORKING_SET = 256L << 20;
    private static final ValueLayout.OfShort SHORT_LE = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfFloat FLOAT_LE = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    final Tensor[] copies;
    final long matrixBytes;

    WeightData(Arena arena, GGMLType type, int cols, int rows, long minWorkingSet, long seed) {
        matrixBytes = type.byteSize((long) cols * rows);
        int n = (int) Math.max(1, (minWorkingSet + matrixBytes - 1) / matrixBytes);
        MemorySegment all = arena.allocate(matrixBytes * n, 4096);
        MemorySegment first = all.asSlice(0, matrixBytes);
        fill(type, new Random(seed), first, (long) cols * rows);
        copies = new Tensor[n];
        for (int i = 0; i < n; i++) {
            MemorySegment m = all.asSlice(i * matrixBytes, matrixBytes);
            if (i > 0) m.copyFrom(first);
            copies[i] = new Tensor("w" + i, type, new long[] {cols, rows}, m);
        }
    }

    /** Random quant bytes with well-scaled f16 block scales (no Inf/NaN), or N(0,1) floats for plain types. */
    static void fill(GGMLType t, Random r, MemorySegment s, long n) {
        switch (t) {
            case F32 -> { for (long i = 0; i < n; i++) s.set(FLOAT_LE, 4 * i, (float) r.nextGaussian()); }
            case F16 -> { for (long i = 0; i < n; i++) s.set(SHORT_LE, 2 * i, Float.floatToFloat16((float) r.nextGaussian())); }
            case BF16 -> { for (long i = 0; i < n; i++) s.set(SHORT_LE, 2 * i, (short) (Float.floatToRawIntBits((float) r.nextGaussian()) >>> 16)); }
            default -> {
                byte[] chunk = new byte[1 << 20];
                for (long o = 0; o < s.byteSize(); o += chunk.length) {
                    r.nextBytes(chunk);
                    MemorySegment.copy(chunk, 0, s, ValueLayout.JAVA_BYTE, o, (int) Math.min(chunk.length, s.byteSize() - o));
                }
                int[] halves = switch (t) {
                    case Q8_0, Q4_0 -> new int[] {0};
                    case Q4_1, Q4_K, Q5_K -> new int[] {0, 2};
                    case Q6_K -> new int[] {208};
                    default -> throw new IllegalArgumentException("no benchmark data layout for " + t);
                };
                for (long b = 0; b < n / t.blockSize; b++) {
                    for (int h : halves) s.set(SHORT_LE, b * t.typeSize + h, Float.floatToFloat16((float) (r.nextGaussian() * 0.01)));
                }
            }
        }
    }

    /**
     * For a benchmark parameter: a ggml type name, or {@code Q4_0_REPACKED} / {@code Q4_K_REPACKED} / {@code Q5_K_REPACKED} / {@code Q6_K_REPACKED} / {@code Q8_0_REPACKED}
     * for that type with the CPU repacked copy the engine builds at load ({@link RepackedMatrix}) attached to every matrix copy.
     */
    static WeightData forParam(Arena arena, String type, int cols, int rows, long minWorkingSet, long seed) {
        boolean repack = type.endsWith("_REPACKED");
        GGMLType ggml = GGMLType.valueOf(repack ? type.substring(0, type.length() - "_REPACKED".length()) : type);
        WeightData w = new WeightData(arena, ggml, cols, rows, minWorkingSet, seed);
        if (repack) {
            for (int i = 0; i < w.copies.length; i++) {
                RepackedMatrix r = RepackedMatrix.allocate(arena, ggml, cols, rows);
                r.repackRows(w.copies[i], 0, rows);
                w.copies[i] = w.copies[i].withRepacked(r);
            }
        }
        return w;
    }

    /** Bytes a product streams per matrix: the repacked copy's when there is one. */
    long streamedBytes() {
        RepackedMatrix r = copies[0].repacked();
        return r == null ? matrixBytes : r.rowBytes() * r.rows();
    }

    static float[] randomFloats(int n, long seed) {
        Random r = new Random(seed);
        float[] x = new float[n];
        for (int i = 0; i < n; i++) x[i] = (float) r.nextGaussian();
        return x;
    }
}
