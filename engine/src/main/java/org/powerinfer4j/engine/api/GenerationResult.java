package org.powerinfer4j.engine.api;

/**
 * The outcome of one generate call.
 *
 * @param stopReason {@code "eos"} (end-of-generation token, or a grammar that was complete and allowed nothing more), {@code "length"} (max tokens or full context),
 *                   {@code "cancelled"} (the listener returned false)
 * @param decodeSteps tokens produced by decoding (all but the first)
 * @param draftedTokens  draft tokens proposed (speculative decoding; 0 otherwise)
 * @param acceptedTokens draft tokens the target accepted
 */
public record GenerationResult(int[] promptTokens, int[] generatedTokens, String text, String stopReason,
                               long promptNanos, int decodeSteps, long generationNanos, int draftedTokens, int acceptedTokens) {

    public GenerationResult(int[] promptTokens, int[] generatedTokens, String text, String stopReason, long promptNanos, int decodeSteps,
                            long generationNanos) {
        this(promptTokens, generatedTokens, text, stopReason, promptNanos, decodeSteps, generationNanos, 0, 0);
    }

    /** Accepted over proposed draft tokens (speculative decoding); NaN when nothing was proposed. */
    public double acceptanceRate() {
        return draftedTokens == 0 ? Double.NaN : (double) acceptedTokens / draftedTokens;
    }

    public double promptTokensPerSecond() {
        return promptTokens.length == 0 || promptNanos == 0 ? 0 : promptTokens.length * 1e9 / promptNanos;
    }

    /**
     * Decode speed: tokens after the first (which comes from the prefill) over the time spent producing them — one
     * forward pass each in plain decoding; with speculative decoding drafting and batched verification included.
     */
    public double generationTokensPerSecond() {
        return decodeSteps == 0 || generationNanos == 0 ? 0 : decodeSteps * 1e9 / generationNanos;
    }
}
