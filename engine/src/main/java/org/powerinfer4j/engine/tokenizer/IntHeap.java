package org.powerinfer4j.engine.tokenizer;

import java.util.Arrays;

/**
 * A binary heap of int handles (bigram indexes) ordered by a caller-supplied "comes first" relation, without
 * boxing: the merge queues of both tokenizers ({@code llm_bigram_spm} / {@code llm_bigram_bpe} in llama.cpp).
 */
final class IntHeap {
    /** True when handle {@code a} must be popped before {@code b}. */
    @FunctionalInterface
    interface Order {
        boolean before(int a, int b);
    }

    private final Order order;
    private int[] heap = new int[16];
    private int size;

    IntHeap(Order order) {
        this.order = order;
    }

    boolean isEmpty() {
        return size == 0;
    }

    void clear() {
        size = 0;
    }

    void push(int b) {
        if (size == heap.length) heap = Arrays.copyOf(heap, size * 2);
        int i = size++;
        while (i > 0) {
            int parent = (i - 1) >>> 1;
            if (!order.before(b, heap[parent])) break;
            heap[i] = heap[parent];
            i = parent;
        }
        heap[i] = b;
    }

    int pop() {
        int top = heap[0];
        int last = heap[--size];
        int i = 0;
        while (true) {
            int c = 2 * i + 1;
            if (c >= size) break;
            if (c + 1 < size && order.before(heap[c + 1], heap[c])) c++;
            if (!order.before(heap[c], last)) break;
            heap[i] = heap[c];
            i = c;
        }
        if (size > 0) heap[i] = last;
        return top;
    }
}
