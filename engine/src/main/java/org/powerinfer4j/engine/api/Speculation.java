package org.powerinfer4j.engine.api;

import org.powerinfer4j.engine.model.ModelException;
import org.powerinfer4j.engine.tokenizer.Tokenizer;

/**
 * Speculative decoding settings ({@link GenerationParams#withSpeculation}): each step proposes up to
 * {@code draftMax} tokens — from a draft model's greedy continuation ({@code draftModel}, same vocabulary as the
 * target) or, without one, by prompt lookup (the tokens that followed the latest earlier occurrence of the
 * context's last {@code lookupNgram}..1 tokens) — and the target checks them all in one batched forward pass.
 * The output is the target's: greedy output equals plain greedy decoding's, sampled output comes from the same
 * distribution (a proposal is accepted with the target's probability of it, see
 * {@link org.powerinfer4j.engine.sampling.Sampler#verify}).
 *
 * @param draftModel  the draft model, or null for prompt lookup; the caller opens and closes it
 * @param draftMax    tokens proposed per step at most (≥ 1)
 * @param lookupNgram longest n-gram prompt lookup matches (≥ 1; unused with a draft model)
 */
public record Speculation(Model draftModel, int draftMax, int lookupNgram) {
    public static final int DEFAULT_DRAFT_MAX = 8;
    public static final int DEFAULT_LOOKUP_NGRAM = 3;

    public Speculation {
        if (draftMax < 1) throw new IllegalArgumentException("--draft-max must be >= 1, is " + draftMax);
        if (lookupNgram < 1) throw new IllegalArgumentException("--lookup-ngram must be >= 1, is " + lookupNgram);
    }

    public static Speculation promptLookup(int draftMax) {
        return new Speculation(null, draftMax, DEFAULT_LOOKUP_NGRAM);
    }

    public static Speculation draft(Model draftModel, int draftMax) {
        if (draftModel == null) throw new IllegalArgumentException("draft model is null");
        return new Speculation(draftModel, draftMax, DEFAULT_LOOKUP_NGRAM);
    }

    /** Throws a one-line {@link ModelException} unless {@code draft} shares {@code target}'s vocabulary (size and every token). */
    public static void checkCompatible(Model target, Model draft) {
        int tv = target.config().vocabSize(), dv = draft.config().vocabSize();
        if (tv != dv)
            throw new ModelException("the draft model's vocabulary (" + dv + " tokens) differs from the target's (" + tv
                    + " tokens): speculative decoding needs the same tokenizer");
        Tokenizer t = target.tokenizer(), d = draft.tokenizer();
        if (t == null || d == null || t == d) return;
        for (int i = 0; i < Math.min(tv, t.vocabSize()); i++)
            if (!t.piece(i).equals(d.piece(i)))
                throw new ModelException("the draft model's vocabulary differs from the target's at token " + i + " (\"" + d.piece(i)
                        + "\" vs \"" + t.piece(i) + "\"): speculative decoding needs the same tokenizer");
    }
}
