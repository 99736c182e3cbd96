package org.powerinfer4j.engine.tokenizer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** Special ids and flags, BOS/EOS, special-token parsing, detokenization rules and end-of-generation tokens. */
class TokenizerBehaviourTest {
    private static Tokenizer tok(String file) {
        return VocabTestVectors.tokenizer(file);
    }

    @Test
    void stories260kPromptMatchesLlamaCpp() {
        Tokenizer t = tok("models/stories260K.gguf");
        // reference/stories260K.llamacpp.json: prompt_ids of "Once upon a time" and of "" (BOS only)
        assertThat(t.encode("Once upon a time", true, false)).containsExactly(1, 403, 407, 261, 378);
        assertThat(t.encode("", true, false)).containsExactly(1);
        assertThat(t.encode("", false, false)).isEmpty();
        assertThat(t.vocabSize()).isEqualTo(512);
        // padding_token_id = -1 in the file means "none": the default (none) is kept
        assertThat(t.padId()).isEqualTo(-1);
    }

    @Test
    void llama2TinyRandomPromptMatchesLlamaCpp() {
        Tokenizer t = tok("models/llama-2-tiny-random.gguf");
        assertThat(t.encode("Once upon a time", true, false)).containsExactly(1, 9038, 2501, 263, 931);
    }

    @Test
    void generatedIdsDecodeToLlamaCppText() {
        Tokenizer t = tok("models/stories260K.gguf");
        // the first generated ids of the BOS-only prompt in reference/stories260K.llamacpp.json and their text
        int[] gen = {403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426, 338, 401, 396, 267, 337};
        StreamingDecoder sd = t.streamingDecoder();
        StringBuilder sb = new StringBuilder();
        for (int id : gen) sb.append(sd.accept(id));
        assertThat(sb.toString()).isEqualTo(" Once upon a time, there was a little girl named Lily. She loved to play");
        // a whole sequence drops the dummy-prefix space of its first token
        assertThat(t.decode(gen, false)).startsWith("Once upon");
        // ... but after BOS the space stays, exactly as llama.cpp's common_detokenize prints it
        assertThat(t.decode(new int[] {1, 403, 407}, false)).isEqualTo(" Once upon");
        assertThat(t.decode(new int[] {1, 403, 407}, true)).isEqualTo("<s> Once upon");
        // removeSpecial drops the BOS (add_bos) but not the EOS (add_eos is false); llama.cpp keeps the space then too
        assertThat(t.decode(new int[] {1, 403, 407, 2}, true, true)).isEqualTo(" Once upon</s>");
    }

