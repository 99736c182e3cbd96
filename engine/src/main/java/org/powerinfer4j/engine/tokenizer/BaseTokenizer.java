package org.powerinfer4j.engine.tokenizer;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.HashMap;
import java.util.List;

/**
 * What SentencePiece and byte-level BPE share in llama.cpp: splitting off special tokens
 * ({@code tokenizer_st_partition}), the token-to-piece cache and {@code llama_detokenize}.
 */
abstract sealed class BaseTokenizer implements Tokenizer permits SpmTokenizer, BpeTokenizer {
    final Vocab vocab;
    /** Each token rendered with special tokens shown ({@code token_to_piece_for_cache(id, true)}). */
    private final byte[][] pieces;
    private final Trie specialTrie = new Trie();
    private final BitSet specialFirstChars = new BitSet();

    BaseTokenizer(Vocab vocab) {
        this.vocab = vocab;
        this.pieces = new byte[vocab.size()][];
        for (int id = 0; id < vocab.size(); id++) pieces[id] = renderPiece(id);
        int[] special = vocab.specialTokens;
        for (int rank = 0; rank < special.length; rank++) {
            String t = vocab.tokens[special[rank]];
            Trie node = specialTrie;
            for (int i = 0; i < t.length(); i++) node = node.next.computeIfAbsent(t.charAt(i), c -> new Trie());
            node.rank = rank;
            specialFirstChars.set(t.charAt(0));
        }
    }

    /** The piece of a token with special tokens rendered (llama.cpp {@code token_to_piece} without cache). */
    abstract byte[] renderPiece(int id);

    /** Tokenizes the fragments (text runs and already-recognised special tokens) into {@code out}. */
    abstract void encodeFragments(String text, List<Fragment> fragments, boolean addSpecial, IntList out);

    /** A run of raw text ({@code token < 0}) or one special token found in the text. */
    record Fragment(int token, int offset, int length) {
        boolean isText() {
            return token < 0;
        }
    }

    private static final class Trie {
        final HashMap<Character, Trie> next = new HashMap<>();
        int rank = -1;
    }

    @Override
    public final int[] encode(String text, boolean addSpecial, boolean parseSpecial) {
        return encode(text, addSpecial, parseSpecial, null);
    }

    @Override
    public final int[] encode(String text, boolean addSpecial, boolean parseSpecial, int[][] literalRanges) {
        String t = Unicode.sanitize(text);
        if (t.length() != text.length()) literalRanges = null; // sanitizing changed offsets (only for unpaired surrogates)
        List<Fragment> fragments = t.isEmpty() ? List.of() : partition(t, parseSpecial, literalRanges);
        IntList out = new IntList(t.length() / 3 + 4);
        encodeFragments(t, fragments, addSpecial, out);
        return out.toArray();
    }

    /**
     * llama.cpp's {@code tokenizer_st_partition}: for each special token, longest first, every text fragment is
     * cut at each occurrence (left to right). Control and unknown tokens take part only when {@code parseSpecial};
     * user-defined tokens always do. LSTRIP/RSTRIP tokens eat the ASCII whitespace beside them. Tokens that do not
     * occur in the text at all are skipped up front (one trie scan), which keeps vocabularies with thousands of
     * added tokens fast on long inputs without changing the result.
     */
    List<Fragment> partition(String text, boolean parseSpecial) {
        return partition(text, parseSpecial, null);
    }

