package org.powerinfer4j.engine.tensor;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * A Q4_0 matrix re-laid out for the CPU's vector units (what llama.cpp calls a "repacked" CPU buffer), built once
 * at model load from the mapped GGUF tensor and owned by the model's arena. Same quants and scales, so every
 * dequantized value is bit-identical to Q4_0's; only the order in memory changes.
 *
 * <p>Why: ggml's Q4_0 block (2-byte scale + 16 bytes holding elements j and j+16 in one byte) has to be widened
 * byte → int → float with cross-lane shuffles before the FMA, and its 18-byte stride defeats wide aligned loads.
 * Here each row is cut into chunks of 128 columns stored as 16 little-endian 32-bit words, word {@code j} holding
 * the nibbles of columns {@code 8j..8j+7} (column {@code 8j+k} in bits {@code 4k..4k+3}). A vector of words then
 * yields 16 columns per shift-and-convert, with no shuffle at all; the activations are permuted once per product
 * to match ({@link #permute}). Lane {@code j}'s columns all lie in block {@code j/4}, so a block's scale applies
 * to whole lanes.
 *
 * <p>Rows are stored in groups of four, chunk by chunk, so a 4-row kernel reads the matrix as one sequential
 * stream (the hardware prefetchers keep up with that; four separate row streams left decode waiting on DRAM).
 * Tile {@code (group G, chunk c)} is 320 bytes (5 cache lines) at {@code (G·chunks + c)·320}:
 * <pre>
 *   [row 4G: 16 words][row 4G+1: 16 words][row 4G+2][row 4G+3][16 floats: 4 block scales of each row, row order]
 * </pre>
 * Scales are widened from F16 to F32 (exact). Rows past {@link #rows()} up to a multiple of four, and columns
 * past {@link #rowLength()} up to a multiple of 128, are zero quants with zero scales: they contribute exactly 0
 * to any product, so every Q4_0 matrix can be repacked. The segment ends with 64 spare bytes so that a full-width
 * scale load at the last tile stays inside it.
 */
public record RepackedQ4_0(int rowLength, int rows, int paddedLength, MemorySegment data) {
    /** Columns per chunk: 16 words × 8 nibbles. */
    public static final int CHUNK = 128;
    /** 32-bit words per chunk. */
    public static final int WORDS = 16;
    /** Bytes of one tile: 4 rows × 64 bytes of nibbles + 16 float scales. */
    public static final int TILE = 320;
    /** Offset of the scales within a tile. */
    public static final int SCALES = 256;
    private static final int QK = 32, Q4_0_BYTES = 18;
    private static final ValueLayout.OfShort F16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong I64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /** {@code n} rounded up to whole chunks. */
    public static int paddedLength(int n) {
        return (n + CHUNK - 1) / CHUNK * CHUNK;
    }

    /** Chunks per row. */
    public int chunks() {
        return paddedLength / CHUNK;
    }

    /** Bytes per weight row in this layout (nibbles and scales), for footprints. */
    public long rowBytes() {
        return (long) chunks() * TILE / 4;
    }

    /** Byte offset of row {@code r}'s 16 words of chunk {@code c}. */
    public long wordsOffset(int r, int c) {
        return ((long) (r >> 2) * chunks() + c) * TILE + 64L * (r & 3);
    }

    /** Byte offset of row {@code r}'s 4 block scales (floats) of chunk {@code c}. */
    public long scalesOffset(int r, int c) {
        return ((long) (r >> 2) * chunks() + c) * TILE + SCALES + 16L * (r & 3);
    }

    /** Allocates a zeroed {@code rows × n} matrix in {@code arena}. */
    public static RepackedQ4_0 allocate(Arena arena, int n, int rows) {
        if (n <= 0 || n % QK != 0) throw new IllegalArgumentException("Q4_0 row length " + n + " is not a positive multiple of " + QK);
        if (rows < 0) throw new IllegalArgumentException("negative row count " + rows);
        int np = paddedLength(n);
        long groups = (rows + 3L) / 4;
        MemorySegment seg = arena.allocate(Math.addExact(Math.multiplyExact(groups * (np / CHUNK), (long) TILE), 64), 64);
        return new RepackedQ4_0(n, rows, np, seg);
    }

    /** Repacks rows {@code [from, to)} of the Q4_0 tensor {@code src} (same shape) into this matrix. */
    public void repackRows(Tensor src, int from, int to) {
        if (src.type() != GGMLType.Q4_0 || src.rowLength() != rowLength || src.rows() != rows)
            throw new IllegalArgumentException("cannot repack " + src.name() + " " + src.type() + " " + src.shapeString() + " into " + rows + "×" + rowLength);
        int nb = rowLength / QK;
        byte[] row = new byte[nb * Q4_0_BYTES];
        MemorySegment rowSeg = MemorySegment.ofArray(row);
        int[] words = new int[chunks() * WORDS];           // padding words stay 0
        float[] scale = new float[chunks() * 4];           // padding scales stay 0
        for (int r = from; r < to; r++) {
            MemorySegment.copy(src.data(), src.rowOffset(r), rowSeg, 0, row.length);
            for (int b = 0; b < nb; b++) {
                long blk = (long) b * Q4_0_BYTES;
                scale[b] = Float.float16ToFloat(rowSeg.get(F16, blk));
                // block b = words 4b..4b+3: columns 0..15 are the low nibbles of bytes 0..15, 16..31 the high ones
                long lo0 = rowSeg.get(I64, blk + 2), lo1 = rowSeg.get(I64, blk + 10);
                words[4 * b] = packNibbles(lo0);
                words[4 * b + 1] = packNibbles(lo1);
                words[4 * b + 2] = packNibbles(lo0 >>> 4);
                words[4 * b + 3] = packNibbles(lo1 >>> 4);
            }
            for (int c = 0; c < chunks(); c++) {
                MemorySegment.copy(words, c * WORDS, data, I32, wordsOffset(r, c), WORDS);
                MemorySegment.copy(scale, c * 4, data, F32, scalesOffset(r, c), 4);
            }
        }
    }

    /** The low nibbles of the 8 bytes of {@code v} (byte k's in bits 4k..4k+3 of the result). */
    static int packNibbles(long v) {
        long x = v & 0x0F0F0F0F0F0F0F0FL;
        x = (x | (x >>> 4)) & 0x00FF00FF00FF00FFL;
        x = (x | (x >>> 8)) & 0x0000FFFF0000FFFFL;
        return (int) (x | (x >>> 16));
    }

    /** Quant (0..15) of row {@code r}, column {@code col} (a padded column reads 0). */
    public int quant(int r, int col) {
        int c = col / CHUNK, j = (col % CHUNK) / 8, k = col % 8;
        return (data.get(I32, wordsOffset(r, c) + j * 4L) >>> (4 * k)) & 0x0F;
    }

    /** Scale of row {@code r}'s block {@code b} (columns 32b..32b+31). */
    public float scale(int r, int b) {
        return data.get(F32, scalesOffset(r, b / 4) + 4L * (b % 4));
    }

    /** Position of column {@code col} in the permuted order the vector kernels work in. */
    public static int permutedIndex(int col) {
        int c = col / CHUNK, j = (col % CHUNK) / 8, k = col % 8;
        return c * CHUNK + WORDS * k + j;
    }

    /**
     * Writes {@code x[xOff..xOff+n)} in permuted order to {@code xp[xpOff..xpOff+paddedLength(n))} (zeros past n),
     * and (unless {@code xs8} is null) into {@code xs8[c·16 + j]} minus eight times the sum of the 8 activations
     * word j of chunk c multiplies: the dot kernels multiply raw quants q (0..15) and start each lane at that value,
     * which makes Σ (q − 8)·x.
     */
    public static void permute(float[] x, int xOff, int n, float[] xp, int xpOff, float[] xs8) {
        int np = paddedLength(n);
        for (int c = 0; c < np / CHUNK; c++) {
            for (int j = 0; j < WORDS; j++) {
                float s = 0f;
                for (int k = 0; k < 8; k++) {
                    int col = c * CHUNK + 8 * j + k;
                    float v = col < n ? x[xOff + col] : 0f;
                    xp[xpOff + c * CHUNK + WORDS * k + j] = v;
                    s += v;
                }
                if (xs8 != null) xs8[c * WORDS + j] = -8f * s;
            }
        }
    }
}
