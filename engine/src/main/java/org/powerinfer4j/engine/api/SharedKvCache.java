package org.powerinfer4j.engine.api;

import org.powerinfer4j.engine.model.KvBlockPool;

/**
 * One KV cache budget for many sessions of a {@link Model} ({@link Model#newSharedKvCache}): sessions take blocks as
 * they grow and give them back when reset or rolled back, a prefix another session holds is shared block by block
 * ({@link Session#adoptPrefix}; copied on the first write), and a {@link Session#parkCache() parked} session's blocks
 * go to others when the budget runs out. Thread-safe.
 */
public final class SharedKvCache implements AutoCloseable {
    private final Model model;
    private final KvBlockPool pool;

    SharedKvCache(Model model, KvBlockPool pool) {
        this.model = model;
        this.pool = pool;
    }

    Model model() {
        return model;
    }

    KvBlockPool pool() {
        return pool;
    }

    /** Positions the cache holds in all (the requested total rounded up to whole blocks). */
    public int capacityTokens() {
        return pool.capacityTokens();
    }

    /** Positions in blocks some session holds; a block several sessions share counts once. */
    public int usedTokens() {
        return pool.usedTokens();
    }

    /** Frees the memory; sessions still using it fail on their next pass. */
    @Override
    public void close() {
        pool.close();
    }
}