    @Test
    void spmSpecialIdsAndFlags() {
        Tokenizer t = tok("vocab/ggml-vocab-llama-spm.gguf");
        assertThat(t.bosId()).isEqualTo(1);
        assertThat(t.eosId()).isEqualTo(2);
        assertThat(t.unkId()).isZero();
        assertThat(t.addBos()).isTrue();
        assertThat(t.addEos()).isFalse();
        assertThat(t.tokenType(0)).isEqualTo(TokenType.UNKNOWN);
        assertThat(t.tokenType(1)).isEqualTo(TokenType.CONTROL);
        assertThat(t.tokenType(13)).isEqualTo(TokenType.BYTE);
        assertThat(t.tokenType(15043)).isEqualTo(TokenType.NORMAL);
        assertThat(t.piece(15043)).isEqualTo("▁Hello");
        assertThat(t.tokenId("▁Hello")).isEqualTo(15043);
        assertThat(t.tokenId("no such piece")).isEqualTo(-1);
        assertThat(new String(t.tokenBytes(15043), StandardCharsets.UTF_8)).isEqualTo(" Hello");
        assertThat(t.tokenBytes(13)).containsExactly('\n');
        assertThat(t.tokenBytes(1)).isEmpty();
        assertThat(new String(t.tokenBytes(1, true, false), StandardCharsets.UTF_8)).isEqualTo("<s>");
        assertThat(t.isEndOfGeneration(2)).isTrue();
        assertThat(t.isEndOfGeneration(1)).isFalse();
        assertThat(t.encode("Hello", true, false)).containsExactly(1, 15043);
        assertThatThrownBy(() -> t.piece(32000)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("32000");
    }

    @Test
    void spmParsesControlTokensOnlyWhenAsked() {
        Tokenizer t = tok("vocab/ggml-vocab-llama-spm.gguf");
        // parse_special: "<s>" and "</s>" become ids; the text after a special token gets the dummy prefix again
        assertThat(t.encode("<s>Hello</s>", false, true)).containsExactly(1, 15043, 2);
        int[] literal = t.encode("<s>Hello</s>", false, false);
        assertThat(literal).doesNotContain(1, 2);
        assertThat(t.decode(literal, false)).isEqualTo("<s>Hello</s>");
        // BOS is added in front of a parsed BOS (llama.cpp only warns about the double BOS)
        assertThat(t.encode("<s>Hi", true, true)).startsWith(1, 1);
    }

    @Test
    void phi3SpecialTokensSwallowFollowingWhitespace() {
        Tokenizer t = tok("vocab/ggml-vocab-phi-3.gguf");
        // llama.cpp marks phi-3's special tokens RSTRIP (by general.name): the newlines after them disappear
        assertThat(t.encode("<|user|>\nHello<|end|>\n<|assistant|>\n", false, true)).containsExactly(32010, 15043, 32007, 32001);
        assertThat(t.eosId()).isEqualTo(32000);
        assertThat(t.eotId()).isEqualTo(32007); // "<|end|>" detected by its text
        assertThat(t.isEndOfGeneration(32000)).isTrue();
        assertThat(t.isEndOfGeneration(32007)).isTrue();
        assertThat(t.isEndOfGeneration(32010)).isFalse();
        assertThat(t.isControl(32007)).isTrue();
        // "</s>" is user-defined in phi-3 but llama.cpp promotes it to an end-of-generation control token
        assertThat(t.isEndOfGeneration(2)).isTrue();
        assertThat(t.isControl(2)).isTrue();
    }

    @Test
    void bpeSpecialTokens() {
        Tokenizer gpt2 = tok("vocab/ggml-vocab-gpt-2.gguf");
        assertThat(gpt2.bosId()).isEqualTo(50256);
        assertThat(gpt2.addBos()).isFalse();
        assertThat(gpt2.encode("Hello", true, false)).containsExactly(15496);
        assertThat(gpt2.encode("<|endoftext|>Hi", false, true)).containsExactly(50256, 17250);
        assertThat(gpt2.encode("<|endoftext|>", false, false)).hasSizeGreaterThan(1);
        assertThat(gpt2.isEndOfGeneration(50256)).isTrue();
        assertThat(new String(gpt2.tokenBytes(18435), StandardCharsets.UTF_8)).isEqualTo(" Hello".substring(0, gpt2.tokenBytes(18435).length));

        Tokenizer coder = tok("vocab/ggml-vocab-deepseek-coder.gguf");
        assertThat(coder.addBos()).isTrue();
        assertThat(coder.bosId()).isEqualTo(32013);
        assertThat(coder.encode("Hi", true, false)[0]).isEqualTo(32013);
        // user-defined tokens are split off even without parse_special (llama.cpp and HF added tokens)
        int[] ids = coder.encode("a<|EOT|>b", false, false);
        assertThat(ids).contains(32021);
        assertThat(coder.decode(ids, false)).isEqualTo("a<|EOT|>b");
        // "<｜end▁of▁sentence｜>" is recognised as EOT by its text
        assertThat(coder.isEndOfGeneration(32014)).isTrue();
    }

    @Test
    void cleanSpacesFollowsLlamaCpp() {
        byte[] b = "Hello , world ! I 'm here . It ' s fine, don 't we 've".getBytes(StandardCharsets.UTF_8);
        int n = BaseTokenizer.cleanSpaces(b, b.length);
        assertThat(new String(b, 0, n, StandardCharsets.UTF_8)).isEqualTo("Hello, world! I'm here. It's fine, don 't we've");
    }

    @Test
    void unpairedSurrogatesBecomeReplacementCharacter() {
        for (String f : new String[] {"vocab/ggml-vocab-llama-spm.gguf", "vocab/ggml-vocab-gpt-2.gguf"}) {
            Tokenizer t = tok(f);
            String bad = "a\uD800b\uDC00c";
            assertThat(t.encode(bad, false, false)).as(f).containsExactly(t.encode("a\uFFFDb\uFFFDc", false, false));
            assertThat(t.decode(t.encode(bad, false, false), false)).isEqualTo("a\uFFFDb\uFFFDc");
        }
    }
}
