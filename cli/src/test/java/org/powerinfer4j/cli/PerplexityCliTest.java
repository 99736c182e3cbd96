package org.powerinfer4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code perplexity} end to end: llama-perplexity's figure for the same file and text (3.9376, recorded in
 * engine's {@code quality/llama-perplexity-reference.json}), a saved base and a KL-divergence run against it.
 */
class PerplexityCliTest {
    private static final Path TESTDATA = Path.of(System.getProperty("powerinfer4j.testdata"));
    private static final String STORIES = TESTDATA.resolve("models/stories260K.gguf").toString();
    private static final String Q8 = TESTDATA.resolve("models/quantized/stories260K-q8_0.gguf").toString();
    private static final String TEXT = Path.of("../engine/src/test/resources/quality/tiny-stories.txt").toAbsolutePath().toString();

    @Test
    void perplexityPrintsChunksAndTheFinalEstimate() {
        CliTest.Result r = CliTest.run("perplexity", "-m", STORIES, "-f", TEXT, "-c", "128", "-t", "2");
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(r.out()).contains("[1]3.36", "[14]3.93").containsPattern("Final estimate: PPL = 3\\.93\\d\\d \\+/- 0\\.23");
    }

    @Test
    void klDivergenceAgainstASavedBase(@TempDir Path dir) throws Exception {
        Path base = dir.resolve("base.logits");
        CliTest.Result save = CliTest.run("perplexity", "-m", STORIES, "-f", TEXT, "-c", "128", "--chunks", "3", "-t", "2",
                "--kl-divergence-base", base.toString(), "--base-format", "f32");
        assertThat(save.code()).as(save.err()).isZero();
        assertThat(save.out()).contains("base logits saved to");
        assertThat(Files.size(base)).isEqualTo(8 + 12 + 4L * 3 * 128 + 3L * 63 * 512 * 4);

        CliTest.Result self = CliTest.run("perplexity", "-m", STORIES, "-t", "2", "--kl-divergence-base", base.toString(), "--kl-divergence", "--json");
        assertThat(self.code()).as(self.err()).isZero();
        JsonNode s = new ObjectMapper().readTree(self.out().trim());
        assertThat(s.get("kld_mean").asDouble()).isZero();
        assertThat(s.get("same_top").asDouble()).isEqualTo(1.0);

        CliTest.Result q8 = CliTest.run("perplexity", "-m", Q8, "-t", "2", "--kl-divergence-base", base.toString(), "--kl-divergence");
        assertThat(q8.code()).as(q8.err()).isZero();
        assertThat(q8.out()).contains("Mean    KLD:", "Same top p:", "Mean PPL(base)");
    }

    @Test
    void badInputsAreOneLineErrors(@TempDir Path dir) throws Exception {
        Path shortText = dir.resolve("short.txt");
        Files.writeString(shortText, "Once upon a time.");
        CliTest.Result tooShort = CliTest.run("perplexity", "-m", STORIES, "-f", shortText.toString(), "-c", "128");
        assertThat(tooShort.code()).isEqualTo(1);
        assertThat(tooShort.err().strip()).startsWith("error: ").contains("needs at least 256").doesNotContain("\n");

        CliTest.Result noBase = CliTest.run("perplexity", "-m", STORIES, "--kl-divergence");
        assertThat(noBase.code()).isNotZero();
        assertThat(noBase.err()).contains("--kl-divergence needs --kl-divergence-base FILE");

        Path garbage = dir.resolve("garbage.logits");
        Files.writeString(garbage, "not logits");
        CliTest.Result bad = CliTest.run("perplexity", "-m", STORIES, "--kl-divergence-base", garbage.toString(), "--kl-divergence");
        assertThat(bad.code()).isEqualTo(1);
        assertThat(bad.err().strip()).startsWith("error: ").contains("not a base logits file").doesNotContain("\n");

        CliTest.Result noText = CliTest.run("perplexity", "-m", STORIES);
        assertThat(noText.code()).isNotZero();
        assertThat(noText.err()).contains("-f FILE");
    }
}
