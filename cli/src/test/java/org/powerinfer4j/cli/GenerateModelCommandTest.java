package org.powerinfer4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.powerinfer4j.engine.gguf.GGUFFile;
import org.powerinfer4j.engine.tensor.GGMLType;
import picocli.CommandLine;

class GenerateModelCommandTest {

    @TempDir
    Path dir;

    private int run(StringWriter err, String... args) {
        CommandLine cl = new CommandLine(new GenerateModelCommand());
        cl.setErr(new PrintWriter(err, true));
        cl.setOut(new PrintWriter(new StringWriter(), true));
        return cl.execute(args);
    }

    @Test
    void writesAnExplicitShape() throws Exception {
        Path out = dir.resolve("m.gguf");
        String vocab = Path.of(System.getProperty("powerinfer4j.testdata")).resolve("models/stories260K.gguf").toString();
        int rc = run(new StringWriter(), out.toString(), "--dim", "64", "--layers", "1", "--ff", "96", "--heads", "4",
                "--kv-heads", "2", "--no-tied", "--type", "q4_1", "--vocab-from", vocab, "--seed", "3", "-t", "1");
        assertThat(rc).isZero();
        try (GGUFFile f = GGUFFile.open(out)) {
            assertThat(f.tensorInfo("blk.0.attn_k.weight").ne()).containsExactly(64, 32);
            assertThat(f.tensorInfo("output.weight").type()).isEqualTo(GGMLType.Q4_1);
            assertThat(f.getInt("general.file_type", -1)).isEqualTo(3);
        }
    }

    @Test
    void writesASparseReluPowerInferModel() throws Exception {
        Path out = dir.resolve("relu.powerinfer.gguf");
        String vocab = Path.of(System.getProperty("powerinfer4j.testdata")).resolve("models/stories260K.gguf").toString();
        int rc = run(new StringWriter(), out.toString(), "--dim", "128", "--layers", "1", "--ff", "256", "--heads", "4",
                "--type", "q4_0", "--vocab-from", vocab, "--sparse-relu", "--activation", "drelu", "--sparsity", "0.8",
                "--predictor-hidden", "48", "-t", "1");
        assertThat(rc).isZero();
        try (GGUFFile f = GGUFFile.open(out)) {
            assertThat(f.isPowerInfer()).isTrue();
            assertThat(f.getString("general.architecture", null)).isEqualTo("bamboo");
            assertThat(f.tensorInfo("blk.0.ffn_down_t.weight").type()).isEqualTo(GGMLType.Q4_0);
            assertThat(f.tensorInfo("blk.0.fc1.weight").ne()).containsExactly(128, 48);
            assertThat(f.tensorInfo("blk.0.fc2.weight").type()).isEqualTo(GGMLType.F16);
        }
        StringWriter err = new StringWriter();
        assertThat(run(err, dir.resolve("x.gguf").toString(), "--dim", "64", "--layers", "1", "--ff", "64", "--heads", "4",
                "--vocab-from", vocab, "--sparse-relu", "--sparsity", "1.5")).isEqualTo(2);
        assertThat(err.toString()).contains("sparsity");
    }

    @Test
    void rejectsBadArguments() {
        StringWriter err = new StringWriter();
        assertThat(run(err, dir.resolve("x.gguf").toString(), "--preset", "110m", "--type", "q2_k")).isEqualTo(2);
        assertThat(err.toString()).contains("unsupported --type");
        err = new StringWriter();
        assertThat(run(err, dir.resolve("x.gguf").toString(), "--dim", "64")).isEqualTo(2);
        assertThat(err.toString()).contains("--preset");
        err = new StringWriter();
        assertThat(run(err, dir.resolve("x.gguf").toString(), "--preset", "nope")).isEqualTo(2);
        assertThat(err.toString()).contains("unknown preset");
    }
}
