package org.powerinfer4j.engine.placement;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Reads NumPy {@code .npy} arrays of one or two dimensions, little-endian, C order, in float32, float64, int64 or
 * int32 (the dtypes PowerInfer's activation statistics come in when exported from torch). Values come back as
 * doubles; a 1-D array is one row.
 */
public final class NpyReader {
    private NpyReader() {}

    private static final Pattern DESCR = Pattern.compile("'descr'\\s*:\\s*'([^']*)'");
    private static final Pattern FORTRAN = Pattern.compile("'fortran_order'\\s*:\\s*(True|False)");
    private static final Pattern SHAPE = Pattern.compile("'shape'\\s*:\\s*\\(([^)]*)\\)");

    /** The array as rows: shape (n) → one row of n; shape (r, n) → r rows. */
    public static double[][] read(Path path) throws IOException {
        byte[] all = Files.readAllBytes(path);
        ByteBuffer b = ByteBuffer.wrap(all).order(ByteOrder.LITTLE_ENDIAN);
        if (all.length < 10 || (all[0] & 0xff) != 0x93 || !new String(all, 1, 5, StandardCharsets.US_ASCII).equals("NUMPY"))
            throw new IOException(path.getFileName() + ": not a .npy file (bad magic)");
        int major = all[6];
        int headerLen, headerStart;
        if (major == 1) {
            headerLen = Short.toUnsignedInt(b.getShort(8));
            headerStart = 10;
        } else if (major == 2 || major == 3) {
            headerLen = b.getInt(8);
            headerStart = 12;
        } else throw new IOException(path.getFileName() + ": unsupported .npy version " + major);
        if (headerLen < 0 || headerStart + (long) headerLen > all.length) throw new IOException(path.getFileName() + ": truncated .npy header");
        String header = new String(all, headerStart, headerLen, StandardCharsets.ISO_8859_1);
        String descr = group(DESCR, header, path, "descr");
        if ("True".equals(group(FORTRAN, header, path, "fortran_order")))
            throw new IOException(path.getFileName() + ": Fortran-order arrays are not supported (save with C order)");
        String[] dims = group(SHAPE, header, path, "shape").split(",");
        long[] shape = java.util.Arrays.stream(dims).map(String::trim).filter(s -> !s.isEmpty()).mapToLong(Long::parseLong).toArray();
        if (shape.length < 1 || shape.length > 2) throw new IOException(path.getFileName() + ": expected 1 or 2 dimensions, got " + shape.length);
        int rows = shape.length == 1 ? 1 : Math.toIntExact(shape[0]);
        int cols = Math.toIntExact(shape[shape.length - 1]);
        int size;
        char kind;
        switch (descr) {
            case "<f4", "|f4" -> { size = 4; kind = 'f'; }
            case "<f8" -> { size = 8; kind = 'f'; }
            case "<i4" -> { size = 4; kind = 'i'; }
            case "<i8" -> { size = 8; kind = 'i'; }
            case "<u4" -> { size = 4; kind = 'u'; }
            default -> throw new IOException(path.getFileName() + ": unsupported dtype " + descr + " (float32/float64/int32/int64, little-endian)");
        }
        int data = headerStart + headerLen;
        if (data + (long) rows * cols * size > all.length) throw new IOException(path.getFileName() + ": truncated .npy data");
        double[][] out = new double[rows][cols];
        for (int r = 0; r < rows; r++)
            for (int c = 0; c < cols; c++) {
                int at = data + (r * cols + c) * size;
                out[r][c] = switch (kind) {
                    case 'f' -> size == 4 ? b.getFloat(at) : b.getDouble(at);
                    case 'i' -> size == 4 ? b.getInt(at) : (double) b.getLong(at);
                    default -> Integer.toUnsignedLong(b.getInt(at));
                };
            }
        return out;
    }

    private static String group(Pattern p, String header, Path path, String what) throws IOException {
        Matcher m = p.matcher(header);
        if (!m.find()) throw new IOException(path.getFileName() + ": .npy header has no " + what);
        return m.group(1);
    }

    /** Writes a 1-D or 2-D float32 {@code .npy} (tests and interchange). */
    public static void writeFloat32(Path path, float[][] rows, boolean oneDimensional) throws IOException {
        int cols = rows.length == 0 ? 0 : rows[0].length;
        String shape = oneDimensional ? "(" + cols + ",)" : "(" + rows.length + ", " + cols + ")";
        String h = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
        int total = 10 + h.length() + 1;
        int pad = (64 - total % 64) % 64;
        h = h + " ".repeat(pad) + "\n";
        ByteBuffer b = ByteBuffer.allocate(10 + h.length() + 4 * rows.length * cols).order(ByteOrder.LITTLE_ENDIAN);
        b.put((byte) 0x93).put("NUMPY".getBytes(StandardCharsets.US_ASCII)).put((byte) 1).put((byte) 0);
        b.putShort((short) h.length()).put(h.getBytes(StandardCharsets.US_ASCII));
        for (float[] r : rows) for (float v : r) b.putFloat(v);
        Files.write(path, b.array());
    }
}
