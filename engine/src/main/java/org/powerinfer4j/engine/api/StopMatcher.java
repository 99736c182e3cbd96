package org.powerinfer4j.engine.api;

import java.util.List;

/**
 * Finds the request's stop sequences in generated text as it streams, including sequences split across tokens.
 * Text that could still turn out to be the start of a stop sequence is held back until the next piece decides,
 * so the stop text itself is never emitted. Not thread-safe (one per generation). Used by the OpenAI server and the
 * LangChain4j models, which both honour caller-given stop sequences.
 */
public final class StopMatcher {
    private final List<String> stops;
    private final StringBuilder pending = new StringBuilder();
    private boolean stopped;

    public StopMatcher(List<String> stops) {
        this.stops = stops.stream().filter(s -> !s.isEmpty()).toList();
    }

    /** True once a stop sequence has been seen; later text is dropped. */
    public boolean stopped() {
        return stopped;
    }

    /** Adds generated text and returns the part that is now safe to emit. */
    public String accept(String piece) {
        if (stopped || piece.isEmpty()) return "";
        if (stops.isEmpty()) return piece;
        pending.append(piece);
        int at = -1;
        for (String s : stops) {
            int i = pending.indexOf(s);
            if (i >= 0 && (at < 0 || i < at)) at = i;
        }
        if (at >= 0) {
            String out = pending.substring(0, at);
            pending.setLength(0);
            stopped = true;
            return out;
        }
        // hold back the longest tail of the text that is a proper prefix of some stop sequence
        int hold = 0;
        for (String s : stops) {
            for (int k = Math.min(s.length() - 1, pending.length()); k > hold; k--) {
                if (endsWith(pending, s, k)) {
                    hold = k;
                    break;
                }
            }
        }
        int emit = pending.length() - hold;
        String out = pending.substring(0, emit);
        pending.delete(0, emit);
        return out;
    }

    /** At the end of generation: whatever was held back, since no stop sequence can complete any more. */
    public String flush() {
        if (stopped) return "";
        String out = pending.toString();
        pending.setLength(0);
        return out;
    }

    private static boolean endsWith(StringBuilder text, String stop, int prefixLength) {
        int from = text.length() - prefixLength;
        for (int i = 0; i < prefixLength; i++) if (text.charAt(from + i) != stop.charAt(i)) return false;
        return true;
    }
}
