package org.powerinfer4j.langchain4j;

import dev.langchain4j.model.output.FinishReason;
import dev.langchain4j.model.output.TokenUsage;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.powerinfer4j.engine.api.GenerationParams;
import org.powerinfer4j.engine.api.GenerationResult;
import org.powerinfer4j.engine.api.Model;
import org.powerinfer4j.engine.api.Session;
import org.powerinfer4j.engine.api.StopMatcher;
import org.powerinfer4j.engine.api.TokenListener;
import org.powerinfer4j.engine.tokenizer.ChatMessage;
import org.powerinfer4j.engine.tokenizer.ChatPrompt;

/**
 * What the four LangChain4j models share: the engine model, its default settings, and a small pool of sessions.
 * Each call takes a session of its own (a new one when none is idle), so concurrent calls run as the engine's
 * concurrent sessions do — one forward pass at a time, their decode steps batched. Idle sessions are kept (up to
 * {@code maxIdleSessions}) so that a call does not allocate a KV cache; without {@code cachePrompt} a kept session is
 * reset and the whole prompt evaluated again, so a call's tokens do not depend on earlier calls.
 */
final class InProcessGenerator implements AutoCloseable {
    /** Receives the generated text as it becomes final (stop sequences removed). */
    interface TextSink {
        void accept(String text);

        /** Polled after every token: true stops the generation (the caller cancelled it). */
        default boolean cancelled() {
            return false;
        }
    }

    /**
     * One finished call.
     *
     * @param text         the generated text without any stop sequence
     * @param inputTokens  tokens of the whole prompt (the rendered conversation)
     * @param outputTokens tokens generated (the end-of-generation token is not counted, as the OpenAI server does not)
     * @param stopped      ended by end of generation or a stop sequence; otherwise by the token limit or a full context
     * @param cancelled    the sink asked to stop
     */
    record Generation(String text, int inputTokens, int outputTokens, boolean stopped, boolean cancelled) {
        TokenUsage tokenUsage() {
            return new TokenUsage(inputTokens, outputTokens);
        }

        FinishReason finishReason() {
            return cancelled ? FinishReason.OTHER : stopped ? FinishReason.STOP : FinishReason.LENGTH;
        }
    }

    private final Model model;
    private final boolean ownsModel;
    private final String modelName;
    private final GenerationDefaults defaults;
    private final boolean cachePrompt;
    private final int maxIdleSessions;
    private final ArrayDeque<Session> idle = new ArrayDeque<>();   // guarded by this
    private boolean closed;                                         // guarded by this
    private final AtomicLong seeds = new AtomicLong(System.nanoTime());

    InProcessGenerator(Model model, boolean ownsModel, String modelName, GenerationDefaults defaults, boolean cachePrompt, int maxIdleSessions) {
        this.model = model;
        this.ownsModel = ownsModel;
        this.modelName = modelName;
        this.defaults = defaults;
        this.cachePrompt = cachePrompt;
        this.maxIdleSessions = maxIdleSessions;
    }

    Model model() {
        return model;
    }

    String modelName() {
        return modelName;
    }

    GenerationDefaults defaults() {
        return defaults;
    }

    /** The builder's seed, else a fresh one per call (spread like the OpenAI server's). */
    long nextSeed() {
        return defaults.seed() != null ? defaults.seed() : seeds.getAndAdd(0x9E3779B97F4A7C15L);
    }

    /** The conversation rendered with the model's chat template and tokenized (message texts never parsed as special tokens). */
    int[] chatPrompt(List<ChatMessage> messages) {
        return ChatPrompt.tokenize(model.chatTemplate(), model.tokenizer(), messages, true);
    }

    /** A plain-text prompt, tokenized as {@code Session.generate(String, ...)} does at the start of a session (with BOS). */
    int[] textPrompt(String prompt) {
        return model.tokenizer().encode(prompt, true, false);
    }

    /**
     * Generates a continuation of {@code prompt}, streaming the text to {@code sink} as it becomes final. Throws what
     * the engine throws (a prompt longer than the context, a closed model) and what the sink throws.
     */
    Generation generate(int[] prompt, GenerationParams params, List<String> stopSequences, TextSink sink) {
        Session session = acquire(prompt);
        boolean healthy = false;
        try {
            StopMatcher stops = new StopMatcher(stopSequences);
            StringBuilder text = new StringBuilder();
            int[] generated = {0};
            boolean[] cancelled = {false};
            TokenListener listener = (id, piece) -> {
                if (cancelled[0]) return false;   // nothing reaches the sink after a cancel, not even the decoder's flush
                if (id >= 0) generated[0]++;   // -1: the decoder's flush of an incomplete character at the end
                String out = stops.accept(piece);
                if (!out.isEmpty()) {
                    text.append(out);
                    sink.accept(out);
                }
                cancelled[0] = sink.cancelled();
                return !stops.stopped() && !cancelled[0];
            };
            if (!cachePrompt) session.reset();
            GenerationResult r = session.complete(prompt, params, listener);
            String rest = stops.flush();
            if (!rest.isEmpty() && !cancelled[0]) {
                text.append(rest);
                sink.accept(rest);
            }
            healthy = true;
            boolean stopped = stops.stopped() || r.stopReason().equals("eos");
            return new Generation(text.toString(), prompt.length, generated[0], stopped, cancelled[0] && !stops.stopped());
        } finally {
            release(session, healthy);
        }
    }

    /** An idle session (with cachePrompt: the one sharing the longest prefix with {@code prompt}), else a new one. */
    private Session acquire(int[] prompt) {
        synchronized (this) {
            if (closed) throw new IllegalStateException("this PowerInfer4j LangChain4j model is closed");
            if (!idle.isEmpty()) {
                if (!cachePrompt) return idle.pop();
                Session best = null;
                int bestLength = -1;
                for (Session s : idle) {
                    int length = commonPrefix(s.tokens(), prompt);
                    if (length > bestLength) {
                        best = s;
                        bestLength = length;
                    }
                }
                idle.remove(best);
                return best;
            }
        }
        return model.newSession();
    }

    private static int commonPrefix(int[] a, int[] b) {
        int n = Arrays.mismatch(a, b);
        return n < 0 ? a.length : n;
    }

    /** Keeps a session that finished normally while there is room; closes it otherwise (its state may be half-fed). */
    private void release(Session session, boolean healthy) {
        synchronized (this) {
            if (healthy && !closed && idle.size() < maxIdleSessions) {
                idle.push(session);
                return;
            }
        }
        session.close();
    }

    /** Closes the idle sessions and, when it was opened from a path, the model. Calls still running fail at their next step. */
    @Override
    public void close() {
        synchronized (this) {
            if (closed) return;
            closed = true;
            for (Session s : idle) s.close();
            idle.clear();
        }
        if (ownsModel) model.close();
    }
}
