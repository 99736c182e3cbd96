package org.powerinfer4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** {@code generate --lookup} and {@code -md}: the plain greedy text, the acceptance in the summary, one-line errors. */
class SpeculativeCliTest {
    private static final Path TESTDATA = Path.of(System.getProperty("powerinfer4j.testdata"));
    private static final String STORIES = TESTDATA.resolve("models/stories260K.gguf").toString();
    private static final String PROMPT = "Lily went to the park. Lily went to the park. Lily went to the park. Lily";

    private static CliTest.Result generate(String... extra) {
        String[] base = {"generate", "-m", STORIES, "-p", PROMPT, "-n", "48", "--temp", "0", "-t", "2"};
        String[] args = java.util.Arrays.copyOf(base, base.length + extra.length);
        System.arraycopy(extra, 0, args, base.length, extra.length);
        return CliTest.run(args);
    }

    @Test
    void lookupAndADraftModelPrintThePlainText() {
        CliTest.Result plain = generate();
        assertThat(plain.code()).as(plain.err()).isZero();
        assertThat(plain.err()).doesNotContain("draft:");
        for (String[] spec : new String[][]{{"--lookup", "--draft-max", "4"}, {"-md", TESTDATA.resolve("models/quantized/stories260K-q8_0.gguf").toString()},
                {"--model-draft", STORIES, "--draft-max", "3"}}) {
            CliTest.Result r = generate(spec);
            assertThat(r.code()).as(r.err()).isZero();
            assertThat(r.out()).isEqualTo(plain.out());
            assertThat(r.err()).containsPattern("draft: \\d+ accepted of \\d+ \\(\\d+\\.\\d%\\)").contains("generation: 48 tokens");
        }
    }

    @Test
    void badSpeculationFlagsAreOneLineErrors() {
        CliTest.Result vocab = generate("-md", TESTDATA.resolve("models/llama-2-tiny-random.gguf").toString());
        assertThat(vocab.code()).isNotZero();
        assertThat(vocab.err().strip()).contains("vocabulary").doesNotContain("\n").doesNotContain("Exception");
        CliTest.Result both = generate("--lookup", "-md", STORIES);
        assertThat(both.code()).isNotZero();
        assertThat(both.err().strip()).contains("--lookup and -md").doesNotContain("\n");
        CliTest.Result lone = generate("--draft-max", "4");
        assertThat(lone.code()).isNotZero();
        assertThat(lone.err().strip()).contains("--draft-max").doesNotContain("\n");
        CliTest.Result zero = generate("--lookup", "--draft-max", "0");
        assertThat(zero.code()).isNotZero();
        assertThat(zero.err().strip()).contains("--draft-max must be >= 1").doesNotContain("\n");
    }
}
