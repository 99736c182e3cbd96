package org.powerinfer4j.engine.api;

import java.util.Arrays;
import org.powerinfer4j.engine.tokenizer.StreamingDecoder;
import org.powerinfer4j.engine.tokenizer.Tokenizer;

/**
 * The per-token bookkeeping of a generate call, shared by plain and speculative decoding so both stop alike:
 * records the token, stops at end of generation, streams its text to the listener (with the logits it was chosen
 * from), honours cancellation and interruption, and stops at {@code maxTokens}.
 */
final class Emitter {
    private final GenerationParams params;
    private final Tokenizer tok;
    private final StreamingDecoder decoder;
    private final TokenListener listener;
    private final StringBuilder text = new StringBuilder();
    private int[] generated = new int[16];
    private int count;
    private String stop = "length";

    Emitter(GenerationParams params, Tokenizer tok, TokenListener listener) {
        this.params = params;
        this.tok = tok;
        this.decoder = tok != null ? tok.streamingDecoder() : null;
        this.listener = listener;
    }

    /** Whether another token may be generated (max tokens not reached). */
    boolean more() {
        return params.maxTokens() < 0 || count < params.maxTokens();
    }

    /** Tokens that may still be emitted (Integer.MAX_VALUE without a limit). */
    int remaining() {
        return params.maxTokens() < 0 ? Integer.MAX_VALUE : params.maxTokens() - count;
    }

    /** Emits {@code token}, chosen from {@code logits}; false when generation stops here. */
    boolean emit(int token, float[] logits) {
        if (count == generated.length) generated = Arrays.copyOf(generated, count * 2);
        generated[count++] = token;
        // under a grammar an end-of-generation token is only ever sampled once the output is complete
        if ((params.stopAtEndOfGeneration() || params.grammar() != null) && tok != null && tok.isEndOfGeneration(token)) {
            stop = "eos";
            return false;
        }
        String piece = decoder != null ? decoder.accept(token) : "";
        text.append(piece);
        if (listener != null && !listener.onToken(token, piece, logits)) {
            stop = "cancelled";
            return false;
        }
        if (Thread.currentThread().isInterrupted()) {
            stop = "cancelled";
            return false;
        }
        return more();
    }

    /** The grammar is complete and allows nothing more: generation ends as at an end-of-generation token. */
    void endOfGrammar() {
        stop = "eos";
    }

    int count() {
        return count;
    }

    int[] generated() {
        return Arrays.copyOf(generated, count);
    }

    String stopReason() {
        return stop;
    }

    /** Flushes an incomplete UTF-8 tail; returns the whole text. */
    String finish() {
        if (decoder != null) {
            String rest = decoder.flush();
            text.append(rest);
            if (!rest.isEmpty() && listener != null) listener.onToken(-1, rest);
        }
        return text.toString();
    }
}
