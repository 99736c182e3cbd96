package org.powerinfer4j.engine.model;

/** A model cannot be loaded or run as asked (unsupported architecture, tensor type, bad shape, ...). */
public class ModelException extends RuntimeException {
    public ModelException(String message) {
        super(message);
    }

    /** A failure of another kind while loading, kept as the cause (the message is the user's one line). */
    public ModelException(String message, Throwable cause) {
        super(message, cause);
    }
}
