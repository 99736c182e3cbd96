package org.powerinfer4j.engine.tokenizer;

/**
 * Text ⇄ token ids for one vocabulary. Implementations: SentencePiece ({@code tokenizer.ggml.model = llama}),
 * byte-level BPE ({@code gpt2}). Built from GGUF metadata by {@link Tokenizers#fromGGUF}.
 */
public interface Tokenizer {
    /**
     * Tokenizes {@code text}. {@code addSpecial} adds BOS (and EOS) as the vocabulary's add_bos/add_eos flags
     * say; {@code parseSpecial} turns special-token text in {@code text} (e.g. {@code "<s>"}) into its id —
     * never set it for untrusted user content.
     */
    int[] encode(String text, boolean addSpecial, boolean parseSpecial);

    /** Text of the ids (special/control tokens rendered as nothing unless {@code renderSpecial}). */
    String decode(int[] ids, boolean renderSpecial);

    /** Raw bytes a token contributes to the output text (byte tokens and ▁/Ġ mapped back). */
    byte[] tokenBytes(int id);

    /** The token's piece as stored in the vocabulary. */
    String piece(int id);

    int vocabSize();

    int bosId();

    int eosId();

    /** True for end-of-generation tokens (EOS, EOT, EOM). */
    boolean isEndOfGeneration(int id);

    /** A decoder that emits text only once UTF-8 sequences are complete. */
    default StreamingDecoder streamingDecoder() {
        return new StreamingDecoder(this);
    }
}
