package org.powerinfer4j.engine.tokenizer;

/**
 * Text ⇄ token ids for one vocabulary, with llama.cpp's exact behaviour. Implementations: SentencePiece
 * ({@code tokenizer.ggml.model = llama}) and byte-level BPE ({@code gpt2}). Built from GGUF metadata by
 * {@link Tokenizers#fromGGUF}. Implementations are immutable and thread-safe.
 *
 * <p>Java strings cannot hold invalid UTF-8, but they can hold unpaired surrogates; those are encoded as
 * U+FFFD (the replacement llama.cpp itself makes for undecodable input before pre-tokenizing).
 */
public interface Tokenizer {
    /**
     * Tokenizes {@code text} ({@code llama_tokenize}). {@code addSpecial} adds BOS (and EOS) as the vocabulary's
     * add_bos/add_eos flags say; {@code parseSpecial} turns control-token text in {@code text} (e.g. {@code "<s>"})
     * into its id — never set it for untrusted user content. User-defined tokens are matched whatever
     * {@code parseSpecial} says, as in llama.cpp (and Hugging Face's added tokens).
     */
    int[] encode(String text, boolean addSpecial, boolean parseSpecial);

    /**
     * Like {@link #encode(String, boolean, boolean)} with special-token parsing, except inside
     * {@code literalRanges} ([from, to) character ranges of {@code text}), which are always tokenized as plain
     * text: a rendered chat prompt parses the template's special tokens but never those a user typed.
     */
    int[] encode(String text, boolean addSpecial, boolean parseSpecial, int[][] literalRanges);

    /**
     * Text of the ids, as llama.cpp's {@code common_detokenize}: control tokens rendered as nothing unless
     * {@code renderSpecial}; for SentencePiece the dummy-prefix space of the first token is dropped (so a leading
     * BOS, which is that first token, keeps the next token's space, exactly as llama.cpp prints it).
     */
    default String decode(int[] ids, boolean renderSpecial) {
        return decode(ids, false, renderSpecial);
    }

    /**
     * {@code llama_detokenize}: {@code removeSpecial} drops a leading BOS / trailing EOS when the vocabulary adds
     * them; {@code renderSpecial} renders control tokens' text.
     */
    String decode(int[] ids, boolean removeSpecial, boolean renderSpecial);

    /** Raw bytes a token contributes to generated text (byte tokens and ▁/Ġ mapped back; control tokens empty). */
    default byte[] tokenBytes(int id) {
        return tokenBytes(id, false, false);
    }

    /**
     * Raw bytes of one token ({@code llama_token_to_piece}); {@code sequenceStart} strips the SentencePiece
     * dummy-prefix space as decoding does for the first token of a sequence.
     */
    byte[] tokenBytes(int id, boolean renderSpecial, boolean sequenceStart);

    /** The token's piece as stored in the vocabulary. */
    String piece(int id);

    /** The id of a vocabulary piece (exact text as stored, e.g. {@code "▁Hello"} or {@code "<|im_end|>"}), or -1. */
    int tokenId(String piece);

    TokenType tokenType(int id);

    /** True for control tokens (including those llama.cpp promotes to control by their text, e.g. EOG tokens). */
    boolean isControl(int id);

    int vocabSize();

    /** BOS id, or -1 when the vocabulary has none. */
    int bosId();

    /** EOS id, or -1 when the vocabulary has none. */
    int eosId();

    /** End-of-turn id (metadata or detected by text like {@code <|eot_id|>}), or -1. */
    int eotId();

    /** Unknown-token id, or -1. */
    int unkId();

    /** Padding id, or -1. */
    int padId();

    /** Whether {@link #encode} with {@code addSpecial} prepends BOS. */
    boolean addBos();

    /** Whether {@link #encode} with {@code addSpecial} appends EOS. */
    boolean addEos();

    /** True for end-of-generation tokens (EOS, EOT, EOM and the others llama.cpp recognises by text). */
    boolean isEndOfGeneration(int id);

    /**
     * A decoder for generated tokens that continue a prompt: emits text only once UTF-8 sequences are complete,
     * renders control tokens as nothing and never strips a leading space (as llama.cpp prints generated pieces).
     */
    default StreamingDecoder streamingDecoder() {
        return new StreamingDecoder(this, false, false);
    }

    /**
     * A streaming decoder; with {@code sequenceStart} the first token is treated as the start of a whole sequence,
     * so feeding all ids one at a time yields {@link #decode(int[], boolean)} (up to the byte-level BPE
     * clean-up of spaces before punctuation, which needs look-ahead and is applied only by {@code decode}).
     */
    default StreamingDecoder streamingDecoder(boolean renderSpecial, boolean sequenceStart) {
        return new StreamingDecoder(this, renderSpecial, sequenceStart);
    }
}
