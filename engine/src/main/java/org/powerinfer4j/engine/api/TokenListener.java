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
}
