package org.powerinfer4j.engine.api;

/**
 * The outcome of one generate call.
 *
 * @param stopReason {@code "eos"} (end-of-generation token), {@code "length"} (max tokens or full context),
 *                   {@code "cancelled"} (the listener returned false)
 */
public record GenerationResult(int[] promptTokens, int[] generatedTokens, String text, String stopReason,
                               long promptNanos, int decodeSteps, long generationNanos) {

    public double promptTokensPerSecond() {
        return promptTokens.length == 0 || promptNanos == 0 ? 0 : promptTokens.length * 1e9 / promptNanos;
    }

    /** Decode speed: single-token forward passes over the time spent in them (the first token comes from prefill). */
    public double generationTokensPerSecond() {
        return decodeSteps == 0 || generationNanos == 0 ? 0 : decodeSteps * 1e9 / generationNanos;
    }
}
