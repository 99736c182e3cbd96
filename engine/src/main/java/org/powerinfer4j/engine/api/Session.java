package org.powerinfer4j.engine.api;

import java.util.Arrays;
import org.powerinfer4j.engine.model.InferenceState;
import org.powerinfer4j.engine.model.ModelException;
import org.powerinfer4j.engine.sampling.Sampler;
import org.powerinfer4j.engine.tokenizer.StreamingDecoder;
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
        this.model = model;
        this.contextLength = contextLength;
        this.state = new InferenceState(model.config(), contextLength, model.options().batchSize(), model.options().threads(),
                model.options().kvCacheType());
        this.tokens = new int[Math.min(contextLength, 1024)];
    }

    /** The session's activations, KV cache and logits (the batched decode tests drive it directly). */
    InferenceState state() {
        return state;
    }

    /** Tokens currently in the KV cache. */
    public int position() {
        return position;
    }

    public int contextLength() {
        return contextLength;
    }

    public int[] tokens() {
        return Arrays.copyOf(tokens, position);
    }

    /** Forgets the conversation (the KV cache is overwritten from position 0). */
    public void reset() {
        position = 0;
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
        if ((long) position + ids.length > contextLength)
            throw new ModelException("prompt too long: " + ((long) position + ids.length) + " tokens exceed the context of " + contextLength
                    + " (raise -c)");
        model.forward(state, ids, position, wantLogits);
        if (position + ids.length > tokens.length) tokens = Arrays.copyOf(tokens, Math.min(contextLength, Math.max(tokens.length * 2, position + ids.length)));
        System.arraycopy(ids, 0, tokens, position, ids.length);
        position += ids.length;
    }

    /**
     * Generates a continuation of a whole conversation, reusing the KV cache for the longest prefix of
     * {@code conversation} that is already cached (llama-server's prompt caching): only the new suffix is
     * evaluated. Chat front-ends re-render the full conversation each turn and call this.
     */
    public GenerationResult complete(int[] conversation, GenerationParams params, TokenListener listener) {
        int common = 0;
        int max = Math.min(position, conversation.length);
        while (common < max && tokens[common] == conversation[common]) common++;
        if (common == conversation.length && common > 0) common--; // re-evaluate the last token to get its logits
        position = common;
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
        Tokenizer tok = model.tokenizer();
        int[] ids = tok.encode(prompt, position == 0, false);
        return generate(ids, params, listener);
    }

    /**
     * Appends {@code promptTokens} to the conversation and samples until an end-of-generation token,
     * {@code maxTokens}, a full context or the listener says stop.
     */
    public GenerationResult generate(int[] promptTokens, GenerationParams params, TokenListener listener) {
        if (promptTokens.length == 0 && position == 0)
            throw new ModelException("empty prompt: nothing to generate from (the model adds no BOS)");
        Sampler sampler = new Sampler(params.sampling());
        Tokenizer tok = model.tokenizer();
        StreamingDecoder decoder = tok != null ? tok.streamingDecoder() : null;
        StringBuilder text = new StringBuilder();

        long t0 = System.nanoTime();
        if (promptTokens.length > 0) feed(promptTokens, true);
        long promptNanos = System.nanoTime() - t0;

        int[] generated = new int[16];
        int count = 0, decodeSteps = 0;
        long genNanos = 0;
        String stop = "length";
        while (params.maxTokens() < 0 || count < params.maxTokens()) {
            int next = sampler.sample(state.logits(), tokens, position);
            if (count == generated.length) generated = Arrays.copyOf(generated, count * 2);
            generated[count++] = next;
            if (params.stopAtEndOfGeneration() && tok != null && tok.isEndOfGeneration(next)) {
                stop = "eos";
                break;
            }
            String piece = decoder != null ? decoder.accept(next) : "";
            text.append(piece);
            if (listener != null && !listener.onToken(next, piece, state.logits())) {   // the logits `next` was sampled from
                stop = "cancelled";
                break;
            }
            if (Thread.currentThread().isInterrupted()) {
                stop = "cancelled";
                break;
            }
            if (params.maxTokens() >= 0 && count >= params.maxTokens()) break;
            if (position >= contextLength) break;
            long t1 = System.nanoTime();
            feed(new int[]{next}, true);
            genNanos += System.nanoTime() - t1;
            decodeSteps++;
        }
        if (decoder != null) {
            String rest = decoder.flush();
            text.append(rest);
            if (!rest.isEmpty() && listener != null) listener.onToken(-1, rest);
        }
        return new GenerationResult(promptTokens.clone(), Arrays.copyOf(generated, count), text.toString(), stop,
                promptNanos, decodeSteps, genNanos);
    }

    @Override
    public void close() {
        state.close();
    }
}
