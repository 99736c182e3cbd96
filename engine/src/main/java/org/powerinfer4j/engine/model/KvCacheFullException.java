package org.powerinfer4j.engine.model;

/**
 * A shared KV cache ({@link KvBlockPool}) has no free block for a sequence that needs one, and no idle sequence's
 * cache to take: the sequence's own context is not full, the budget all sequences share is. A generation that
 * meets it mid-decode stops as at a full context; a prompt that meets it fails before anything is evaluated.
 */
public final class KvCacheFullException extends ModelException {
    public KvCacheFullException(String message) {
        super(message);
    }
}
