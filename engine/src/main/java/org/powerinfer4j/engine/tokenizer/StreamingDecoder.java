package org.powerinfer4j.engine.tokenizer;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;

/**
 * Turns a stream of token ids into text without ever splitting a UTF-8 character: bytes of an incomplete
 * multi-byte sequence are held back until the token that completes it arrives. Invalid bytes are emitted as
 * U+FFFD once it is clear they can never complete. Not thread-safe (one per stream).
 */
public final class StreamingDecoder {
    private final Tokenizer tokenizer;
    private final boolean renderSpecial;
    private boolean atSequenceStart;
    private final ByteArrayOutputStream pending = new ByteArrayOutputStream();

    /** A decoder for text that continues earlier output: control tokens render as nothing, no space is stripped. */
    public StreamingDecoder(Tokenizer tokenizer) {
        this(tokenizer, false, false);
    }

    /**
     * @param renderSpecial render control tokens' text
     * @param sequenceStart the first id starts a sequence: strip the SentencePiece dummy-prefix space from it,
     *                      as {@link Tokenizer#decode(int[], boolean)} does
     */
    public StreamingDecoder(Tokenizer tokenizer, boolean renderSpecial, boolean sequenceStart) {
        this.tokenizer = tokenizer;
        this.renderSpecial = renderSpecial;
        this.atSequenceStart = sequenceStart;
    }

    /** Adds a token and returns the text that is now complete (possibly empty). */
    public String accept(int id) {
        byte[] b = tokenizer.tokenBytes(id, renderSpecial, atSequenceStart);
        atSequenceStart = false;
        return acceptBytes(b);
    }

    /** Adds raw bytes and returns the text that is now complete (possibly empty). */
    public String acceptBytes(byte[] bytes) {
        pending.writeBytes(bytes);
        byte[] b = pending.toByteArray();
        int complete = completePrefixLength(b);
        if (complete == 0) return "";
        pending.reset();
        pending.write(b, complete, b.length - complete);
        return new String(b, 0, complete, StandardCharsets.UTF_8);
    }

    /** Emits whatever is held back (incomplete sequences become U+FFFD). */
    public String flush() {
        byte[] b = pending.toByteArray();
        pending.reset();
        return new String(b, StandardCharsets.UTF_8);
    }

    /** Length of the longest prefix that does not end inside a possibly-valid multi-byte sequence. */
    static int completePrefixLength(byte[] b) {
        int n = b.length;
        // look back at most 3 bytes for the lead byte of a trailing sequence
        for (int back = 1; back <= Math.min(3, n); back++) {
            int c = b[n - back] & 0xFF;
            if ((c & 0xC0) == 0x80) continue;             // continuation byte: keep looking for the lead
            int len = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xC2 && c < 0xE0 ? 2 : 1;
            return len > back ? n - back : n;            // lead found: hold back if its sequence is incomplete
        }
        return n;
    }
}
