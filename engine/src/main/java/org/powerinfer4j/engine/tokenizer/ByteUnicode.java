package org.powerinfer4j.engine.tokenizer;

/**
 * GPT-2's reversible byte ⇄ unicode mapping (llama.cpp {@code unicode_byte_to_utf8_map}): printable Latin-1 bytes
 * map to themselves, the other 68 bytes to U+0100.. in byte order, so every byte-level BPE token is printable text.
 */
final class ByteUnicode {
    private static final char[] BYTE_TO_CHAR = new char[256];
    private static final int[] CHAR_TO_BYTE = new int[0x200];

    static {
        java.util.Arrays.fill(CHAR_TO_BYTE, -1);
        int n = 0;
        for (int b = 0; b < 256; b++) {
            boolean printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
            char c = printable ? (char) b : (char) (256 + n++);
            BYTE_TO_CHAR[b] = c;
            CHAR_TO_BYTE[c] = b;
        }
    }

    private ByteUnicode() {}

    static String encode(byte[] bytes) {
        char[] c = new char[bytes.length];
        for (int i = 0; i < bytes.length; i++) c[i] = BYTE_TO_CHAR[bytes[i] & 0xFF];
        return new String(c);
    }

    static char encode(int b) {
        return BYTE_TO_CHAR[b & 0xFF];
    }

    /** The byte a code point stands for, or -1 when it is not one of the 256 mapped characters. */
    static int decode(int cp) {
        return cp >= 0 && cp < CHAR_TO_BYTE.length ? CHAR_TO_BYTE[cp] : -1;
    }
}
