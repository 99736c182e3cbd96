package org.powerinfer4j.engine.tokenizer;

/**
 * Token text → id, looked up by a range of a string without allocating a substring (the merge loops probe
 * the vocabulary for every candidate pair). Open addressing over {@link String#hashCode()}-compatible hashes.
 */
final class TokenIndex {
    private final String[] keys;
    private final int[] hashes;
    private final int[] ids;
    private final int mask;

    /** Builds the index; when a text occurs twice the later id wins, as llama.cpp's {@code token_to_id[word] = i}. */
    TokenIndex(String[] tokens) {
        int cap = Integer.highestOneBit(Math.max(4, tokens.length) * 2) * 2;
        keys = new String[cap];
        hashes = new int[cap];
        ids = new int[cap];
        mask = cap - 1;
        for (int i = 0; i < tokens.length; i++) {
            String t = tokens[i];
            int h = t.hashCode();
            int p = mix(h) & mask;
            while (keys[p] != null && !(hashes[p] == h && keys[p].equals(t))) p = (p + 1) & mask;
            keys[p] = t;
            hashes[p] = h;
            ids[p] = i;
        }
    }

    private static int mix(int h) {
        return h ^ (h >>> 16) * 0x45d9f3b;
    }

    int get(String s) {
        return get(s, 0, s.length());
    }

    /** The id of {@code s[off, off+len)}, or -1. */
    int get(String s, int off, int len) {
        int h = 0;
        for (int i = off, end = off + len; i < end; i++) h = 31 * h + s.charAt(i);
        for (int p = mix(h) & mask; ; p = (p + 1) & mask) {
            String k = keys[p];
            if (k == null) return -1;
            if (hashes[p] == h && k.length() == len && k.regionMatches(0, s, off, len)) return ids[p];
        }
    }
}
