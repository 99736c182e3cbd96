package org.powerinfer4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.powerinfer4j.engine.api.GenerationParams;
import org.powerinfer4j.engine.api.Model;
import org.powerinfer4j.engine.api.ModelOptions;
import org.powerinfer4j.engine.api.Session;
import org.powerinfer4j.engine.backend.GpuMode;
import org.powerinfer4j.engine.backend.GpuOptions;
import org.powerinfer4j.engine.sampling.SamplingParams;
import org.powerinfer4j.engine.sparse.SparseMode;
import picocli.CommandLine;

/** {@code plan}'s printed device total is what a hybrid run with the same options allocates on the (simulated) device. */
class PlanFootprintTest {
    @TempDir
    Path dir;

    private static final Path TESTDATA = Path.of(System.getProperty("powerinfer4j.testdata"));

    private static String[] run(String... args) {
        StringWriter out = new StringWriter(), err = new StringWriter();
        CommandLine cl = Main.commandLine();
        cl.setOut(new PrintWriter(out, true));
        cl.setErr(new PrintWriter(err, true));
        int rc = cl.execute(args);
        return new String[] {String.valueOf(rc), out.toString(), err.toString()};
    }

    private static long line(String out, String label) {
        Matcher m = Pattern.compile("(?m)^" + Pattern.quote(label) + "\\s+\\d+\\s+([\\d,]+)$").matcher(out);
        assertThat(m.find()).as("a '%s' line in%n%s", label, out).isTrue();
        return Long.parseLong(m.group(1).replace(",", ""));
    }

    @ParameterizedTest(name = "--vram-budget {0} GiB")
    @CsvSource({"0.0002", "0.003"})
    void planPrintsWhatTheRunAllocates(String gib) throws Exception {
        Path model = dir.resolve("m.powerinfer.gguf");
        Files.copy(TESTDATA.resolve("sparse/stories260K-relu.powerinfer.gguf"), model);
        Path counts = TESTDATA.resolve("sparse/activation_counts.json");
        String[] r = run("plan", "-m", model.toString(), "--vram-budget", gib, "-c", "128", "-b", "3", "--activations", counts.toString());
        assertThat(r[0]).as(r[2]).isEqualTo("0");
        long allocated = line(r[1], "allocated"), total = line(r[1], "device total");
        long budget = (long) Math.floor(Double.parseDouble(gib) * (1L << 30));
        assertThat(total).isLessThanOrEqualTo(budget);

        ModelOptions o = ModelOptions.defaults().withThreads(2).withContextLength(128).withBatchSize(3).withSparseMode(SparseMode.PREDICT)
                .withGpu(GpuOptions.budget(GpuMode.SIMULATED, budget).withActivations(counts));
        try (Model m = Model.open(model, o)) {
            assertThat(m.deviceFootprint().totalBytes()).as("the run's footprint").isEqualTo(total);
            try (Session s = m.newSession()) {
                s.generate(new int[] {1, 2, 3, 4}, GenerationParams.defaults().withMaxTokens(2).withSampling(SamplingParams.GREEDY)
                        .withStopAtEndOfGeneration(false), null);
                assertThat(m.deviceBytesInUse()).as("device bytes allocated with one session").isEqualTo(allocated);
            }
        }
    }

    @Test
    void anF16KvCacheIsRefusedInOneLine() {
        String[] r = run("plan", "-m", TESTDATA.resolve("sparse/stories260K-relu.powerinfer.gguf").toString(), "--vram-budget", "1",
                "--kv-type", "f16", "--activations", TESTDATA.resolve("sparse/activation_counts.json").toString(), "-o", dir.resolve("x.gpuidx").toString());
        assertThat(r[0]).isNotEqualTo("0");
        assertThat(r[2]).contains("--kv-type: the device KV cache is F32");
    }
}
