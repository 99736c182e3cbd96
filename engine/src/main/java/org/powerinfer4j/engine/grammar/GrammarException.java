package org.powerinfer4j.engine.grammar;

/**
 * A schema or grammar that cannot be compiled: an unsupported JSON-schema keyword, a malformed value, a schema
 * nothing can satisfy. The message is one line and names where in the schema the problem is.
 */
public final class GrammarException extends IllegalArgumentException {
    public GrammarException(String message) {
        super(message);
    }
}
