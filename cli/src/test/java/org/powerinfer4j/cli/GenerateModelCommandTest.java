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
    void writesAMixtureOfExpertsModel() throws Exception {
        Path out = dir.resolve("moe.powerinfer.gguf");
        String vocab = Path.of(System.getProperty("powerinfer4j.testdata")).resolve("models/stories260K.gguf").toString();
        StringWriter log = new StringWriter();
        int rc = run(log, out.toString(), "--dim", "64", "--layers", "1", "--ff", "128", "--heads", "4", "--type", "q8_0",
                "--vocab-from", vocab, "--experts", "4", "--experts-used", "2", "--sparse-relu", "-t", "1");
        assertThat(rc).as(log.toString()).isZero();
        assertThat(log.toString()).contains("4 experts (2 per token)");
        try (GGUFFile f = GGUFFile.open(out)) {
            assertThat(f.isPowerInfer()).isTrue();
            assertThat(f.getInt("llama.expert_count", -1)).isEqualTo(4);
            assertThat(f.tensorInfo("blk.0.ffn_down_exps.weight").ne()).containsExactly(128, 64, 4);
            assertThat(f.getString("general.name", null)).contains("moe4x2");
        }
        StringWriter err = new StringWriter();
        assertThat(run(err, dir.resolve("x.gguf").toString(), "--dim", "64", "--layers", "1", "--ff", "64", "--heads", "4",
                "--vocab-from", vocab, "--experts", "2", "--experts-used", "3")).isEqualTo(2);
        assertThat(err.toString()).contains("experts-used must be between 1 and the expert count 2, not 3");
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

    @Test
    void writesFalconAndOptThatRunInEverySparseMode() throws Exception {
        String vocab = Path.of(System.getProperty("powerinfer4j.testdata")).resolve("models/stories260K.gguf").toString();
        for (String arch : new String[] {"falcon", "opt"}) {
            Path out = dir.resolve(arch + ".powerinfer.gguf");
            StringWriter err = new StringWriter();
            int rc = run(err, out.toString(), "--arch", arch, "--dim", "128", "--layers", "2", "--ff", "512", "--heads", "4",
                    "--kv-heads", arch.equals("falcon") ? "1" : "4", "--vocab-from", vocab, "--sparse-relu", "--sparsity", "0.9", "-t", "2");
            assertThat(rc).as(err.toString()).isZero();
            assertThat(err.toString()).contains("generating " + arch).contains("PowerInfer relu model");
            try (GGUFFile f = GGUFFile.open(out)) {
                assertThat(f.isPowerInfer()).isTrue();
                assertThat(f.getString("general.architecture", null)).isEqualTo(arch);
                assertThat(f.getString("general.name", null)).startsWith("random-" + arch + "-relu-d128-l2");
                assertThat(f.hasTensor(arch.equals("falcon") ? "blk.0.attn_qkv.weight" : "position_embd.weight")).isTrue();
                assertThat(f.tensorInfo("blk.1.fc1.weight").ne()).containsExactly(128, 64);
            }
            String[] texts = new String[3];
            for (String mode : new String[] {"off", "exact", "predict"}) {
                CliTest.Result r = CliTest.run("generate", "-m", out.toString(), "-p", "Once upon a time", "-n", "12", "--temp", "0",
                        "-t", "2", "--sparse", mode, "--stats");
                assertThat(r.code()).as(arch + " " + mode + ": " + r.err()).isZero();
                assertThat(r.err()).contains("generation: 12 tokens").contains("ffn: --sparse " + mode);
                texts[mode.equals("off") ? 0 : mode.equals("exact") ? 1 : 2] = r.out();
            }
            assertThat(texts[1]).as(arch + ": --sparse exact = off").isEqualTo(texts[0]);
        }
    }

    @Test
    void presetsCarryTheirArchitecture() throws Exception {
        String vocab = Path.of(System.getProperty("powerinfer4j.testdata")).resolve("models/stories260K.gguf").toString();
        Path out = dir.resolve("f.gguf");
        // falcon-7b's architecture and KV heads, a small width so the test stays quick
        assertThat(run(new StringWriter(), out.toString(), "--preset", "falcon-7b", "--dim", "128", "--ff", "256", "--heads", "4",
                "--kv-heads", "1", "--layers", "1", "--vocab-from", vocab, "-t", "1")).isZero();
        try (GGUFFile f = GGUFFile.open(out)) {
            assertThat(f.getString("general.architecture", null)).isEqualTo("falcon");
            assertThat(f.tensorInfo("blk.0.attn_qkv.weight").ne()).containsExactly(128, 192);
        }
        assertThat(run(new StringWriter(), out.toString(), "--preset", "opt-6.7b", "--dim", "64", "--ff", "128", "--heads", "4",
                "--layers", "1", "--ctx", "64", "--vocab-from", vocab, "-t", "1")).isZero();
        try (GGUFFile f = GGUFFile.open(out)) {
            assertThat(f.getString("general.architecture", null)).isEqualTo("opt");
            assertThat(f.tensorInfo("position_embd.weight").ne()).containsExactly(64, 66);
            assertThat(f.hasTensor("output.weight")).isFalse();
        }
    }

    @Test
    void rejectsBadArchitectureCombinations() {
        String vocab = Path.of(System.getProperty("powerinfer4j.testdata")).resolve("models/stories260K.gguf").toString();
        String x = dir.resolve("x.gguf").toString();
        CliTest.Result r = CliTest.run("generate-model", x, "--arch", "gpt2", "--preset", "110m", "--vocab-from", vocab);
        assertThat(r.code()).isEqualTo(2);
        assertThat(r.err().lines().findFirst().orElse("")).isEqualTo("unknown --arch 'gpt2' (known: llama, falcon, opt)");
        r = CliTest.run("generate-model", x, "--arch", "falcon", "--dim", "64", "--layers", "1", "--ff", "64", "--heads", "4",
                "--vocab-from", vocab, "--sparse-relu", "--activation", "drelu");
        assertThat(r.code()).isEqualTo(2);
        assertThat(r.err().lines().findFirst().orElse("")).isEqualTo("falcon has a non-gated ReLU FFN: --activation drelu needs --arch llama");
        r = CliTest.run("generate-model", x, "--arch", "opt", "--preset", "tinyllama-1.1b", "--vocab-from", vocab);
        assertThat(r.code()).isEqualTo(2);
        assertThat(r.err().lines().findFirst().orElse("")).contains("opt has no grouped-query attention");
        assertThat(Path.of(x)).doesNotExist();
    }
}
