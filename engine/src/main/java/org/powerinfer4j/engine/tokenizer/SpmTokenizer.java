package org.powerinfer4j.engine.tokenizer;

import java.util.Arrays;
import java.util.List;

/**
 * SentencePiece BPE as llama.cpp's {@code llm_tokenizer_spm}: spaces become ▁, a dummy-prefix space starts the
 * text and every fragment after a special token, then adjacent symbols are merged best-score-first (ties: leftmost)
 * with a priority queue over symbol pairs and a linked list of symbols; symbols that are not tokens fall back to
 * {@code <0xXX>} byte tokens.
 */
final class SpmTokenizer extends BaseTokenizer {
    private static final char SPACE_MARK = '\u2581'; // ▁
    /** Byte-fallback token of each byte, or -1 (then UNK is used). */
    private final int[] byteTokens = new int[256];
    /** Every pair of adjacent code points that occurs inside some token's text. */
    private final LongIntMap tokenPairs;

    SpmTokenizer(Vocab vocab) {
        super(vocab);
        for (int b = 0; b < 256; b++) {
            int id = vocab.index.get(String.format("<0x%02X>", b));
            // llama.cpp's byte_to_token falls back to the byte itself as a one-character token
            if (id < 0 && b < 0x80) id = vocab.index.get(String.valueOf((char) b));
            byteTokens[b] = id;
        }
        tokenPairs = new LongIntMap(vocab.size() * 8);
        for (String t : vocab.tokens) {
            int prevCp = -1;
            for (int i = 0; i < t.length(); ) {
                int cp = t.codePointAt(i);
                i += Character.charCount(cp);
                if (prevCp >= 0) tokenPairs.putIfAbsent(pair(prevCp, cp), 1);
                prevCp = cp;
            }
        }
    }

    private static long pair(int a, int b) {
        return ((long) a << 32) | b;
    }

    @Override
    byte[] renderPiece(int id) {
        int attr = vocab.attrs[id];
        String text = vocab.tokens[id];
        if ((attr & (Vocab.ATTR_UNKNOWN | Vocab.ATTR_CONTROL | Vocab.ATTR_USER_DEFINED)) != 0) return utf8(text);
        if ((attr & Vocab.ATTR_NORMAL) != 0) return utf8(text.replace(SPACE_MARK, ' '));
        if ((attr & Vocab.ATTR_BYTE) != 0) {
            int b = byteOfToken(text);
            return b < 0 ? new byte[0] : new byte[] {(byte) b};
        }
        return new byte[0]; // unused/undefined tokens render as nothing, like control tokens
    }

    @Override
    void encodeFragments(String text, List<Fragment> fragments, boolean addSpecial, IntList out) {
        boolean prevSpecial = true; // the text start counts as "after a special token": it gets the dummy prefix
        Session session = new Session();
        if (addSpecial && vocab.addBos) out.add(vocab.bos);
        for (Fragment f : fragments) {
            if (f.isText()) {
                String frag = text.substring(f.offset(), f.offset() + f.length());
                String s = (vocab.addSpacePrefix && prevSpecial ? " " + frag : frag).replace(' ', SPACE_MARK);
                tokenizeIndependentRuns(s, session, out);
                prevSpecial = false;
            } else {
                out.add(f.token());
                prevSpecial = true;
            }
        }
        if (addSpecial && vocab.addEos) out.add(vocab.eos);
    }

    /**
     * llama.cpp runs one merge session over the whole fragment. Between two adjacent code points that never
     * appear next to each other inside any token no merge can ever happen, so the symbols on either side evolve
     * independently: the queue's order (score, then position) restricted to one side is that side's own order.
     * Running one session per such run therefore gives exactly llama.cpp's result, while keeping the queue small
     * on long inputs (a 10 MB prompt would otherwise need a queue of tens of millions of pairs).
     */
    private void tokenizeIndependentRuns(String s, Session session, IntList out) {
        int runStart = 0, prevCp = -1;
        for (int i = 0; i < s.length(); ) {
            int cp = s.codePointAt(i);
            if (prevCp >= 0 && tokenPairs.get(pair(prevCp, cp)) < 0) {
                session.tokenize(s, runStart, i, out);
                runStart = i;
            }
            prevCp = cp;
            i += Character.charCount(cp);
        }
        session.tokenize(s, runStart, s.length(), out);
    }

