package org.powerinfer4j.engine.tokenizer;

import java.io.IOException;
import java.nio.file.Path;
import org.powerinfer4j.engine.gguf.GGUFFile;

/** Builds the tokenizer a GGUF file describes. */
public final class Tokenizers {
    private Tokenizers() {}

    /**
     * The tokenizer of {@code tokenizer.ggml.model}: {@code llama} → SentencePiece, {@code gpt2} → byte-level BPE
     * with the pre-tokenizer named by {@code tokenizer.ggml.pre} (unknown names fall back to llama.cpp's default
     * expressions with a warning). Other models (bert, t5, rwkv, ...) and files without a vocabulary are rejected
     * with an {@link IllegalArgumentException} that names the problem.
     */
    public static Tokenizer fromGGUF(GGUFFile gguf) {
        String model = gguf.getString("tokenizer.ggml.model", null);
        if ("gpt2".equals(model)) {
            BpePreTokenizer.Spec spec = BpePreTokenizer.spec(gguf.getString("tokenizer.ggml.pre", null));
            return new BpeTokenizer(Vocab.load(gguf, spec), new BpePreTokenizer(spec));
        }
        return new SpmTokenizer(Vocab.load(gguf, null));
    }

    /** Opens {@code path}, reads its tokenizer and closes the file (the tokenizer keeps no reference to it). */
    public static Tokenizer fromGGUF(Path path) throws IOException {
        try (GGUFFile gguf = GGUFFile.open(path)) {
            return fromGGUF(gguf);
        }
    }
}
