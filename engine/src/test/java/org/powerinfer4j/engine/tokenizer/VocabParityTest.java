package org.powerinfer4j.engine.tokenizer;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Every vector of llama.cpp's tokenizer tests must tokenize exactly (no BOS/EOS, no special-token parsing). */
class VocabParityTest {
    @ParameterizedTest
    @ValueSource(strings = {"llama-spm", "phi-3", "gpt-2", "deepseek-coder", "deepseek-llm", "starcoder"})
    void allVectorsMatchExactly(String name) {
        String file = "vocab/ggml-vocab-" + name + ".gguf";
        Tokenizer tok = VocabTestVectors.tokenizer(file);
        List<VocabTestVectors.Case> cases = VocabTestVectors.cases(file);
        assertThat(cases).hasSize(46);
        List<String> failures = new ArrayList<>();
        for (VocabTestVectors.Case c : cases) {
            int[] got = tok.encode(c.text(), false, false);
            if (!Arrays.equals(got, c.expected()))
                failures.add("#" + c.index() + " '" + c.text() + "'\n  expected " + Arrays.toString(c.expected()) + "\n  got      " + Arrays.toString(got));
        }
        System.out.println(name + ": " + (cases.size() - failures.size()) + "/" + cases.size() + " vectors exact");
        assertThat(failures).as(name).isEmpty();
    }
}
