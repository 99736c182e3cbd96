package org.powerinfer4j.engine.tensor;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * A Q4_0 or Q4_K matrix re-laid out for the CPU's vector units (what llama.cpp calls a "repacked" CPU buffer),
 * built once at model load from the mapped GGUF tensor and owned by the model's arena. Same quants, and scales
 * computed as the type's dequantization computes them, so every dequantized value is bit-identical to the
 * original type's; only the order in memory changes.
 *
 * <p>Why: ggml's Q4_0 block (2-byte scale + 16 bytes holding elements j and j+16 in one byte) has to be widened
 * byte → int → float with cross-lane shuffles before the FMA, and its 18-byte stride defeats wide aligned loads.
 * Here each row is cut into chunks of 128 columns stored as 16 little-endian 32-bit words, word {@code j} holding
 * the nibbles of columns {@code 8j..8j+7} (column {@code 8j+k} in bits {@code 4k..4k+3}). A vector of words then
 * yields 16 columns per shift-and-convert, with no shuffle at all; the activations are permuted once per product
 * to match ({@link #permute}). Lane {@code j}'s columns all lie in block {@code j/4}, so a block's scale applies
 * to whole lanes.
 *
 * <p>Q4_K ({@link #mins()}): every 32-column sub-block has its own scale {@code d·sc} and min {@code dmin·m}, 6-bit
 * integers under two F16 super-block factors. The tile keeps them so — the 6-bit values as bytes, d and dmin as
 * floats — and the kernels form each product as Q4_K's dequantization does (one float multiply), so a value is
 * {@code scale·q − min} with q in 0..15, bit for bit; Q4_K's 64-column groups (low nibbles, then high nibbles, of 32
 * bytes) become the same words as Q4_0's blocks. Its tile is then Q4_0's size: 5 bits per weight against the
 * file's 4.5 (with the products stored as floats it was 6, and decode read a third more than the file).
 *
 * <p>Rows are stored in groups of four, chunk by chunk, so a 4-row kernel reads the matrix as one sequential
 * stream (the hardware prefetchers keep up with that; four separate row streams left decode waiting on DRAM).
 * Tile {@code (group G, chunk c)} is 320 bytes (5 cache lines) at {@code (G·chunks + c)·320}:
 * <pre>
 *   [row 4G: 16 words][row 4G+1: 16 words][row 4G+2][row 4G+3][16 floats: 4 block scales of each row, row order]
 *   Q4_K: [the 4 rows' 64 words][16 bytes sc][16 bytes m][4 floats d][4 floats dmin], each in row order
 * </pre>
 * Scales are widened from F16 to F32 (exact). Rows past {@link #rows()} up to a multiple of four, and columns
 * past {@link #rowLength()} up to a multiple of 128, are zero quants with zero scales: they contribute exactly 0
 * to any product, so every Q4_0 matrix can be repacked. The segment ends with 64 spare bytes so that a full-width
 * scale load at the last tile stays inside it.
 */
public record RepackedQ4(int rowLength, int rows, int paddedLength, boolean mins, MemorySegment data) implements RepackedMatrix {
    /** Columns per chunk: 16 words × 8 nibbles. */
    public static final int CHUNK = 128;
    /** 32-bit words per chunk. */
    public static final int WORDS = 16;
    /** Bytes of one tile: 4 rows × 64 bytes of nibbles + 64 bytes of scales (Q4_0: 16 floats; Q4_K: see {@link #K_SCALES}). */
    public static final int TILE = 320;
    /** Offset of Q4_0's float scales within a tile. */
    public static final int SCALES = 256;
    /**
     * Q4_K's tile tail: the 6-bit sub-block scales and mins as bytes (row r's 4 at {@code 4r}), then the rows'
     * super-block factors d and dmin as floats (row r's at {@code 4r}); a scale is {@code d·sc} and a min
     * {@code dmin·m}, one float product each, as Q4_K's dequantization forms them.
     */
    public static final int K_SCALES = 256, K_MINS = 272, K_D = 288, K_DMIN = 304;
    private static final int QK = 32, Q4_0_BYTES = 18, QK_K = 256, Q4_K_BYTES = 144;
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

    /** Bytes of one tile of this matrix. */
    public int tile() {
        return TILE;
    }

    /** The ggml type these are the weights of. */
    public GGMLType type() {
        return mins ? GGMLType.Q4_K : GGMLType.Q4_0;
    }

    /** Whether {@code t} can be repacked: a Q4_0 or Q4_K matrix. */
    public static boolean repackable(Tensor t) {
        return (t.type() == GGMLType.Q4_0 || t.type() == GGMLType.Q4_K) && t.ne().length == 2;
    }

    /** Bytes per weight row in this layout (nibbles, scales and mins), for footprints. */
    public long rowBytes() {
        return (long) chunks() * tile() / 4;
    }

    /** Byte offset of row {@code r}'s 16 words of chunk {@code c}. */
    public long wordsOffset(int r, int c) {
        return tileOffset(r, c) + 64L * (r & 3);
    }

    /** Byte offset of row {@code r}'s 4 block scales (floats) of chunk {@code c} (Q4_0). */
    public long scalesOffset(int r, int c) {
        return tileOffset(r, c) + SCALES + 16L * (r & 3);
    }

    /** Byte offset of the tile holding row {@code r}'s chunk {@code c}. */
    public long tileOffset(int r, int c) {
        return ((long) (r >> 2) * chunks() + c) * TILE;
    }

    /** Allocates a zeroed {@code rows × n} Q4_0 matrix in {@code arena}. */
    public static RepackedQ4 allocate(Arena arena, int n, int rows) {
        return allocate(arena, GGMLType.Q4_0, n, rows);
    }

    /** Allocates a zeroed {@code rows × n} matrix for weights of {@code type} (Q4_0 or Q4_K) in {@code arena}. */
    public static RepackedQ4 allocate(Arena arena, GGMLType type, int n, int rows) {
        if (type != GGMLType.Q4_0 && type != GGMLType.Q4_K) throw new IllegalArgumentException("only Q4_0 and Q4_K repack, not " + type);
        int qk = type == GGMLType.Q4_0 ? QK : QK_K;
        if (n <= 0 || n % qk != 0) throw new IllegalArgumentException(type + " row length " + n + " is not a positive multiple of " + qk);
        if (rows < 0) throw new IllegalArgumentException("negative row count " + rows);
        int np = paddedLength(n);
        long groups = (rows + 3L) / 4;
        boolean mins = type == GGMLType.Q4_K;
        MemorySegment seg = ZeroedMemory.allocate(arena, Math.addExact(Math.multiplyExact(groups * (np / CHUNK), (long) TILE), 64), 64);
        return new RepackedQ4(n, rows, np, mins, seg);
    }

    /** Repacks rows {@code [from, to)} of the Q4_0 or Q4_K tensor {@code src} (same type and shape) into this matrix. */
    public void repackRows(Tensor src, int from, int to) {
        if (src.type() != type() || src.rowLength() != rowLength || src.rows() != rows)
            throw new IllegalArgumentException("cannot repack " + src.name() + " " + src.type() + " " + src.shapeString() + " into " + type() + " "
                    + rows + "×" + rowLength);
        if (mins) {
            repackQ4K(src, from, to);
            return;
        }
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

    /**
     * Q4_K rows: super-block {@code i} (256 columns, chunks 2i and 2i+1) holds sub-blocks {@code 8i..8i+7}; sub-block
     * {@code 2g} is the low nibbles and {@code 2g+1} the high nibbles of bytes {@code 32g..32g+31} of its quants, in
     * column order. Both chunks' tiles carry the super-block's d and dmin (widened from F16, exact) beside their
     * sub-blocks' 6-bit scales and mins.
     */
    private void repackQ4K(Tensor src, int from, int to) {
        int ns = rowLength / QK_K;
        byte[] row = new byte[ns * Q4_K_BYTES];
        MemorySegment rowSeg = MemorySegment.ofArray(row);
        int[] words = new int[chunks() * WORDS];
        byte[] sc = new byte[chunks() * 4], mn = new byte[chunks() * 4];
        float[] d = new float[chunks()], dmin = new float[chunks()];
        for (int r = from; r < to; r++) {
            MemorySegment.copy(src.data(), src.rowOffset(r), rowSeg, 0, row.length);
            for (int i = 0; i < ns; i++) {
                long sb = (long) i * Q4_K_BYTES;
                d[2 * i] = d[2 * i + 1] = Float.float16ToFloat(rowSeg.get(F16, sb));
                dmin[2 * i] = dmin[2 * i + 1] = Float.float16ToFloat(rowSeg.get(F16, sb + 2));
                for (int j = 0; j < 8; j++) {
                    int b = 8 * i + j, sm = scaleMin(row, (int) sb + 4, j);
                    sc[b] = (byte) (sm & 0xFF);
                    mn[b] = (byte) (sm >> 8);
                    long q = sb + 16 + 32L * (j / 2);
                    int shift = 4 * (j % 2);
                    for (int w = 0; w < 4; w++) words[4 * b + w] = packNibbles(rowSeg.get(I64, q + 8L * w) >>> shift);
                }
            }
            for (int c = 0; c < chunks(); c++) {
                long t = tileOffset(r, c);
                int k = r & 3;
                MemorySegment.copy(words, c * WORDS, data, I32, wordsOffset(r, c), WORDS);
                MemorySegment.copy(sc, c * 4, data, ValueLayout.JAVA_BYTE, t + K_SCALES + 4L * k, 4);
                MemorySegment.copy(mn, c * 4, data, ValueLayout.JAVA_BYTE, t + K_MINS + 4L * k, 4);
                data.set(F32, t + K_D + 4L * k, d[c]);
                data.set(F32, t + K_DMIN + 4L * k, dmin[c]);
            }
        }
    }

    /** ggml's get_scale_min_k4: sub-block j's 6-bit scale and min from the 12 scale bytes at {@code q}, as {@code sc | m << 8}. */
    static int scaleMin(byte[] s, int q, int j) {
        int d, m;
        if (j < 4) {
            d = s[q + j] & 63;
            m = s[q + j + 4] & 63;
        } else {
            d = (s[q + j + 4] & 0xF) | (((s[q + j - 4] & 0xFF) >> 6) << 4);
            m = ((s[q + j + 4] & 0xFF) >> 4) | (((s[q + j] & 0xFF) >> 6) << 4);
        }
        return d | m << 8;
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
        if (!mins) return data.get(F32, scalesOffset(r, b / 4) + 4L * (b % 4));
        long t = tileOffset(r, b / 4);
        return data.get(F32, t + K_D + 4L * (r & 3)) * data.get(ValueLayout.JAVA_BYTE, t + K_SCALES + 4L * (r & 3) + b % 4);
    }

    /** Min of row {@code r}'s block {@code b} (Q4_K; 0 for Q4_0, whose offset of 8 is in the quant). */
    public float min(int r, int b) {
        if (!mins) return 0f;
        long t = tileOffset(r, b / 4);
        return data.get(F32, t + K_DMIN + 4L * (r & 3)) * data.get(ValueLayout.JAVA_BYTE, t + K_MINS + 4L * (r & 3) + b % 4);
    }

    /** The dequantized value of row {@code r}, column {@code col}: {@code (q − 8)·d} (Q4_0) or {@code scale·q − min} (Q4_K). */
    public float value(int r, int col) {
        int q = quant(r, col), b = col / 32;
        return mins ? scale(r, b) * q - min(r, b) : (q - 8) * scale(r, b);
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
