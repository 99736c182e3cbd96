package org.powerinfer4j.cli.server;

import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.powerinfer4j.engine.api.GenerationParams;
import org.powerinfer4j.engine.api.GenerationResult;

/**
 * One admitted request between the HTTP thread that owns the connection and the slot thread that generates for
 * it. The slot thread turns tokens into {@link Event}s on an unbounded queue (bounded in practice by
 * {@code max_tokens} and the context), so it never blocks on a slow client while holding the model; the HTTP
 * thread drains the queue to the socket and sets {@link #cancel()} when the client has gone.
 */
final class GenerationJob {
    sealed interface Event permits Text, Done, Failed {}

    /** Generated text, stop sequences already removed. */
    record Text(String text) implements Event {}

    /** @param finishReason OpenAI's {@code stop} or {@code length} */
    record Done(String finishReason, int promptTokens, int completionTokens) implements Event {}

    record Failed(ApiException error) implements Event {}

    final int[] prompt;
    final GenerationParams params;
    private final StopMatcher stops;
    private final BlockingQueue<Event> events = new LinkedBlockingQueue<>();
    private volatile boolean cancelled;
    private int completionTokens; // slot thread only

    GenerationJob(int[] prompt, GenerationParams params, List<String> stopSequences) {
        this.prompt = prompt;
        this.params = params;
        this.stops = new StopMatcher(stopSequences);
    }

    /** The client went away: the slot stops at its next token (or skips the job if it has not started). */
    void cancel() {
        cancelled = true;
    }

    boolean cancelled() {
        return cancelled;
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
        if (id >= 0) completionTokens++;
        String out = stops.accept(piece);
        if (!out.isEmpty()) events.add(new Text(out));
        return !stops.stopped() && !cancelled;
    }

    void finish(GenerationResult result) {
        String rest = stops.flush();
        if (!rest.isEmpty()) events.add(new Text(rest));
        String reason = stops.stopped() || result.stopReason().equals("eos") ? "stop" : "length";
        events.add(new Done(reason, prompt.length, completionTokens));
    }

    void fail(ApiException e) {
        events.add(new Failed(e));
    }
}
