package org.powerinfer4j.engine.tensor;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * A Q6_K matrix re-laid out for the CPU's vector units, built once at load from the mapped tensor. Same 6-bit
 * quants, 8-bit sub-block scales and super-block factor d (widened from F16, exact), so every dequantized value
 * {@code (d·sc)·(q − 32)} is bit-identical to Q6_K's; only the order in memory changes.
 *
 * <p>Why: in the file a 6-bit quant is split over a low-nibble byte and a high-bits byte, so the decode kernel
 * needs two masks, an or and a convert per 16 weights, row by row. Here the quants of a super-block (256 columns,
 * 16 sub-blocks of 16) are three vectors of 16 words, lane {@code j} holding sub-block {@code j}: word {@code i} of
 * lane j holds columns {@code 16j + 5i + k} (k = 0..4) whole, 6 bits each at bit {@code 6k}, and in its top two bits
 * bits {@code 2i, 2i+1} of column {@code 16j + 15}. A column's quant is then one mask away from a float
 * {@code q·2^6k} (exact), met by activations scaled by {@code 2^-6k}; and since every lane stays in one sub-block the
 * 16 scales form one vector per super-block, applied once per 256 columns. The words and scales are 6.625 bits per weight (the file: 6.5625).
 *
 * <p>Rows are stored in groups of four, and a group's super-blocks one after the other, {@link #STRIDE} bytes
 * each, so that a 4-row kernel reads the matrix as one stream in address order. A super-block's stride holds its
 * words, 768 bytes (12 cache lines, 64-byte aligned; word vector i of row {@code 4G + r} at {@code 256i + 64r}),
 * then its scales, 80 bytes (4 rows × 16 signed bytes, then the 4 rows' d as floats), then 48 spare bytes to the
 * next cache line: 7 bits per weight, 6.7% more than the file. Measured on a Zen 5 (from DRAM, one thread): with
 * all of a group's scales in a region of their own after its words, two interleaved streams, the kernel ran
 * slower than the file's layout; Zen's prefetchers keep up only with lines touched in address order.
 * Rows past {@link #rows()} up to a multiple of four are zero quants with zero scales (they contribute 0). 64 spare
 * bytes end the segment so that a full-width load at the last tile stays inside it.
 */
public record RepackedQ6K(int rowLength, int rows, MemorySegment data) implements RepackedMatrix {
    /** Columns per super-block. */
    public static final int QK_K = 256;
    /** Bytes of one tile's words: 4 rows × 3 vectors × 16 words. */
    public static final int TILE = 768;
    /** Bytes from a row's word vector i to its vector i + 1 within a tile (the 4 rows' vectors i lie between). */
    public static final int VECTOR_STRIDE = 256;
    /** Bytes of one tile's scales: 4 rows × 16 signed bytes, then 4 floats d. */
    public static final int SCALES = 80;
    /** Bytes of one super-block of a group: its words, its scales, padding to a cache line. */
    public static final int STRIDE = 896;
    /** Offset of the rows' d within a tile's scales. */
    public static final int D = 64;
    private static final int Q6_K_BYTES = 210;
    private static final ValueLayout.OfShort F16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /** Whether {@code t} can be repacked: a 2-D Q6_K matrix. */
    public static boolean repackable(Tensor t) {
        return t.type() == GGMLType.Q6_K && t.ne().length == 2;
    }

    /** Allocates a zeroed {@code rows × n} matrix in {@code arena}. */
    public static RepackedQ6K allocate(Arena arena, int n, int rows) {
        if (n <= 0 || n % QK_K != 0) throw new IllegalArgumentException("Q6_K row length " + n + " is not a positive multiple of " + QK_K);
        if (rows < 0) throw new IllegalArgumentException("negative row count " + rows);
        MemorySegment seg = ZeroedMemory.allocate(arena, Math.addExact(Math.multiplyExact((rows + 3L) / 4, groupBytes(n / QK_K)), 64), 64);
        return new RepackedQ6K(n, rows, seg);
    }

    @Override
    public GGMLType type() {
        return GGMLType.Q6_K;
    }

    /** Super-blocks per row. */
    public int superBlocks() {
        return rowLength / QK_K;
    }

    @Override
    public long rowBytes() {
        return groupBytes() / 4;
    }

    /** Bytes of one group of four rows: its super-blocks, {@link #STRIDE} bytes each. */
    public long groupBytes() {
        return groupBytes(superBlocks());
    }

    private static long groupBytes(int superBlocks) {
        return (long) superBlocks * STRIDE;
    }

    /**
     * Byte offset of row {@code r}'s first word vector of super-block {@code s}; the others follow at {@link #VECTOR_STRIDE}
     * steps (a group's super-blocks are {@link #STRIDE} apart).
     */
    public long wordsOffset(int r, int s) {
        return (r >> 2) * groupBytes() + (long) s * STRIDE + 64L * (r & 3);
    }

    /**
     * Byte offset of the scales of the tile holding row {@code r}'s super-block {@code s} (row r's 16 bytes at
     * {@code 16·(r & 3)}), right after that super-block's words.
     */
    public long scalesOffset(int r, int s) {
        return (r >> 2) * groupBytes() + (long) s * STRIDE + TILE;
    }

    @Override
    public void repackRows(Tensor src, int from, int to) {
        if (src.type() != GGMLType.Q6_K || src.rowLength() != rowLength || src.rows() != rows)
            throw new IllegalArgumentException("cannot repack " + src.name() + " " + src.type() + " " + src.shapeString() + " into Q6_K " + rows + "×" + rowLength);
        byte[] block = new byte[Q6_K_BYTES];
        MemorySegment blockSeg = MemorySegment.ofArray(block);
        int[] q = new int[QK_K], words = new int[48];
        for (int r = from; r < to; r++) {
            for (int s = 0; s < superBlocks(); s++) {
                MemorySegment.copy(src.data(), src.rowOffset(r) + (long) s * Q6_K_BYTES, blockSeg, 0, Q6_K_BYTES);
                unpack(block, q);
                for (int i = 0; i < 3; i++) {
                    for (int j = 0; j < 16; j++) {
                        int w = 0;
                        for (int k = 0; k < 5; k++) w |= q[16 * j + 5 * i + k] << (6 * k);
                        words[16 * i + j] = w | ((q[16 * j + 15] >> (2 * i)) & 3) << 30;
                    }
                }
                for (int i = 0; i < 3; i++) MemorySegment.copy(words, 16 * i, data, I32, wordsOffset(r, s) + (long) VECTOR_STRIDE * i, 16);
                long so = scalesOffset(r, s);
                MemorySegment.copy(blockSeg, 192, data, so + 16L * (r & 3), 16);
                data.set(F32, so + D + 4L * (r & 3), Float.float16ToFloat(blockSeg.get(F16, 208)));
            }
        }
    }

    /** The 256 unsigned 6-bit quants of one Q6_K block in column order (ggml's dequantize_row_q6_K, without the −32). */
    static void unpack(byte[] b, int[] q) {
        for (int h = 0; h < 2; h++) {
            int ql = 64 * h, qh = 128 + 32 * h, y = 128 * h;
            for (int l = 0; l < 32; l++) {
                int a = b[ql + l] & 0xFF, c = b[ql + l + 32] & 0xFF, hb = b[qh + l] & 0xFF;
                q[y + l] = (a & 0xF) | ((hb & 3) << 4);
                q[y + l + 32] = (c & 0xF) | (((hb >> 2) & 3) << 4);
                q[y + l + 64] = (a >> 4) | (((hb >> 4) & 3) << 4);
                q[y + l + 96] = (c >> 4) | (((hb >> 6) & 3) << 4);
            }
        }
    }

    /** Quant (0..63, before the −32) of row {@code r}, column {@code col}. */
    public int quant(int r, int col) {
        int s = col / QK_K, j = col % QK_K / 16, p = col % 16;
        long wo = wordsOffset(r, s) + 4L * j;
        if (p < 15) return (data.get(I32, wo + (long) VECTOR_STRIDE * (p / 5)) >>> (6 * (p % 5))) & 63;
        int v = 0;
        for (int i = 0; i < 3; i++) v |= (data.get(I32, wo + (long) VECTOR_STRIDE * i) >>> 30) << (2 * i);
        return v;
    }

    /** Scale {@code d·sc} of row {@code r}'s sub-block {@code b} (columns 16b..16b+15), formed as Q6_K's dequantization forms it. */
    public float scale(int r, int b) {
        long so = scalesOffset(r, b / 16);
        return data.get(F32, so + D + 4L * (r & 3)) * data.get(ValueLayout.JAVA_BYTE, so + 16L * (r & 3) + b % 16);
    }

    /** The dequantized value of row {@code r}, column {@code col}: {@code (d·sc)·(q − 32)}, bit for bit Q6_K's. */
    public float value(int r, int col) {
        return scale(r, col / 16) * (quant(r, col) - 32);
    }
}
