package org.powerinfer4j.engine.tokenizer;

/** A chat template could not be rendered: a syntax error, or the template rejected the messages. */
public final class ChatTemplateException extends RuntimeException {
    public ChatTemplateException(String message) {
        super(message);
    }

    public ChatTemplateException(String message, Throwable cause) {
        super(message, cause);
    }
}
