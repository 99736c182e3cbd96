package org.powerinfer4j.engine.api;

import java.util.Arrays;
import org.powerinfer4j.engine.grammar.TokenConstraint;
import org.powerinfer4j.engine.model.InferenceState;
import org.powerinfer4j.engine.model.ModelException;
import org.powerinfer4j.engine.sampling.Sampler;
import org.powerinfer4j.engine.tokenizer.Tokenizer;

/**
 * One conversation with a model: its KV cache and the tokens in it. Successive {@link #generate} calls
 * continue where the last one stopped (the cache keeps earlier turns), which is how {@code chat} works.
 * Not thread-safe; use one session per concurrent conversation — sessions of one {@link Model} may run from any
 * threads at once (the model runs their forward passes one at a time, see {@link Model}).
 */
public final class Session implements AutoCloseable {
    private final Model model;
    private final InferenceState state;
    private final int contextLength;
    private int[] tokens;
    private int position;

    Session(Model model, int contextLength) {
        this(model, contextLength, new InferenceState(model.config(), contextLength, model.options().batchSize(), model.options().threads(),
                model.options().kvCacheType()));
    }

    /** A session whose KV cache takes blocks from a shared pool ({@link Model#newSession(SharedKvCache, int)}). */
    Session(Model model, int contextLength, org.powerinfer4j.engine.model.KvBlockPool pool) {
        this(model, contextLength, new InferenceState(model.config(), contextLength, model.options().batchSize(), model.options().threads(), pool));
    }

    private Session(Model model, int contextLength, InferenceState state) {
        this.model = model;
        this.contextLength = contextLength;
        this.state = state;
        this.tokens = new int[Math.min(contextLength, 1024)];
    }

    /** The session's activations, KV cache and logits (the batched decode tests drive it directly). */
    InferenceState state() {
        return state;
    }

    /** Tokens currently in the KV cache (0 once a parked session's shared blocks were taken). */
    public int position() {
        return state.kv().evicted() ? 0 : position;
    }

    /**
     * Lets a session on a {@link SharedKvCache} lend its blocks while it is idle: when the shared cache runs out,
     * the least recently parked sessions' blocks go to the sessions that need them, and such a session starts
     * over from an empty cache (its {@link #position()} reads 0). Any later use of the session ends the lending.
     * Without a shared cache, nothing happens.
     */
    public void parkCache() {
        state.kv().park();
    }

    /** Ends {@link #parkCache()} (every other method does so too): from here on the session's blocks stay its own. */
    public void unparkCache() {
        if (state.kv().resume()) position = 0;
    }

    public int contextLength() {
        return contextLength;
    }

    public int[] tokens() {
        return Arrays.copyOf(tokens, position());
    }

    /** Forgets the conversation (the KV cache is overwritten from position 0; a shared cache's blocks go back). */
    public void reset() {
        unparkCache();
        position = 0;
        state.kv().truncate(0);
    }

    /**
     * Rolls the conversation back to its first {@code newPosition} tokens (speculative decoding's rejected drafts).
     * The KV cache is positional, so this only moves the position: later entries are overwritten by the next feed.
     */
    public void rollback(int newPosition) {
        unparkCache();
        if (newPosition < 0 || newPosition > position)
            throw new IllegalArgumentException("cannot roll back to " + newPosition + ": the session holds " + position + " tokens");
        position = newPosition;
        state.kv().truncate(newPosition);
    }

    /**
     * Takes positions {@code [position(), upTo)} of the cache from {@code donor} instead of evaluating them: the
     * donor holds {@code tokens[0..upTo)} (its own cached conversation starts with them) and this session agrees
     * with them up to its current position. Prompt caching across sessions — a system prompt or an earlier turn
     * another slot has evaluated is not evaluated again. The donor's rows in that range must not change during the
     * call (it may append beyond them). Sessions on one {@link SharedKvCache} share the donor's whole blocks (one
     * copy in memory; whichever writes into a shared block first copies it) and copy the last partial one; others
     * copy the rows. Only for models whose KV cache is on the host (no {@code -ngl} layers):
     * {@link Model#hostKvCache()}. The rows were computed in the donor's batches, so later logits are within
     * rounding of an evaluation here, not bit-identical. Returns the position reached: {@code upTo}, or less where
     * a parked donor's shared blocks were taken meanwhile.
     */
    public int adoptPrefix(Session donor, int[] tokens, int upTo) {
        if (donor.model != model) throw new IllegalArgumentException("the donor session belongs to another model");
        if (!model.hostKvCache()) throw new IllegalStateException("this model keeps KV caches on the device; prefixes cannot be copied between sessions");
        if (upTo > tokens.length || upTo > contextLength || upTo > donor.contextLength)
            throw new IllegalArgumentException("prefix of " + upTo + " tokens does not fit");
        unparkCache();
        if (upTo <= position) return position;
        int got = state.kv().shareRows(donor.state.kv(), position, upTo);
        if (got <= position) return position;
        tokenBuffer(got);
        System.arraycopy(tokens, position, this.tokens, position, got - position);
        position = got;
        return got;
    }

