package org.powerinfer4j.engine.tokenizer;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;

/**
 * Byte-level BPE as llama.cpp's {@code llm_tokenizer_bpe}: the pre-tokenizer splits the text into words (each
 * mapped through GPT-2's byte-to-unicode table), then in each word adjacent symbols are merged lowest-rank-first
 * (ties: leftmost) using {@code tokenizer.ggml.merges} (rank = index) with a priority queue and a linked list.
 */
final class BpeTokenizer extends BaseTokenizer {
    private final BpePreTokenizer preTokenizer;
    private final boolean ignoreMerges;
    /** Rank of the merge (left id, right id) when both halves are tokens (the normal case). */
    private final LongIntMap idRanks;
    /** Rank of merges whose halves are not both tokens, keyed "left right" (kept for exactness; usually empty). */
    private final HashMap<String, Integer> textRanks = new HashMap<>();

    BpeTokenizer(Vocab vocab, BpePreTokenizer preTokenizer) {
        super(vocab);
        this.preTokenizer = preTokenizer;
        this.ignoreMerges = preTokenizer.spec().ignoreMerges();
        String[] merges = vocab.merges;
        idRanks = new LongIntMap(merges.length);
        for (int rank = 0; rank < merges.length; rank++) {
            String m = merges[rank];
            int sp = m.indexOf(' ', 1); // llama.cpp: word.find(' ', 1)
            String first = "", second = "";
            if (sp >= 0) {
                first = m.substring(0, sp);
                second = m.substring(sp + 1);
            }
            int a = vocab.index.get(first), b = vocab.index.get(second);
            // bpe_ranks.emplace keeps the first rank of a duplicated merge
            if (a >= 0 && b >= 0) idRanks.putIfAbsent(pair(a, b), rank);
            else textRanks.putIfAbsent(first + " " + second, rank);
        }
    }

    String preTokenizerName() {
        return preTokenizer.spec().name();
    }

    private static long pair(int a, int b) {
        return ((long) a << 32) | (b & 0xFFFFFFFFL);
    }

    @Override
    byte[] renderPiece(int id) {
        int attr = vocab.attrs[id];
        String text = vocab.tokens[id];
        if ((attr & (Vocab.ATTR_UNKNOWN | Vocab.ATTR_CONTROL | Vocab.ATTR_USER_DEFINED)) != 0) return utf8(text);
        if ((attr & Vocab.ATTR_NORMAL) != 0) return decodeText(text);
        if ((attr & Vocab.ATTR_BYTE) != 0) {
            int b = byteOfToken(text);
            return b < 0 ? new byte[0] : new byte[] {(byte) b};
        }
        return new byte[0];
    }

    /** llama.cpp's {@code llama_decode_text}: each character back to its byte; unmapped ones are spelled out. */
    private static byte[] decodeText(String text) {
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream(text.length());
        for (int i = 0; i < text.length(); ) {
            int cp = text.codePointAt(i);
            i += Character.charCount(cp);
            int b = ByteUnicode.decode(cp);
            if (b >= 0) {
                out.write(b);
            } else {
                StringBuilder sb = new StringBuilder("[UNK_BYTE_0x");
                for (byte u : new String(Character.toChars(cp)).getBytes(StandardCharsets.UTF_8)) sb.append(String.format("%02x", u & 0xFF));
                sb.append(text).append(']');
                out.writeBytes(utf8(sb.toString()));
            }
        }
        return out.toByteArray();
    }

    @Override
    void encodeFragments(String text, List<Fragment> fragments, boolean addSpecial, IntList out) {
        if (addSpecial && vocab.addBos) out.add(vocab.bos);
        Session session = new Session();
        // Merging is a pure function of the word, so repeated words reuse their ids (bounded memoisation;
        // llama.cpp recomputes them, with the same result).
        HashMap<String, int[]> cache = new HashMap<>();
        IntList wordIds = new IntList(16);
        for (Fragment f : fragments) {
            if (!f.isText()) {
                out.add(f.token());
                continue;
            }
            BpePreTokenizer.Words words = preTokenizer.words(text.substring(f.offset(), f.offset() + f.length()));
            for (int w = 0; w < words.count(); w++) {
                String word = words.encoded(w);
                int[] cached = cache.get(word);
                if (cached != null) {
                    for (int id : cached) out.add(id);
                    continue;
                }
                wordIds.clear();
                encodeWord(word, session, wordIds);
                if (word.length() <= MAX_CACHED_WORD && cache.size() < MAX_CACHE_ENTRIES) cache.put(word, wordIds.toArray());
                for (int i = 0; i < wordIds.size(); i++) out.add(wordIds.get(i));
            }
        }
        if (addSpecial && vocab.addEos) out.add(vocab.eos);
    }