    /** As {@link #partition(String, boolean)}; no special token is recognised inside {@code literalRanges} ([from, to) pairs). */
    List<Fragment> partition(String text, boolean parseSpecial, int[][] literalRanges) {
        List<Fragment> buffer = new ArrayList<>();
        buffer.add(new Fragment(-1, 0, text.length()));
        int[] special = vocab.specialTokens;
        if (special.length == 0) return buffer;
        BitSet present = presentSpecialTokens(text);
        for (int rank = present.nextSetBit(0); rank >= 0; rank = present.nextSetBit(rank + 1)) {
            int id = special[rank];
            int attr = vocab.attrs[id];
            if (!parseSpecial && (attr & (Vocab.ATTR_CONTROL | Vocab.ATTR_UNKNOWN)) != 0) continue;
            String tok = vocab.tokens[id];
            List<Fragment> next = new ArrayList<>(buffer.size() + 4);
            for (Fragment f : buffer) {
                if (!f.isText()) {
                    next.add(f);
                    continue;
                }
                int base = f.offset(), end = f.offset() + f.length();
                while (true) {
                    int match = text.indexOf(tok, base, end);
                    while (match >= 0 && overlaps(literalRanges, match, match + tok.length())) match = text.indexOf(tok, match + 1, end);
                    if (match < 0) {
                        if (base < end) next.add(new Fragment(-1, base, end - base));
                        break;
                    }
                    int leftLen = match - base;
                    if ((attr & Vocab.ATTR_LSTRIP) != 0) while (leftLen > 0 && isSpace(text.charAt(base + leftLen - 1))) leftLen--;
                    if (leftLen > 0) next.add(new Fragment(-1, base, leftLen));
                    next.add(new Fragment(id, match, tok.length()));
                    int right = match + tok.length();
                    if (right >= end) break;
                    if ((attr & Vocab.ATTR_RSTRIP) != 0) while (right < end && isSpace(text.charAt(right))) right++;
                    base = right;
                }
            }
            buffer = next;
        }
        return buffer;
    }

    private static boolean overlaps(int[][] ranges, int from, int to) {
        if (ranges == null) return false;
        for (int[] r : ranges) if (from < r[1] && r[0] < to) return true;
        return false;
    }

    /** C {@code isspace} in the "C" locale, which llama.cpp uses for lstrip/rstrip. */
    private static boolean isSpace(char c) {
        return c == ' ' || (c >= '\t' && c <= '\r');
    }

    /** Ranks (indexes into {@code vocab.specialTokens}) of the special tokens that occur anywhere in the text. */
    private BitSet presentSpecialTokens(String text) {
        BitSet present = new BitSet();
        for (int i = 0, n = text.length(); i < n; i++) {
            if (!specialFirstChars.get(text.charAt(i))) continue;
            Trie node = specialTrie;
            for (int j = i; j < n; j++) {
                node = node.next.get(text.charAt(j));
                if (node == null) break;
                if (node.rank >= 0) present.set(node.rank);
            }
        }
        return present;
    }

    @Override
    public final String decode(int[] ids, boolean removeSpecial, boolean renderSpecial) {
        return new String(detokenize(ids, removeSpecial, renderSpecial), StandardCharsets.UTF_8);
    }

    /** llama.cpp's {@code llama_vocab::impl::detokenize}, on bytes, including the clean_spaces passes. */
    byte[] detokenize(int[] ids, boolean removeSpecial, boolean renderSpecial) {
        boolean removeSpace = vocab.addSpacePrefix;
        int from = 0, to = ids.length;
        if (removeSpecial && vocab.addBos && to > 0 && ids[0] == vocab.bos) {
            removeSpace = false;
            from++;
        }
        if (removeSpecial && vocab.addEos && to > from && ids[to - 1] == vocab.eos) to--;
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        for (int i = from; i < to; i++) {
            buf.writeBytes(tokenBytes(ids[i], renderSpecial, removeSpace));
            removeSpace = false;
        }
        byte[] text = buf.toByteArray();
        if (!vocab.cleanSpaces) return text;
        int total = cleanSpaces(text, text.length);
        return java.util.Arrays.copyOf(text, total);
    }

