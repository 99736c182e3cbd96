package org.powerinfer4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.powerinfer4j.engine.gguf.GGUFFile;
import org.powerinfer4j.engine.gguf.GGUFWriter;
import org.powerinfer4j.engine.tensor.GGMLType;
import picocli.CommandLine;

/** The CLI end to end through {@link Main}: outputs, exit codes and one-line errors. */
class CliTest {
    private static final Path TESTDATA = Path.of(System.getProperty("powerinfer4j.testdata"));
    private static final String STORIES = TESTDATA.resolve("models/stories260K.gguf").toString();

    record Result(int code, String out, String err) {}

    static Result run(String... args) {
        PrintStream oldOut = System.out, oldErr = System.err;
        ByteArrayOutputStream out = new ByteArrayOutputStream(), err = new ByteArrayOutputStream();
        StringWriter picoOut = new StringWriter(), picoErr = new StringWriter();
        try {
            System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
            System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
            CommandLine cl = Main.commandLine();
            cl.setOut(new PrintWriter(picoOut, true));
            cl.setErr(new PrintWriter(picoErr, true));
            int code = cl.execute(args);
            return new Result(code, out.toString(StandardCharsets.UTF_8) + picoOut, err.toString(StandardCharsets.UTF_8) + picoErr);
        } finally {
            System.setOut(oldOut);
            System.setErr(oldErr);
        }
    }

    @Test
    void helpListsTheCommands() {
        Result r = run("--help");
        assertThat(r.code()).isZero();
        assertThat(r.out()).contains("generate", "chat", "inspect", "bench", "tokenize", "generate-model");
    }

    @Test
    void generateGreedyMatchesLlamaCppText() {
        Result r = run("generate", "-m", STORIES, "-p", "Once upon a time", "-n", "32", "--temp", "0", "-t", "2");
        assertThat(r.code()).as(r.err()).isZero();
        // llama.cpp's continuation (reference/stories260K.llamacpp.json)
        assertThat(r.out()).as("stdout").startsWith("Once upon a time, there was a little girl named Lily. She loved to play outside in the park.");
        assertThat(r.err()).contains("prompt: 5 tokens").contains("generation: 32 tokens");
    }

    /** --warmup runs before the prompt, says how long it took, and leaves the text as llama.cpp's (the same as without it). */
    @Test
    void generateWithWarmUpGivesTheSameText() {
        Result r = run("generate", "-m", STORIES, "-p", "Once upon a time", "-n", "32", "--temp", "0", "-t", "2", "--warmup");
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(r.out()).as("stdout").startsWith("Once upon a time, there was a little girl named Lily. She loved to play outside in the park.");
        assertThat(r.err()).containsPattern("load: \\d+ ms \\| warm-up: \\d+ ms \\| prompt: 5 tokens");
    }

    @Test
    void sparseStatsArePrinted() {
        Result r = run("generate", "-m", TESTDATA.resolve("sparse/stories260K-relu.powerinfer.gguf").toString(), "-p", "Once upon a time",
                "-n", "8", "--temp", "0", "--stats");
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(r.err()).contains("--sparse predict").contains("recall").contains("precision");
    }

    @Test
    void benchPrintsLlamaBenchRows() {
        Result r = run("bench", "-m", STORIES, "-p", "16", "-n", "8", "-t", "1,2", "-r", "2");
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(r.out()).contains("| model | size | params | backend | threads |").contains("| pp16 |").contains("| tg8 |");
        assertThat(r.out().lines().filter(l -> l.startsWith("| llama")).count()).isEqualTo(4);   // 2 tests × 2 thread counts
        Result json = run("bench", "-m", STORIES, "-p", "0", "-n", "4", "-r", "1", "-o", "json");
        assertThat(json.out()).contains("\"n_gen\" : 4").contains("\"avg_ts\"").contains("\"pi4j_test\" : \"tg4\"");   // llama-bench's names (BenchCommandTest)
    }

