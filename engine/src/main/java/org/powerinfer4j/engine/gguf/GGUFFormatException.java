package org.powerinfer4j.engine.gguf;

import java.io.IOException;
import java.nio.file.Path;

/** A GGUF file is malformed. The message names the file, the field and the byte offset. */
public final class GGUFFormatException extends IOException {
    private final long offset;

    public GGUFFormatException(Path file, String field, long offset, String problem) {
        super(file.getFileName() + ": " + field + " at byte " + offset + ": " + problem);
        this.offset = offset;
    }

    /** Byte offset in the file where the problem was found. */
    public long offset() {
        return offset;
    }
}
