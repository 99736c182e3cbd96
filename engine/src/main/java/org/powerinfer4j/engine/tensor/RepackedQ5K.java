package org.powerinfer4j.engine.tensor;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * A Q5_K matrix re-laid out for the CPU's vector units, built once at load from the mapped tensor. Same 5-bit
 * quants, 6-bit sub-block scales and mins and super-block factors d, dmin (widened from F16, exact), so every
 * dequantized value {@code (d·sc)·q − dmin·m} is bit-identical to Q5_K's; only the order in memory changes.
 *
 * <p>Why: in the file a quant's low four bits and its fifth lie in different bytes (qs and qh), so the word kernel
 * needs two masks and two converts per 16 weights, or shifts to merge them, and is compute-bound at half the speed
 * of the other types. Here every quant is whole in one word: a tile covers a pair of super-blocks (512 columns,
 * 16 sub-blocks of 32), lane {@code j} of a vector holding sub-block {@code j} (columns {@code 32j..32j+31} of the
 * pair). Word {@code i} (0..4) of lane j holds columns {@code 32j + 6i + k} (k = 0..5) at bit {@code 5k}, and in its
 * top two bits bits {@code 2i, 2i+1} of the ten-bit pair {@code q[30] | q[31] << 5}. A quant is one mask away from an
 * exact float {@code q·2^5k}, met by activations scaled by {@code 2^-5k}, and the 16 sub-blocks' scales and mins form
 * one vector each per tile: exactly 5 bits per weight of quants, as in the file.
 *
 * <p>Rows are stored in groups of four, a group's tiles one after the other, {@link #STRIDE} bytes each, read by a
 * 4-row kernel as one stream in address order (Zen's prefetchers keep up only with lines touched in address order;
 * see {@link RepackedQ6K}). A tile holds its words, 1280 bytes (word vector i of row {@code 4G + r} at
 * {@code 256i + 64r}), then 4 rows × 16 scale bytes, 4 rows × 16 min bytes, the 4 rows' two d and two dmin as floats:
 * 1472 bytes, 23 cache lines, 5.75 bits per weight against the file's 5.5. A row whose super-block count is odd
 * ends in a half tile of zero quants and zero factors, and rows past {@link #rows()} up to a multiple of four are
 * zero too (both contribute 0). 64 spare bytes end the segment so that a full-width load at the last tile stays in it.
 */
public record RepackedQ5K(int rowLength, int rows, MemorySegment data) implements RepackedMatrix {
    /** Columns per super-block. */
    public static final int QK_K = 256;
    /** Columns per tile: a pair of super-blocks. */
    public static final int PAIR = 512;
    /** Bytes from a row's word vector i to its vector i + 1 within a tile (the 4 rows' vectors i lie between). */
    public static final int VECTOR_STRIDE = 256;
    /** Offset of the 4 rows' 16 scale bytes within a tile, after its 5 × 4 × 64 bytes of words. */
    public static final int SC = 1280;
    /** Offset of the 4 rows' 16 min bytes. */
    public static final int MN = 1344;
    /** Offset of the 4 rows' d of the pair's two super-blocks (row r's at {@code D + 8r}). */
    public static final int D = 1408;
    /** Offset of the 4 rows' dmin, as {@link #D}. */
    public static final int DMIN = 1440;
    /** Bytes of one tile of a group. */
    public static final int STRIDE = 1472;
    private static final int Q5_K_BYTES = 176;
    private static final ValueLayout.OfShort F16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /**
     * Whether {@code t} can be repacked: a 2-D Q5_K matrix. Also with an odd super-block count: a 768-column row
     * reads 4/3 of its file bytes here (its last tile half empty), and still decodes faster than through the file's
     * layout (110m Q5_K_M tg64, Zen 5, alternating: 1 thread 127–139 against 101–110 t/s, 2 threads 196–250 against 169–197).
     */
    public static boolean repackable(Tensor t) {
        return t.type() == GGMLType.Q5_K && t.ne().length == 2;
    }

    /** Allocates a zeroed {@code rows × n} matrix in {@code arena}. */
    public static RepackedQ5K allocate(Arena arena, int n, int rows) {
        if (n <= 0 || n % QK_K != 0) throw new IllegalArgumentException("Q5_K row length " + n + " is not a positive multiple of " + QK_K);
        if (rows < 0) throw new IllegalArgumentException("negative row count " + rows);
        MemorySegment seg = ZeroedMemory.allocate(arena, Math.addExact(Math.multiplyExact((rows + 3L) / 4, (long) tiles(n) * STRIDE), 64), 64);
        return new RepackedQ5K(n, rows, seg);
    }

    private static int tiles(int n) {
        return (n + PAIR - 1) / PAIR;
    }

    @Override
    public GGMLType type() {
        return GGMLType.Q5_K;
    }

    /** Tiles per row (pairs of super-blocks, the last one half empty when the count is odd). */
    public int tiles() {
        return tiles(rowLength);
    }

    /** Row length rounded up to whole tiles: the length of the activations {@code RepackedQ5KKernels.prepare} writes. */
    public int paddedLength() {
        return tiles() * PAIR;
    }

    @Override
    public long rowBytes() {
        return (long) tiles() * STRIDE / 4;
    }

    /** Byte offset of tile {@code t} of the group holding row {@code r}. */
    public long tileOffset(int r, int t) {
        return ((long) (r >> 2) * tiles() + t) * STRIDE;
    }

    @Override
    public void repackRows(Tensor src, int from, int to) {
        if (src.type() != GGMLType.Q5_K || src.rowLength() != rowLength || src.rows() != rows)
            throw new IllegalArgumentException("cannot repack " + src.name() + " " + src.type() + " " + src.shapeString() + " into Q5_K " + rows + "×" + rowLength);
        byte[] block = new byte[Q5_K_BYTES];
        MemorySegment blockSeg = MemorySegment.ofArray(block);
        int[] q = new int[QK_K], words = new int[5 * 8];
        for (int r = from; r < to; r++) {
            int k = r & 3;
            for (int s = 0; s < rowLength / QK_K; s++) {
                MemorySegment.copy(src.data(), src.rowOffset(r) + (long) s * Q5_K_BYTES, blockSeg, 0, Q5_K_BYTES);
                unpack(block, q);
                for (int j = 0; j < 8; j++) {
                    int top = q[32 * j + 30] | q[32 * j + 31] << 5;
                    for (int i = 0; i < 5; i++) {
                        int w = 0;
                        for (int p = 0; p < 6; p++) w |= q[32 * j + 6 * i + p] << (5 * p);
                        words[8 * i + j] = w | ((top >> (2 * i)) & 3) << 30;
                    }
                }
                long t = tileOffset(r, s / 2);
                int lane = 8 * (s % 2);   // the pair's second super-block holds lanes 8..15
                for (int i = 0; i < 5; i++) MemorySegment.copy(words, 8 * i, data, I32, t + (long) VECTOR_STRIDE * i + 64L * k + 4L * lane, 8);
                for (int j = 0; j < 8; j++) {
                    int sm = RepackedQ4.scaleMin(block, 4, j);
                    data.set(ValueLayout.JAVA_BYTE, t + SC + 16L * k + lane + j, (byte) (sm & 0xFF));
                    data.set(ValueLayout.JAVA_BYTE, t + MN + 16L * k + lane + j, (byte) (sm >> 8));
                }
                data.set(F32, t + D + 8L * k + 4L * (s % 2), Float.float16ToFloat(blockSeg.get(F16, 0)));
                data.set(F32, t + DMIN + 8L * k + 4L * (s % 2), Float.float16ToFloat(blockSeg.get(F16, 2)));
            }
        }
    }

    /** The 256 5-bit quants of one Q5_K block in column order (ggml's dequantize_row_q5_K, before scale and min). */
    static void unpack(byte[] b, int[] q) {
        for (int j = 0; j < 8; j++) {
            for (int l = 0; l < 32; l++) {
                int lo = ((b[48 + 32 * (j / 2) + l] & 0xFF) >> (4 * (j % 2))) & 0xF;
                q[32 * j + l] = lo | (((b[16 + l] & 0xFF) >> j) & 1) << 4;
            }
        }
    }

    /** Quant (0..31) of row {@code r}, column {@code col}. */
    public int quant(int r, int col) {
        int lane = col % PAIR / 32, p = col % 32;
        long wo = tileOffset(r, col / PAIR) + 64L * (r & 3) + 4L * lane;
        if (p < 30) return (data.get(I32, wo + (long) VECTOR_STRIDE * (p / 6)) >>> (5 * (p % 6))) & 31;
        int top = 0;
        for (int i = 0; i < 5; i++) top |= (data.get(I32, wo + (long) VECTOR_STRIDE * i) >>> 30) << (2 * i);
        return p == 30 ? top & 31 : top >>> 5;
    }

    /** Scale {@code d·sc} of row {@code r}'s sub-block {@code b} (columns 32b..32b+31), formed as Q5_K's dequantization forms it. */
    public float scale(int r, int b) {
        return factor(r, b, SC, D);
    }

    /** Min {@code dmin·m} of row {@code r}'s sub-block {@code b}, formed as Q5_K's dequantization forms it. */
    public float min(int r, int b) {
        return factor(r, b, MN, DMIN);
    }

    private float factor(int r, int b, int bytes, int factors) {
        long t = tileOffset(r, b / 16);
        int lane = b % 16;
        return data.get(F32, t + factors + 8L * (r & 3) + 4L * (lane / 8)) * data.get(ValueLayout.JAVA_BYTE, t + bytes + 16L * (r & 3) + lane);
    }

    /** The dequantized value of row {@code r}, column {@code col}: {@code (d·sc)·q − dmin·m}, bit for bit Q5_K's. */
    public float value(int r, int col) {
        return scale(r, col / 32) * quant(r, col) - min(r, col / 32);
    }
}