    /**
     * Feeds tokens in one batched pass and returns the logits after each: row {@code i} ({@code ids.length × vocab},
     * row-major) follows {@code ids[i]}. On dense CPU models every row is bit-identical to feeding the tokens one
     * by one; elsewhere the prefill kernels' rounding differs slightly.
     */
    public float[] evaluateAll(int... ids) {
        return evaluateAll(ids, true);
    }

    /**
     * {@link #evaluateAll(int...)}; with {@code exact} false the batch runs through the prompt (matrix–matrix)
     * kernels: faster, and each row within rounding of the token-by-token logits (what {@code perplexity} uses).
     */
    public float[] evaluateAll(int[] ids, boolean exact) {
        if (ids.length == 0) throw new IllegalArgumentException("no tokens to evaluate");
        unparkCache();
        checkFits(ids.length);
        float[] all = new float[ids.length * model.config().vocabSize()];
        model.forwardAllLogits(state, ids, position, all, exact);
        append(ids);
        return all;
    }

    /** The token array itself (valid up to {@link #position()}; the rest is scratch). */
    int[] tokenBuffer() {
        return tokens;
    }

    /** The token array, grown to hold at least {@code capacity} tokens. */
    int[] tokenBuffer(int capacity) {
        if (capacity > tokens.length) tokens = Arrays.copyOf(tokens, Math.max(capacity, Math.min(contextLength, tokens.length * 2)));
        return tokens;
    }

    /** Length of the common prefix of the cached tokens and {@code ids[0..length)}. */
    int commonPrefix(int[] ids, int length) {
        int common = 0, max = Math.min(position(), length);
        while (common < max && tokens[common] == ids[common]) common++;
        return common;
    }

    /** Feeds tokens through the model and returns a copy of the logits after the last one. */
    public float[] evaluate(int... ids) {
        feed(ids, true);
        return state.logits().clone();
    }

    /** Like {@link #evaluate} without copying the logits (benchmarks). */
    void evaluateNoCopy(int... ids) {
        feed(ids, true);
    }

    private void feed(int[] ids, boolean wantLogits) {
        unparkCache();
        checkFits(ids.length);
        model.forward(state, ids, position, wantLogits);
        append(ids);
    }

    private void checkFits(int n) {
        if ((long) position + n > contextLength)
            throw new ModelException("prompt too long: " + ((long) position + n) + " tokens exceed the context of " + contextLength
                    + " (raise -c)");
    }

    private void append(int[] ids) {
        tokenBuffer(position + ids.length);
        System.arraycopy(ids, 0, tokens, position, ids.length);
        position += ids.length;
    }

    /**
     * Generates a continuation of a whole conversation, reusing the KV cache for the longest prefix of
     * {@code conversation} that is already cached (llama-server's prompt caching): only the new suffix is
     * evaluated. Chat front-ends re-render the full conversation each turn and call this.
     */
    public GenerationResult complete(int[] conversation, GenerationParams params, TokenListener listener) {
        unparkCache();
        int common = 0;
        int max = Math.min(position, conversation.length);
        while (common < max && tokens[common] == conversation[common]) common++;
        if (common == conversation.length && common > 0) common--; // re-evaluate the last token to get its logits
        position = common;
        state.kv().truncate(common);
        return generate(Arrays.copyOfRange(conversation, common, conversation.length), params, listener);
    }