    @Test
    void inspectPrintsMetadataAndTensors() {
        Result r = run("inspect", STORIES);
        assertThat(r.code()).isZero();
        assertThat(r.out()).contains("GGUF v3", "general.architecture", "\"llama\"", "(512 string values)", "48 tensors", "token_embd.weight");
    }

    /** A bad option or value is the line naming it and where the usage is, exit 2 — not the whole usage text. */
    @Test
    void badOptionsAreOneLineErrors() {
        Result missing = run("generate", "-p", "x");
        assertThat(missing.code()).isEqualTo(2);
        assertThat(missing.err().strip().lines()).containsExactly("Missing required option: '--model=MODEL'", "usage: powerinfer4j generate --help");
        Result value = run("plan", "-m", STORIES, "--vram-budget", "1", "--kv-type", "q4_0");
        assertThat(value.code()).isEqualTo(2);
        assertThat(value.err().strip().lines()).hasSize(2).last().isEqualTo("usage: powerinfer4j plan --help");
        assertThat(value.err()).contains("--kv-type");
    }

    @Test
    void missingFileIsOneLineError() {
        Result r = run("generate", "-m", "/no/such/model.gguf", "-p", "x");
        assertThat(r.code()).isEqualTo(1);
        assertThat(r.err().strip()).startsWith("error: no such file or cached model: /no/such/model.gguf").doesNotContain("\n");
    }

    @Test
    void notAGgufIsOneLineError(@TempDir Path dir) throws Exception {
        Path f = dir.resolve("notes.txt");
        Files.writeString(f, "this is not a model");
        Result r = run("inspect", f.toString());
        assertThat(r.code()).isEqualTo(1);
        assertThat(r.err().strip()).startsWith("error: notes.txt: magic at byte 0: not a GGUF file").doesNotContain("\n").doesNotContain("Exception");
    }

    @Test
    void truncatedModelIsOneLineError(@TempDir Path dir) throws Exception {
        Path f = dir.resolve("cut.gguf");
        byte[] all = Files.readAllBytes(Path.of(STORIES));
        Files.write(f, Arrays.copyOf(all, all.length / 2));
        Result r = run("generate", "-m", f.toString(), "-p", "x");
        assertThat(r.code()).isEqualTo(1);
        assertThat(r.err().strip()).startsWith("error: cut.gguf:").contains("past the end of the file").doesNotContain("\n");
    }

    /** No CUDA here: --gpu auto says so in one note and runs on the CPU; --gpu cuda is a one-line error. */
    @Test
    void gpuWithoutADevice() {
        org.junit.jupiter.api.Assumptions.assumeFalse(org.powerinfer4j.engine.gpu.CudaBackend.isAvailable(), "a CUDA device is present");
        String relu = TESTDATA.resolve("sparse/stories260K-relu.powerinfer.gguf").toString();
        Result auto = run("generate", "-m", relu, "-p", "Once", "-n", "4", "--temp", "0", "--sparse", "predict", "--gpu", "auto");
        assertThat(auto.code()).isZero();
        assertThat(auto.err()).contains("note: --gpu auto found no usable CUDA device; the FFN runs on the CPU").doesNotContain("Exception");
        Result cuda = run("generate", "-m", relu, "-p", "Once", "-n", "4", "--sparse", "predict", "--gpu", "cuda");
        assertThat(cuda.code()).isEqualTo(1);
        assertThat(cuda.err().strip()).startsWith("error: --gpu cuda: ").doesNotContain("\n").doesNotContain("Exception");
        Result ngl = run("generate", "-m", STORIES, "-p", "Once", "-n", "4", "-ngl", "99", "--gpu", "cuda");
        assertThat(ngl.code()).isEqualTo(1);
        assertThat(ngl.err().strip()).startsWith("error: --gpu cuda: ").doesNotContain("\n");
    }

    @Test
    void overLongPromptIsOneLineError() {
        Result r = run("generate", "-m", STORIES, "-p", "word ".repeat(400), "-c", "64");
        assertThat(r.code()).isEqualTo(1);
        assertThat(r.err().strip()).startsWith("error: prompt too long").doesNotContain("\n");
    }

