package org.powerinfer4j.cli.server;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.powerinfer4j.engine.api.GenerationParams;
import org.powerinfer4j.engine.api.GenerationResult;
import org.powerinfer4j.engine.api.StopMatcher;
import org.powerinfer4j.engine.tokenizer.Tokenizer;

/**
 * One admitted request between the HTTP thread that owns the connection and the slot thread that generates for
 * it. The slot thread turns tokens into {@link Event}s on an unbounded queue (bounded in practice by
 * {@code max_tokens} and the context), so it never blocks on a slow client while holding the model; the HTTP
 * thread drains the queue to the socket and sets {@link #cancel()} when the client has gone.
 */
final class GenerationJob {
    sealed interface Event permits Text, Done, Failed {}

    /**
     * Generated text, stop sequences already removed, with the log-probabilities of the tokens that completed it
     * (empty unless the request asked for them).
     */
    record Text(String text, List<LogProbs.Entry> logprobs) implements Event {}

    /** @param finishReason OpenAI's {@code stop} or {@code length} */
    /** {@code cachedTokens}: prompt tokens taken from a cache instead of evaluated (OpenAI's {@code prompt_tokens_details.cached_tokens}). */
    record Done(String finishReason, int promptTokens, int completionTokens, int cachedTokens) implements Event {}

    record Failed(ApiException error) implements Event {}

    final int[] prompt;
    final GenerationParams params;
    private final StopMatcher stops;
    private final BlockingQueue<Event> events = new LinkedBlockingQueue<>();
    private volatile boolean cancelled;
    private int completionTokens; // slot thread only
    private final Tokenizer tokenizer;
    private final int topLogprobs;            // -1: no log-probs; else alternatives per token
    private final List<LogProbs.Entry> pendingLogprobs = new ArrayList<>();  // tokens whose text is held back
    private int decodedChars;                 // slot thread only: length of the generated text so far

    GenerationJob(int[] prompt, GenerationParams params, List<String> stopSequences) {
        this(prompt, params, stopSequences, null, -1);
    }

    /** @param topLogprobs -1 for no log-probs, else the number of alternatives to report per token (with {@code tokenizer}) */
    GenerationJob(int[] prompt, GenerationParams params, List<String> stopSequences, Tokenizer tokenizer, int topLogprobs) {
        this.prompt = prompt;
        this.params = params;
        this.stops = new StopMatcher(stopSequences);
        this.tokenizer = tokenizer;
        this.topLogprobs = tokenizer == null ? -1 : topLogprobs;
    }

    /** The client went away: the slot stops at its next token (or skips the job if it has not started). */
    void cancel() {
        cancelled = true;
    }

    boolean cancelled() {
        return cancelled;
    }

    /** Tokens generated so far, as {@code usage.completion_tokens} counts them (slot thread). */
    int completionTokens() {
        return completionTokens;
    }

    /** Next event, or null after the timeout (the HTTP thread uses the gap to probe the connection). */
    Event poll(long timeout, TimeUnit unit) throws InterruptedException {
        return events.poll(timeout, unit);
    }

    /** Like {@link #poll} without waiting: lets the writer batch what is already there before flushing. */
    Event pollNow() {
        return events.poll();
    }

    // ---- slot thread side ----

    /** The token listener: false stops generation (client gone, or a stop sequence completed). */
    boolean onToken(int id, String piece) {
        return onToken(id, piece, null);
    }

    /** As {@link #onToken(int, String)}, with the raw logits {@code id} was sampled from (null: none, e.g. the decoder's flush). */
    boolean onToken(int id, String piece, float[] logits) {
        if (id >= 0) completionTokens++;
        if (id >= 0 && logits != null && topLogprobs >= 0 && !stops.stopped())
            pendingLogprobs.add(LogProbs.of(tokenizer, logits, id, topLogprobs, decodedChars));
        decodedChars += piece.length();
        String out = stops.accept(piece);
        if (!out.isEmpty()) emit(out);
        return !stops.stopped() && !cancelled;
    }

    private void emit(String text) {
        events.add(new Text(text, pendingLogprobs.isEmpty() ? List.of() : List.copyOf(pendingLogprobs)));
        pendingLogprobs.clear();
    }

    private int cachedTokens;

    /** Prompt tokens this job did not evaluate (the slot's or another slot's cache held them). */
    void cachedTokens(int n) {
        cachedTokens = n;
    }

    void finish(GenerationResult result) {
        String rest = stops.flush();
        if (!rest.isEmpty()) emit(rest);
        String reason = stops.stopped() || result.stopReason().equals("eos") ? "stop" : "length";
        events.add(new Done(reason, prompt.length, completionTokens, cachedTokens));
    }

    void fail(ApiException e) {
        events.add(new Failed(e));
    }
}
