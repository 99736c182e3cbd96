package org.powerinfer4j.engine.tokenizer;

import java.util.Arrays;

/** Growable int array (token output buffers). */
final class IntList {
    private int[] a;
    private int n;

    IntList(int capacity) {
        a = new int[Math.max(4, capacity)];
    }

    void add(int v) {
        if (n == a.length) a = Arrays.copyOf(a, a.length * 2);
        a[n++] = v;
    }

    void clear() {
        n = 0;
    }

    int size() {
        return n;
    }

    int get(int i) {
        return a[i];
    }

    int[] toArray() {
        return Arrays.copyOf(a, n);
    }
}
