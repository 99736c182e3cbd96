package org.powerinfer4j.engine.tokenizer;

/** GGUF {@code tokenizer.ggml.token_type} values (llama.cpp's {@code llama_token_type}). */
public enum TokenType {
    UNDEFINED, NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE;

    /** The type for a stored value; values outside 0..6 are UNDEFINED, as in llama.cpp. */
    public static TokenType of(int value) {
        TokenType[] v = values();
        return value >= 0 && value < v.length ? v[value] : UNDEFINED;
    }
}
