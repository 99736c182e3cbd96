package org.powerinfer4j.engine.tokenizer;

/** Open-addressing long → int map (merge ranks by token-id pair, adjacent code point pairs); -1 for absent. */
final class LongIntMap {
    private final long[] keys;
    private final int[] vals;
    private final boolean[] used;
    private final int mask;

    LongIntMap(int expected) {
        int cap = Integer.highestOneBit(Math.max(4, expected) * 2) * 2;
        keys = new long[cap];
        vals = new int[cap];
        used = new boolean[cap];
        mask = cap - 1;
    }

    private int slot(long k) {
        long h = k * 0x9E3779B97F4A7C15L;
        return (int) (h ^ (h >>> 32)) & mask;
    }

    void putIfAbsent(long k, int v) {
        int p = slot(k);
        while (used[p]) {
            if (keys[p] == k) return;
            p = (p + 1) & mask;
        }
        used[p] = true;
        keys[p] = k;
        vals[p] = v;
    }

    int get(long k) {
        for (int p = slot(k); used[p]; p = (p + 1) & mask) if (keys[p] == k) return vals[p];
        return -1;
    }
}
