package org.powerinfer4j.engine.gguf;

import java.io.IOException;
import java.nio.file.Path;

/**
 * A GGUF file is malformed. The message names the file, the field and the byte offset, on one line: names read
 * from a corrupt file (keys, tensor names) may hold any bytes, so control characters are escaped and long ones cut.
 */
public final class GGUFFormatException extends IOException {
    private static final int MAX_FIELD_CHARS = 120;
    private final long offset;

    public GGUFFormatException(Path file, String field, long offset, String problem) {
        super(printable(String.valueOf(file.getFileName()), MAX_FIELD_CHARS) + ": " + printable(field, MAX_FIELD_CHARS)
                + " at byte " + offset + ": " + printable(problem, 4 * MAX_FIELD_CHARS));
        this.offset = offset;
    }

    /** Byte offset in the file where the problem was found. */
    public long offset() {
        return offset;
    }

    /**
     * {@code s} safe to print on one line: control and line-separator characters as {@code \n}, {@code \xNN} or
     * {@code \\uNNNN}, and at most {@code max} characters (then {@code ...}). For any text that comes from a file.
     */
    public static String printable(String s, int max) {
        StringBuilder sb = new StringBuilder(Math.min(s.length(), max) + 8);
        for (int i = 0; i < s.length(); i++) {
            if (sb.length() >= max) return sb.append("...").toString();
            char c = s.charAt(i);
            if (c == '\n') sb.append("\\n");
            else if (c == '\r') sb.append("\\r");
            else if (c == '\t') sb.append("\\t");
            else if (c < 0x20 || c == 0x7f) sb.append(String.format("\\x%02x", (int) c));
            else if (c == 0x85 || c == 0x2028 || c == 0x2029 || Character.isISOControl(c)) sb.append(String.format("\\u%04x", (int) c));
            else sb.append(c);
        }
        return sb.toString();
    }
}
