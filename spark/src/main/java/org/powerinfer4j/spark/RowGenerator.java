package org.powerinfer4j.spark;

import java.util.ArrayList;
import java.util.List;
import java.util.function.BooleanSupplier;
import org.powerinfer4j.engine.api.GenerationResult;
import org.powerinfer4j.engine.api.Model;
import org.powerinfer4j.engine.api.Session;
import org.powerinfer4j.engine.api.StopMatcher;
import org.powerinfer4j.engine.tokenizer.ChatMessage;
import org.powerinfer4j.engine.tokenizer.ChatPrompt;

/**
 * Generates one row's completion on a session, exactly as the {@code generate} command does for the same prompt and
 * seed (the prompt tokenized with BOS, special tokens not parsed; the same sampler and stop rule), or, with
 * {@code chatTemplate}, as the model's chat template renders a user message (and an optional system prompt).
 */
final class RowGenerator {
    private RowGenerator() {}

    /**
     * The row's completion. A problem of the row itself (no prompt, a prompt longer than the context, a parameter out
     * of range, a template that cannot render) is returned as {@link Completion#failed}; anything else propagates.
     */
    static Completion generate(Model model, Session session, String prompt, GenerationSpec spec, long seed, BooleanSupplier cancelled) {
        if (prompt == null) return Completion.failed("prompt is null");
        int[] ids;
        try {
            ids = spec.chatTemplate() ? ChatPrompt.tokenize(model.chatTemplate(), model.tokenizer(), messages(prompt, spec), true)
                    : model.tokenizer().encode(prompt, true, false);
        } catch (RuntimeException e) {
            return Completion.failed("cannot render the prompt: " + oneLine(e));
        }
        if (ids.length == 0) return Completion.failed("empty prompt: nothing to generate from (the model adds no BOS)");
        if (ids.length >= session.contextLength())
            return Completion.failed("prompt too long: " + ids.length + " tokens do not fit the context of " + session.contextLength()
                    + " (raise contextLength)");
        StopMatcher stops = new StopMatcher(spec.stop());
        StringBuilder text = new StringBuilder();
        int[] generated = {0};
        session.reset();
        GenerationResult r = session.generate(ids, spec.params(seed), (id, piece) -> {
            if (id >= 0) generated[0]++;   // -1: the decoder's flush of an incomplete character at the end
            text.append(stops.accept(piece));
            return !stops.stopped() && !cancelled.getAsBoolean();
        });
        text.append(stops.flush());
        if (r.stopReason().equals("cancelled") && !stops.stopped())
            throw new java.util.concurrent.CancellationException("generation cancelled (the task was stopped)");
        String finish = stops.stopped() || r.stopReason().equals("eos") ? "stop" : "length";
        return new Completion(text.toString(), ids.length, generated[0], finish, null);
    }

    /**
     * {@link #generate} on a session taken from the executor's model and given back after. An engine failure of the
     * row becomes its error line, unless {@code failOnError}, which also turns a row's error into an exception.
     */
    static Completion leased(ExecutorModels.Shared shared, String prompt, GenerationSpec spec, long seed, boolean failOnError,
                             BooleanSupplier cancelled) {
        Session session = shared.take();
        boolean healthy = false;
        Completion c;
        try {
            c = generate(shared.model, session, prompt, spec, seed, cancelled);
            healthy = true;
        } catch (java.util.concurrent.CancellationException e) {
            throw e;
        } catch (RuntimeException e) {
            if (failOnError) throw e;
            c = Completion.failed(oneLine(e));
        } finally {
            shared.give(session, healthy);
        }
        if (failOnError && c.error() != null)
            throw new IllegalArgumentException("cannot generate the row with prompt " + abbreviate(prompt) + ": " + c.error());
        return c;
    }

    private static String abbreviate(String prompt) {
        if (prompt == null) return "null";
        String p = prompt.replaceAll("\\s+", " ");
        return '"' + (p.length() <= 40 ? p : p.substring(0, 40) + "...") + '"';
    }

    private static List<ChatMessage> messages(String prompt, GenerationSpec spec) {
        List<ChatMessage> m = new ArrayList<>(2);
        if (spec.systemPrompt() != null && !spec.systemPrompt().isEmpty()) m.add(new ChatMessage("system", spec.systemPrompt()));
        m.add(new ChatMessage("user", prompt));
        return m;
    }

    /** The exception's message on one line, prefixed with its type when it has none. */
    static String oneLine(Throwable e) {
        String m = e.getMessage();
        if (m == null || m.isBlank()) m = e.getClass().getSimpleName();
        return m.replaceAll("\\s*\\R\\s*", " ").strip();
    }
}