    /**
     * One {@code llm_tokenizer_spm_session} over {@code text[from, to)}: symbols are code points in a doubly
     * linked list; the buffers are reused from run to run.
     */
    private final class Session {
        private String text;
        private int[] start = new int[16], len = new int[16], prev = new int[16], next = new int[16];
        // bigram queue: parallel arrays + a binary heap of bigram indexes
        private float[] bScore = new float[16];
        private int[] bLeft = new int[16], bRight = new int[16], bSize = new int[16];
        private int nBigrams;
        private final IntHeap queue = new IntHeap(this::before);

        void tokenize(String text, int from, int to, IntList out) {
            this.text = text;
            int n = text.codePointCount(from, to);
            if (start.length < n) {
                int cap = Math.max(n, start.length * 2);
                start = new int[cap];
                len = new int[cap];
                prev = new int[cap];
                next = new int[cap];
            }
            for (int i = 0, off = from; i < n; i++) {
                int cl = Character.charCount(text.codePointAt(off));
                start[i] = off;
                len[i] = cl;
                off += cl;
                prev[i] = i - 1;
                next[i] = off == to ? -1 : i + 1;
            }
            nBigrams = 0;
            queue.clear();
            tokenize(n, out);
        }

        private void tokenize(int n, IntList out) {
            if (n == 0) return;
            for (int i = 1; i < n; i++) tryAddBigram(i - 1, i);
            while (!queue.isEmpty()) {
                int b = queue.pop();
                int left = bLeft[b], right = bRight[b];
                // skip bigrams made stale by an earlier merge
                if (len[left] == 0 || len[right] == 0 || len[left] + len[right] != bSize[b]) continue;
                len[left] += len[right];
                len[right] = 0;
                next[left] = next[right];
                if (next[right] >= 0) prev[next[right]] = left;
                tryAddBigram(prev[left], left);
                tryAddBigram(left, next[left]);
            }
            for (int i = 0; i != -1; i = next[i]) resegment(i, out);
        }

        /**
         * llama.cpp's resegment: a symbol that is a token is emitted; otherwise it would be split back through the
         * rev_merge map, but that map only ever records texts that are tokens (try_add_bigram returns before
         * recording anything else), so a non-token symbol is never found there and always goes out as bytes.
         */
        private void resegment(int sym, IntList out) {
            int id = vocab.index.get(text, start[sym], len[sym]);
            if (id >= 0) {
                out.add(id);
                return;
            }
            byte[] bytes = utf8(text.substring(start[sym], start[sym] + len[sym]));
            boolean unknownEmitted = false;
            for (byte b : bytes) {
                int t = byteTokens[b & 0xFF];
                if (t >= 0) out.add(t);
                else if (!unknownEmitted) { // vocabulary without byte tokens: one UNK for the symbol
                    if (vocab.unk < 0) throw new IllegalStateException("vocabulary has neither a byte token for 0x"
                            + Integer.toHexString(b & 0xFF) + " nor an unknown token");
                    out.add(vocab.unk);
                    unknownEmitted = true;
                }
            }
        }

        private void tryAddBigram(int left, int right) {
            if (left == -1 || right == -1) return;
            int size = len[left] + len[right];
            int id = vocab.index.get(text, start[left], size);
            if (id < 0) return;
            if (nBigrams == bScore.length) {
                int cap = nBigrams * 2;
                bScore = Arrays.copyOf(bScore, cap);
                bLeft = Arrays.copyOf(bLeft, cap);
                bRight = Arrays.copyOf(bRight, cap);
                bSize = Arrays.copyOf(bSize, cap);
            }
            int b = nBigrams++;
            bScore[b] = vocab.scores[id];
            bLeft[b] = left;
            bRight[b] = right;
            bSize[b] = size;
            queue.push(b);
        }

        /** Queue order of llm_bigram_spm::comparator: higher score first, then the leftmost pair. */
        private boolean before(int a, int b) {
            return bScore[a] > bScore[b] || (bScore[a] == bScore[b] && bLeft[a] < bLeft[b]);
        }
    }
}
