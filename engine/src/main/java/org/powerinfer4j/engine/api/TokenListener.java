package org.powerinfer4j.engine.api;

/** Receives generated tokens as they are sampled. Return false to stop generating. */
@FunctionalInterface
public interface TokenListener {
    /**
     * @param tokenId the sampled token
     * @param text    the text that became complete with this token (may be empty while a UTF-8 sequence
     *                is incomplete)
     */
    boolean onToken(int tokenId, String text);

    /**
     * The form {@link Session#generate} calls for each sampled token: as {@link #onToken(int, String)}, plus the
     * logits the token was sampled from — the model's raw output for this step (one per vocabulary entry), before
     * the repetition penalty, temperature or any top-k/top-p/min-p cut, so {@code log_softmax(logits)[tokenId]} is the
     * token's log-probability under the model. The array is the session's own: read it during the call only, and do
     * not modify it. The default ignores the logits; implement this method to receive them (e.g. for log-probs).
     */
    default boolean onToken(int tokenId, String text, float[] logits) {
        return onToken(tokenId, text);
    }
}
