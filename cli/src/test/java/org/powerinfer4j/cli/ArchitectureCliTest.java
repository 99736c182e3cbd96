package org.powerinfer4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Path;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.powerinfer4j.engine.gguf.GGUFFile;
import org.powerinfer4j.engine.gguf.GGUFWriter;

/** {@code eval} against a transformers float64 reference, and the one-line errors for unknown architectures and missing tensors. */
class ArchitectureCliTest {
    private static final Path ARCHS = Path.of(System.getProperty("powerinfer4j.testdata")).resolve("archs");

    @Test
    void evalPrintsTheReferencesTopFiveLogProbs() throws Exception {
        JsonNode ref = new ObjectMapper().readTree(ARCHS.resolve("qwen2.ref.json").toFile()).path("prompts").get(0);
        String ids = java.util.stream.StreamSupport.stream(ref.path("prompt_ids").spliterator(), false).map(JsonNode::asText).collect(Collectors.joining(","));
        CliTest.Result r = CliTest.run("eval", "-m", ARCHS.resolve("qwen2.gguf").toString(), "--ids", ids, "--top", "5", "-ctk", "f32", "-t", "1");
        assertThat(r.code()).as(r.err()).isZero();
        String[] lines = r.out().strip().split("\n");
        assertThat(lines).hasSize(ref.path("prompt_ids").size());
        ObjectMapper json = new ObjectMapper();
        for (int p = 0; p < lines.length; p++) {
            JsonNode line = json.readTree(lines[p]);
            assertThat(line.path("pos").asInt()).isEqualTo(p);
            JsonNode want = ref.path("hf_top5").get(p), got = line.path("top");
            assertThat(got.size()).isEqualTo(5);
            // the reference's top-2 gap exceeds 0.05 at every position of this prompt: ids must agree; log-probs to 1e-4
            assertThat(got.get(0).get(0).asInt()).isEqualTo(want.get(0).get(0).asInt());
            for (int k = 0; k < 5; k++)
                if (got.get(k).get(0).asInt() == want.get(k).get(0).asInt())
                    assertThat(got.get(k).get(1).asDouble()).isCloseTo(want.get(k).get(1).asDouble(), org.assertj.core.data.Offset.offset(1e-4));
        }
    }

    @Test
    void evalRejectsBadIds() {
        CliTest.Result r = CliTest.run("eval", "-m", ARCHS.resolve("qwen2.gguf").toString(), "--ids", "1,x,3");
        assertThat(r.code()).isNotZero();
        assertThat(r.err()).contains("'x' is not a token id");
        CliTest.Result out = CliTest.run("eval", "-m", ARCHS.resolve("qwen2.gguf").toString(), "--ids", "1,99999");
        assertThat(out.code()).isEqualTo(1);
        assertThat(out.err().strip()).contains("99999").contains("outside the vocabulary").doesNotContain("\n");
    }

    @Test
    void unknownArchitectureNamesItAndTheSupportedOnes(@TempDir Path dir) throws Exception {
        Path f = rewrite(dir, "qwen2.gguf", "mystery", null);
        CliTest.Result r = CliTest.run("generate", "-m", f.toString(), "-p", "x", "-n", "1");
        assertThat(r.code()).isEqualTo(1);
        assertThat(r.err().strip()).contains("unsupported architecture 'mystery'").contains("qwen2", "gemma3", "falcon", "opt", "phi3")
                .doesNotContain("\n");
    }

    @Test
    void missingTensorIsNamedWithItsShape(@TempDir Path dir) throws Exception {
        Path g = rewrite(dir, "qwen3.gguf", null, "blk.1.ffn_up.weight");
        CliTest.Result r = CliTest.run("generate", "-m", g.toString(), "-p", "x", "-n", "1");
        assertThat(r.code()).isEqualTo(1);
        assertThat(r.err().strip()).contains("blk.1.ffn_up.weight").contains("missing").contains("[64, 128]").doesNotContain("\n");
    }

    /** A copy of an archs file with another architecture name (keys renamed) and/or one tensor left out. */
    private static Path rewrite(Path dir, String file, String arch, String dropTensor) throws Exception {
        Path out = dir.resolve((arch != null ? arch : "drop") + "-" + Math.abs((file + dropTensor).hashCode()) + ".gguf");
        try (GGUFFile src = GGUFFile.open(ARCHS.resolve(file))) {
            String old = src.getString("general.architecture", "");
            GGUFWriter w = new GGUFWriter();
            for (var e : src.metadata().entrySet()) {
                String k = e.getKey();
                if (arch != null && k.startsWith(old + ".")) k = arch + k.substring(old.length());
                w.put(k, e.getValue());
            }
            if (arch != null) w.putString("general.architecture", arch);
            for (var ti : src.tensorInfos())
                if (!ti.name().equals(dropTensor)) w.addTensor(ti.name(), ti.type(), ti.ne(), src.tensor(ti.name()).data());
            w.write(out);
        }
        return out;
    }
}