    /** 2^30 positions of stories260K's KV cache are 640 GiB: refused before anything is allocated, saying so (#17). */
    @Test
    void contextLargerThanMemoryIsOneLineErrorBeforeAllocating() {
        long t0 = System.nanoTime();
        Result r = run("generate", "-m", STORIES, "-p", "Once", "-n", "4", "-c", String.valueOf(1 << 30), "-t", "2");
        assertThat(r.code()).isEqualTo(1);
        assertThat(r.out()).isEmpty();
        assertThat(r.err().strip()).startsWith("error: ").doesNotContain("\n")
                .contains("1073741824 tokens needs 640.0 GiB for its KV cache").containsPattern("only \\d+\\.\\d GiB of memory is available");
        assertThat((System.nanoTime() - t0) / 1_000_000).as("ms: nothing was zeroed").isLessThan(10_000);
    }

    @Test
    void unsupportedTensorTypeIsOneLineError(@TempDir Path dir) throws Exception {
        // stories260K with its first matrix relabelled as Q8_1 (no kernel): same bytes per row count is not needed,
        // the model is rejected before any data is read
        Path f = dir.resolve("q8_1.gguf");
        try (GGUFFile src = GGUFFile.open(Path.of(STORIES))) {
            GGUFWriter w = new GGUFWriter();
            w.putAll(src, k -> true);
            for (var ti : src.tensorInfos()) {
                if (ti.name().equals("blk.0.attn_q.weight")) {
                    long[] ne = ti.ne();
                    w.addTensor(ti.name(), GGMLType.Q8_1, ne, java.lang.foreign.MemorySegment.ofArray(new byte[(int) GGMLType.Q8_1.byteSize(ne[0] * ne[1])]));
                } else w.addTensor(ti.name(), ti.type(), ti.ne(), src.tensor(ti.name()).data());
            }
            w.write(f);
        }
        Result r = run("generate", "-m", f.toString(), "-p", "x");
        assertThat(r.code()).isEqualTo(1);
        assertThat(r.err().strip()).contains("blk.0.attn_q.weight").contains("Q8_1").contains("cannot compute").doesNotContain("\n");
    }

    /** picocli formats option descriptions with String.format: a stray % makes it print "[picocli WARN] Could not format". */
    @Test
    void everySubcommandsHelpIsClean() {
        var names = Main.commandLine().getSubcommands().keySet();
        assertThat(names).contains("generate", "serve", "pull");
        for (String name : names) {
            Result r = run(name, "--help");
            assertThat(r.code()).as(name).isZero();
            assertThat(r.out()).as(name).contains("Usage:");
            assertThat(r.out() + r.err()).as(name + " --help").doesNotContain("WARN");
        }
    }

    @Test
    void directoryIsOneLineError(@TempDir Path dir) {
        Result r = run("inspect", dir.toString());
        assertThat(r.code()).isEqualTo(1);
        assertThat(r.err().strip()).isEqualTo("error: " + dir + " is a directory, not a GGUF file");
    }

    /** A bad sampler value fails before the model loads: nothing on stdout (no echoed prompt), one line on stderr. */
    @Test
    void samplingOptionsAreCheckedBeforeAnyOutput() {
        for (String[] bad : new String[][] {{"--top-p", "7"}, {"--min-p", "-1"}, {"--top-k", "-2"}, {"--repeat-penalty", "0"}, {"--repeat-last-n", "-1"},
                {"--draft-max", "4"}}) {
            Result r = run("generate", "-m", STORIES, "-p", "Hello there", bad[0], bad[1]);
            assertThat(r.code()).as(bad[0]).isEqualTo(1);
            assertThat(r.out()).as(bad[0]).isEmpty();
            assertThat(r.err().strip()).as(bad[0]).startsWith("error: ").doesNotContain("\n").doesNotContain("load:");
        }
    }

    @Test
    void unknownSubcommandIsAUsageError() {
        Result r = run("frobnicate");
        assertThat(r.code()).isEqualTo(2);
    }
}
