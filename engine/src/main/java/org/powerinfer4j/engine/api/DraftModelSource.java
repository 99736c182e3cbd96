package org.powerinfer4j.engine.api;

import org.powerinfer4j.engine.sampling.Sampler;

/**
 * Proposals from a draft model: a session of its own that follows the target's context (the longest common
 * prefix of its KV cache is kept, the rest re-fed, so rejected drafts roll back by themselves) and decodes
 * greedily. The draft is deterministic given the context, which is what {@link Sampler#verify} assumes.
 */
final class DraftModelSource implements DraftSource {
    private final Session draft;

    DraftModelSource(Model draftModel, int contextLength) {
        this.draft = new Session(draftModel, contextLength);
    }

    @Override
    public int propose(int[] ctx, int len, int[] out, int max) {
        int common = draft.commonPrefix(ctx, len);
        if (common == len) common--;   // re-evaluate the last token for its logits
        draft.rollback(common);
        draft.evaluateNoCopy(java.util.Arrays.copyOfRange(ctx, common, len));
        for (int j = 0; j < max; j++) {
            out[j] = Sampler.argmax(draft.state().logits());
            if (j + 1 < max) draft.evaluateNoCopy(out[j]);
        }
        return max;
    }

    @Override
    public void close() {
        draft.close();
    }
}
