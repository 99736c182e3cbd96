package org.powerinfer4j.engine.api;

import org.powerinfer4j.engine.sampling.Sampler;

/**
 * The speculative decode loop: each step proposes drafts after the last emitted token, runs [token + drafts]
 * through the target in one pass with the logits of every position, emits the target's choices while they equal
 * the drafts ({@link Sampler#verify}), then the target's own token at the first mismatch (or a bonus token after
 * the last draft), and rolls the KV cache back past the rejected drafts. Emission goes through the same
 * {@link Emitter} as plain decoding, so stops, callbacks, max tokens and the context end behave the same.
 */
final class SpeculativeDecoder {
    private final Session session;
    private final DraftSource source;
    private final int draftMax;
    private final boolean exact;
    int drafted, accepted, verifyPasses;

    SpeculativeDecoder(Session session, DraftSource source, int draftMax, boolean exact) {
        this.session = session;
        this.source = source;
        this.draftMax = draftMax;
        this.exact = exact;
    }

    /** Decides a draft token: the draft when accepted, else the token to emit instead ({@link Sampler#verify}). */
    @FunctionalInterface
    interface Verifier {
        int verify(float[] logits, int[] history, int historyLength, int draft);
    }

    /** Generates after a prefill (the session's logits are the next token's); the first token is emitted here too. */
    void run(Sampler sampler, Emitter em) {
        run(sampler, em, sampler::verify);
    }

    /** As above with another verification (the tests break it on purpose). */
    void run(Sampler sampler, Emitter em, Verifier verifier) {
        if (!em.more()) return;
        float[] logits = session.state().logits();
        int next = sampler.sample(logits, session.tokenBuffer(), session.position());
        if (!em.emit(next, logits)) return;
        int vocab = logits.length;
        int[] drafts = new int[draftMax];
        float[] row = new float[vocab];
        while (session.position() < session.contextLength()) {
            int base = session.position();
            int k = (int) Math.min(draftMax, Math.min(em.remaining() - 1L, session.contextLength() - base - 1L));
            int got = 0;
            if (k > 0) {
                int[] ctx = session.tokenBuffer(base + 1);
                ctx[base] = next;   // the context the drafts continue: the cache plus the token not yet fed
                got = source.propose(ctx, base + 1, drafts, k);
            }
            float[] all = null;
            if (got > 0) {
                int[] chunk = new int[got + 1];
                chunk[0] = next;
                System.arraycopy(drafts, 0, chunk, 1, got);
                try {
                    all = session.evaluateAll(chunk, exact);
                } catch (org.powerinfer4j.engine.model.KvCacheFullException e) {
                    got = 0;   // a shared KV cache without room for the drafts: a plain step, if it has room for that
                }
            }
            if (got == 0) {   // nothing to check: a plain decode step
                try {
                    session.evaluateNoCopy(next);
                } catch (org.powerinfer4j.engine.model.KvCacheFullException e) {
                    return;   // no block for the next position: the end, as at a full context
                }
                next = sampler.sample(logits, session.tokenBuffer(), session.position());
                if (!em.emit(next, logits)) return;
                continue;
            }
            drafted += got;
            verifyPasses++;
            int i = 0;
            for (; i < got; i++) {
                System.arraycopy(all, i * vocab, row, 0, vocab);
                int t = verifier.verify(row, session.tokenBuffer(), base + 1 + i, drafts[i]);
                boolean ok = t == drafts[i];
                if (ok) accepted++;
                if (!ok || !em.emit(t, row)) {
                    session.rollback(base + 1 + i);   // the cache as plain decoding has it: t is not fed yet
                    System.arraycopy(row, 0, logits, 0, vocab);
                    if (ok || !em.emit(t, row)) return;
                    next = t;
                    break;
                }
            }
            if (i == got) {   // every draft accepted: the target's token after the last one (the session's logits)
                next = sampler.sample(logits, session.tokenBuffer(), session.position());
                if (!em.emit(next, logits)) return;
            }
        }
    }
}
