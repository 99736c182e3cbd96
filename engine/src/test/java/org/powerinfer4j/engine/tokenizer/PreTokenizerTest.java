package org.powerinfer4j.engine.tokenizer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.powerinfer4j.engine.TestData;

/** BPE pre-tokenizers: every supported pre-type, the fast paths against the generic regex path, fallbacks. */
class PreTokenizerTest {
    /** The vocab test strings plus scripts and characters that exercise every class of the expressions. */
    static String corpus() {
        StringBuilder sb = new StringBuilder();
        for (VocabTestVectors.Case c : VocabTestVectors.cases("vocab/ggml-vocab-gpt-2.gguf")) sb.append(c.text()).append("\n__\n");
        sb.append("Ωmega ΩK Kelvin ℭ ℵ Ա ա ἀρχή ι ǅ ﬁ Ｆｕｌｌ　ｗｉｄｔｈ！ 한국어 日本語のテキスト 𐐀𐐨 𝔘𝔫𝔦 ١٢٣ ½ Ⅻ \u00a0\u2003x\u3000y ")
                .append("It's I'M we'Ll YOU'RE don't 12345678 3.14 a\r\nb\r\rc \t\n  \n// code: x+=1; ~$^`| «quote» — – … ‘’ “” 🙂🏽 \uFE0F e\u0301 ");
        return sb.toString();
    }

    private static String concatenated(List<String> words) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (String w : words) for (int i = 0; i < w.length(); i++) out.write(ByteUnicode.decode(w.charAt(i)));
        return out.toString(StandardCharsets.UTF_8);
    }

    @Test
    void everyPreTypeSplitsLosslessly() {
        String text = corpus();
        for (String name : new TreeSet<>(BpePreTokenizer.knownNames())) {
            List<String> words = new BpePreTokenizer(BpePreTokenizer.spec(name)).split(text);
            assertThat(concatenated(words)).as(name).isEqualTo(text);
            assertThat(words).as(name).doesNotContain("").hasSizeGreaterThan(100);
        }
    }

    @Test
    void fastPathsSplitExactlyLikeTheGenericRegexPath() {
        // llama.cpp's hand-written GPT-2 / Llama-3 matchers and the class alphabet must agree with plain regex
        // matching of the same expressions on every input
        String text = corpus();
        for (String name : List.of("gpt-2", "llama3", "starcoder", "deepseek-llm", "deepseek-coder", "poro-chat", "viking", "default")) {
            BpePreTokenizer.Spec spec = BpePreTokenizer.spec(name);
            assertThat(new BpePreTokenizer(spec, true).split(text)).as(name).isEqualTo(new BpePreTokenizer(spec, false).split(text));
        }
    }

    @Test
    void llama3ContractionsAreCaseInsensitiveAndDigitsComeInThrees() {
        BpePreTokenizer p = new BpePreTokenizer(BpePreTokenizer.spec("llama-bpe"));
        assertThat(p.split("I'M 12345")).containsExactly("I", "'M", "Ġ", "123", "45");
        BpePreTokenizer gpt2 = new BpePreTokenizer(BpePreTokenizer.spec("gpt-2"));
        assertThat(gpt2.split("I'M 12345")).containsExactly("I", "'", "M", "Ġ12345");
        BpePreTokenizer qwen = new BpePreTokenizer(BpePreTokenizer.spec("qwen2"));
        assertThat(qwen.split("ab 123")).containsExactly("ab", "Ġ", "1", "2", "3");
    }

    @Test
    void unknownOrMissingPreFallsBackToDefault(@TempDir Path dir) throws Exception {
        Path src = TestData.file("vocab/ggml-vocab-gpt-2.gguf");
        Map<String, Object> unknown = new HashMap<>();
        unknown.put("tokenizer.ggml.pre", "no-such-pre-tokenizer");
        Tokenizer t = Tokenizers.fromGGUF(GgufTestFiles.withMetadata(src, dir.resolve("unknown.gguf"), unknown));
        Map<String, Object> missing = new HashMap<>();
        missing.put("tokenizer.ggml.pre", null);
        Tokenizer m = Tokenizers.fromGGUF(GgufTestFiles.withMetadata(src, dir.resolve("missing.gguf"), missing));
        Tokenizer gpt2 = VocabTestVectors.tokenizer("vocab/ggml-vocab-gpt-2.gguf");
        String text = "Hello, world! It's 2024: price $1234.";
        // the default expressions split punctuation runs and digit triples first, unlike gpt-2's
        int[] ids = t.encode(text, false, false);
        assertThat(ids).isEqualTo(m.encode(text, false, false));
        assertThat(ids).isNotEqualTo(gpt2.encode(text, false, false));
        assertThat(t.decode(ids, false)).isEqualTo(text);
        assertThat(((BpeTokenizer) t).preTokenizerName()).isEqualTo("default");
    }

    @Test
    void unsupportedFilesAreRejectedClearly(@TempDir Path dir) throws Exception {
        Path src = TestData.file("vocab/ggml-vocab-gpt-2.gguf");
        Map<String, Object> bert = new HashMap<>();
        bert.put("tokenizer.ggml.model", "bert");
        assertThatThrownBy(() -> Tokenizers.fromGGUF(GgufTestFiles.withMetadata(src, dir.resolve("bert.gguf"), bert)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("unsupported tokenizer model 'bert'");
        Map<String, Object> none = new HashMap<>();
        none.put("tokenizer.ggml.model", null);
        assertThatThrownBy(() -> Tokenizers.fromGGUF(GgufTestFiles.withMetadata(src, dir.resolve("none.gguf"), none)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("tokenizer.ggml.model is missing");
        Map<String, Object> noMerges = new HashMap<>();
        noMerges.put("tokenizer.ggml.merges", null);
        assertThatThrownBy(() -> Tokenizers.fromGGUF(GgufTestFiles.withMetadata(src, dir.resolve("nomerges.gguf"), noMerges)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("merges");
        Map<String, Object> addEos = new HashMap<>();
        addEos.put("tokenizer.ggml.add_eos_token", true);
        Tokenizer withEos = Tokenizers.fromGGUF(GgufTestFiles.withMetadata(src, dir.resolve("eos.gguf"), addEos));
        assertThat(withEos.encode("Hi", true, false)).containsExactly(17250, 50256);
    }
}