    private static final int MAX_CACHED_WORD = 64;
    private static final int MAX_CACHE_ENTRIES = 1 << 16;

    /** Merges one pre-tokenized word. Symbols are single characters: the byte-mapped text is all BMP. */
    private void encodeWord(String word, Session session, IntList out) {
        if (ignoreMerges) { // llama3/tekken: a word that is a token is taken whole
            int id = vocab.index.get(word);
            if (id >= 0) {
                out.add(id);
                return;
            }
        }
        session.tokenize(word, out);
    }

    /** One word's merge state; the buffers are reused from word to word. */
    private final class Session {
        private String word;
        private int[] start = new int[16], len = new int[16], prev = new int[16], next = new int[16], ids = new int[16];
        private int[] bRank = new int[16], bLeft = new int[16], bRight = new int[16], bSize = new int[16];
        private int nBigrams;
        private final IntHeap queue = new IntHeap(this::before);

        void tokenize(String word, IntList out) {
            this.word = word;
            int n = word.length();
            if (n == 0) return;
            if (start.length < n) {
                int cap = Math.max(n, start.length * 2);
                start = new int[cap];
                len = new int[cap];
                prev = new int[cap];
                next = new int[cap];
                ids = new int[cap];
            }
            for (int i = 0; i < n; i++) {
                start[i] = i;
                len[i] = 1;
                prev[i] = i - 1;
                next[i] = i + 1 == n ? -1 : i + 1;
                ids[i] = vocab.index.get(word, i, 1);
            }
            nBigrams = 0;
            queue.clear();
            for (int i = 1; i < n; i++) addBigram(i - 1, i);
            while (!queue.isEmpty()) {
                int b = queue.pop();
                int left = bLeft[b], right = bRight[b];
                // outdated: one side was merged away or grew since the pair was queued (llama.cpp compares texts)
                if (len[left] == 0 || len[right] == 0 || len[left] + len[right] != bSize[b]) continue;
                len[left] += len[right];
                len[right] = 0;
                ids[left] = vocab.index.get(word, start[left], len[left]);
                next[left] = next[right];
                if (next[right] >= 0) prev[next[right]] = left;
                addBigram(prev[left], left);
                addBigram(left, next[left]);
            }
            for (int i = 0; i != -1; i = next[i]) {
                if (ids[i] >= 0) {
                    out.add(ids[i]);
                    continue;
                }
                // not a token: llama.cpp looks up each UTF-8 byte of the symbol as a one-byte token text; only
                // ASCII bytes can name a token, the rest are dropped
                for (byte b : word.substring(start[i], start[i] + len[i]).getBytes(StandardCharsets.UTF_8)) {
                    if (b >= 0) {
                        int t = vocab.index.get(String.valueOf((char) b));
                        if (t >= 0) out.add(t);
                    }
                }
            }
        }

        private void addBigram(int left, int right) {
            if (left == -1 || right == -1) return;
            int rank;
            if (ids[left] >= 0 && ids[right] >= 0) {
                rank = idRanks.get(pair(ids[left], ids[right]));
            } else {
                if (textRanks.isEmpty()) return;
                Integer r = textRanks.get(word.substring(start[left], start[left] + len[left]) + " "
                        + word.substring(start[right], start[right] + len[right]));
                rank = r == null ? -1 : r;
            }
            if (rank < 0) return;
            if (nBigrams == bRank.length) {
                int cap = nBigrams * 2;
                bRank = Arrays.copyOf(bRank, cap);
                bLeft = Arrays.copyOf(bLeft, cap);
                bRight = Arrays.copyOf(bRight, cap);
                bSize = Arrays.copyOf(bSize, cap);
            }
            int b = nBigrams++;
            bRank[b] = rank;
            bLeft[b] = left;
            bRight[b] = right;
            bSize[b] = len[left] + len[right];
            queue.push(b);
        }

        /** Queue order of llm_bigram_bpe::comparator: lowest rank first, then the leftmost pair. */
        private boolean before(int a, int b) {
            return bRank[a] < bRank[b] || (bRank[a] == bRank[b] && bLeft[a] < bLeft[b]);
        }
    }
}