    /**
     * Answers the last message of a conversation: renders {@code messages} with the model's chat template (user
     * text never parsed as special tokens), reuses the cached prefix from earlier turns, and generates the
     * assistant's reply. Append the reply ({@link GenerationResult#text()}) to the conversation for the next turn.
     */
    public GenerationResult chat(java.util.List<org.powerinfer4j.engine.tokenizer.ChatMessage> messages, GenerationParams params, TokenListener listener) {
        int[] ids = org.powerinfer4j.engine.tokenizer.ChatPrompt.tokenize(model.chatTemplate(), model.tokenizer(), messages, true);
        return complete(ids, params, listener);
    }

    /** Tokenizes {@code prompt} (with BOS at the start of the session) and generates from it. */
    public GenerationResult generate(String prompt, GenerationParams params, TokenListener listener) {
        unparkCache();
        Tokenizer tok = model.tokenizer();
        int[] ids = tok.encode(prompt, position == 0, false);
        return generate(ids, params, listener);
    }

    /**
     * Appends {@code promptTokens} to the conversation and samples until an end-of-generation token,
     * {@code maxTokens}, a full context or the listener says stop.
     */
    public GenerationResult generate(int[] promptTokens, GenerationParams params, TokenListener listener) {
        unparkCache();
        if (promptTokens.length == 0 && position == 0)
            throw new ModelException("empty prompt: nothing to generate from (the model adds no BOS)");
        if (params.grammar() != null && params.speculation() != null)
            throw new IllegalArgumentException("grammar-constrained generation does not combine with speculative decoding");
        Sampler sampler = new Sampler(params.sampling());
        Emitter em = new Emitter(params, model.tokenizer(), listener);
        DraftSource source = params.speculation() == null ? null : draftSource(params.speculation());
        TokenConstraint constraint = params.grammar() == null ? null : new TokenConstraint(params.grammar(), model.tokenizer());

        long t0 = System.nanoTime();
        if (promptTokens.length > 0) feed(promptTokens, true);
        long promptNanos = System.nanoTime() - t0;

        long t1 = System.nanoTime();
        SpeculativeDecoder spec = null;
        if (source != null) {
            spec = new SpeculativeDecoder(this, source, params.speculation().draftMax(), EXACT_VERIFY);
            spec.run(sampler, em);
        } else {
            while (em.more()) {
                if (constraint != null && constraint.finished()) {
                    em.endOfGrammar();   // the grammar is complete and nothing may follow: no token to sample
                    break;
                }
                int next;
                if (constraint == null) next = sampler.sample(state.logits(), tokens, position);
                else {
                    // tokens that may still be emitted, this one included (the last one is emitted but not fed)
                    int budget = Math.min(em.remaining(), contextLength - position + 1);
                    next = sampler.sample(state.logits(), tokens, position, constraint, budget);
                    constraint.accept(next);
                }
                if (!em.emit(next, state.logits())) break;   // the logits `next` was sampled from
                if (position >= contextLength) break;
                try {
                    feed(new int[]{next}, true);
                } catch (org.powerinfer4j.engine.model.KvCacheFullException e) {
                    break;   // the shared cache has no block for the next position: stop as at a full context ("length")
                }
            }
        }
        // decode time: everything after the first token's prefill, drafting and verification included
        long genNanos = em.count() > 1 ? System.nanoTime() - t1 : 0;
        String text = em.finish();
        return new GenerationResult(promptTokens.clone(), em.generated(), text, em.stopReason(), promptNanos,
                Math.max(0, em.count() - 1), genNanos, spec == null ? 0 : spec.drafted, spec == null ? 0 : spec.accepted);
    }

    /** Batched verification with per-token kernels (bit-identical logits) where the model allows it. */
    static final boolean EXACT_VERIFY = !Boolean.getBoolean("powerinfer4j.spec.prefillVerify");

    private Speculation draftFor;
    private DraftSource draft;

    /** This session's draft source for {@code s}, kept across calls (a draft model's session keeps its cache). */
    private DraftSource draftSource(Speculation s) {
        if (draft != null && draftFor.draftModel() == s.draftModel() && draftFor.lookupNgram() == s.lookupNgram()) return draft;
        if (draft != null) draft.close();
        draft = null;
        if (s.draftModel() != null) Speculation.checkCompatible(model, s.draftModel());
        draft = s.draftModel() != null ? new DraftModelSource(s.draftModel(), contextLength) : new PromptLookup(s.lookupNgram());
        draftFor = s;
        return draft;
    }

    @Override
    public void close() {
        if (draft != null) draft.close();
        state.close();
    }
}