    /** The three clean-up passes of llama.cpp's detokenize, in place; returns the new length. */
    static int cleanSpaces(byte[] text, int total) {
        // first pass: " ?", " !", " .", " ," lose the space
        int total1 = total;
        total = total > 0 ? 1 : 0;
        for (int i = 1; i < total1; ++i) {
            byte x = text[i];
            if (text[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) total--;
            text[total++] = x;
        }
        // second pass: a single apostrophe between spaces loses both spaces
        int total2 = total;
        total = total > 0 ? 1 : 0;
        for (int i = 1; i < total2; ++i) {
            byte x = text[i];
            if (x == '\'' && i + 1 < total2 && text[i - 1] == ' ' && text[i + 1] == ' ') {
                total--;
                text[++i] = 0;
            }
            text[total++] = x;
        }
        // third pass: " 's", " 'm", " 're", " 've" lose the space
        int total3 = total;
        total = total > 0 ? 1 : 0;
        for (int i = 1; i < total3; ++i) {
            byte x = text[i];
            if (text[i - 1] == ' ' && x == '\'' && i + 1 < total3) {
                byte x1 = text[i + 1];
                if (x1 == 's' || x1 == 'm') {
                    total--;
                } else if (x1 != 't' && x1 != 'd' && i + 2 < total3) {
                    byte x2 = text[i + 2];
                    if ((x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e')) total--;
                }
            }
            text[total++] = x;
        }
        return total;
    }

    @Override
    public final byte[] tokenBytes(int id, boolean renderSpecial, boolean sequenceStart) {
        checkId(id);
        if (!renderSpecial && (vocab.attrs[id] & (Vocab.ATTR_UNKNOWN | Vocab.ATTR_CONTROL)) != 0) return new byte[0];
        byte[] p = pieces[id];
        // llama.cpp: the first token of a detokenized sequence skips one leading space (add_space_prefix)
        if (sequenceStart && vocab.addSpacePrefix && p.length > 0 && p[0] == ' ') return java.util.Arrays.copyOfRange(p, 1, p.length);
        return p.clone();
    }

    private void checkId(int id) {
        if (id < 0 || id >= vocab.size())
            throw new IllegalArgumentException("token id " + id + " is out of range (vocabulary has " + vocab.size() + " tokens)");
    }

    @Override
    public final String piece(int id) {
        checkId(id);
        return vocab.tokens[id];
    }

    @Override
    public final int tokenId(String piece) {
        return vocab.index.get(piece);
    }

    @Override
    public final TokenType tokenType(int id) {
        checkId(id);
        return vocab.types[id];
    }

    @Override
    public final boolean isControl(int id) {
        checkId(id);
        return (vocab.attrs[id] & Vocab.ATTR_CONTROL) != 0;
    }

    /** Token score (SentencePiece log-probability; 0 for BPE vocabularies without scores). */
    public final float score(int id) {
        checkId(id);
        return vocab.scores[id];
    }

    @Override
    public final int vocabSize() {
        return vocab.size();
    }

    @Override
    public final int bosId() {
        return vocab.bos;
    }

    @Override
    public final int eosId() {
        return vocab.eos;
    }

    @Override
    public final int eotId() {
        return vocab.eot;
    }

    @Override
    public final int unkId() {
        return vocab.unk;
    }

    @Override
    public final int padId() {
        return vocab.pad;
    }

    @Override
    public final boolean addBos() {
        return vocab.addBos;
    }

    @Override
    public final boolean addEos() {
        return vocab.addEos;
    }

    @Override
    public final boolean isEndOfGeneration(int id) {
        return id >= 0 && vocab.eog.get(id);
    }

    /** {@code tokenizer.ggml.model}: "llama" or "gpt2". */
    public final String model() {
        return vocab.model;
    }

    static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    /** The byte of a {@code <0xXX>} token (llama.cpp {@code token_to_byte}: hex digits at offset 3). */
    static int byteOfToken(String text) {
        if (text.length() < 5) return -1;
        try {
            return Integer.parseInt(text.substring(3, 5), 16);
        } catch (NumberFormatException e) {
            return -1;
        }
    }
}
