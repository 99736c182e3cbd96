package org.powerinfer4j.engine.hub;

import java.io.IOException;

/**
 * A failure of a hub or cache operation whose message is meant for the user as is (one line, no stack
 * trace needed). {@link #retryable()} tells the downloader whether another attempt may succeed.
 */
public class HubException extends IOException {
    private final boolean retryable;

    public HubException(String message) {
        this(message, false, null);
    }

    public HubException(String message, Throwable cause) {
        this(message, false, cause);
    }

    HubException(String message, boolean retryable, Throwable cause) {
        super(message, cause);
        this.retryable = retryable;
    }

    /** True for transient failures (5xx, 429, dropped or stalled connections) worth another attempt. */
    public boolean retryable() {
        return retryable;
    }
}
