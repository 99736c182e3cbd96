package org.powerinfer4j.engine.tokenizer;

import org.powerinfer4j.engine.gguf.GGUFFile;

public final class Tokenizers {
    private Tokenizers() {}

    public static Tokenizer fromGGUF(GGUFFile f) {
        return null;
    }
}
