package org.powerinfer4j.engine.api;

/** Proposes the tokens that may follow a context (speculative decoding's drafts). */
interface DraftSource extends AutoCloseable {
    /** Writes up to {@code max} proposed continuations of {@code context[0..length)} into {@code out}; returns how many. */
    int propose(int[] context, int length, int[] out, int max);

    @Override
    default void close() {
    }
}
