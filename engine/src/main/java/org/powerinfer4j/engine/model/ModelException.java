package org.powerinfer4j.engine.model;

/** A model cannot be loaded or run as asked (unsupported architecture, tensor type, bad shape, ...). */
public class ModelException extends RuntimeException {
    public ModelException(String message) {
        super(message);
    }
}
