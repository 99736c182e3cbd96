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

    @ParameterizedTest(name = "--vram-budget {0} GiB, KV {1}")
    @CsvSource({"0.0002, f16", "0.003, f16", "0.003, f32"})
    void planPrintsWhatTheRunAllocates(String gib, String kv) throws Exception {
        Path model = dir.resolve("m-" + gib + kv + ".powerinfer.gguf");
        Files.copy(TESTDATA.resolve("sparse/stories260K-relu.powerinfer.gguf"), model);
        Path counts = TESTDATA.resolve("sparse/activation_counts.json");
        String[] r = run("plan", "-m", model.toString(), "--vram-budget", gib, "-c", "128", "-b", "3", "--kv-type", kv, "--activations", counts.toString());
        assertThat(r[0]).as(r[2]).isEqualTo("0");
        long allocated = line(r[1], "allocated"), total = line(r[1], "device total");
        long budget = (long) Math.floor(Double.parseDouble(gib) * (1L << 30));
        assertThat(total).isLessThanOrEqualTo(budget);

        assertThat(r[1]).contains("KV " + kv.toUpperCase(java.util.Locale.ROOT));
        ModelOptions o = ModelOptions.defaults().withThreads(2).withContextLength(128).withBatchSize(3).withSparseMode(SparseMode.PREDICT)
                .withKvCacheType(kv.equals("f16") ? org.powerinfer4j.engine.tensor.GGMLType.F16 : org.powerinfer4j.engine.tensor.GGMLType.F32)
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

    /** The device KV cache is F16 (the run's default, as llama.cpp's) or F32: an F16 one costs half; other types are refused in one line. */
    @Test
    void theKvTypeSizesTheDeviceCache() {
        String m = TESTDATA.resolve("sparse/stories260K-relu.powerinfer.gguf").toString(), a = TESTDATA.resolve("sparse/activation_counts.json").toString();
        String[] f16 = run("plan", "-m", m, "--vram-budget", "1", "-c", "256", "--activations", a, "-o", dir.resolve("a.gpuidx").toString());
        String[] f32 = run("plan", "-m", m, "--vram-budget", "1", "-c", "256", "--kv-type", "f32", "--activations", a, "-o", dir.resolve("b.gpuidx").toString());
        assertThat(f16[0]).as(f16[2]).isEqualTo("0");
        assertThat(f32[0]).as(f32[2]).isEqualTo("0");
        assertThat(f16[1]).as("the default").contains("KV F16");
        long kv16 = line(f16[1], "KV cache"), kv32 = line(f32[1], "KV cache");
        assertThat(2 * kv16).isEqualTo(kv32);
        String[] bad = run("plan", "-m", m, "--vram-budget", "1", "--kv-type", "q8_0", "--activations", a, "-o", dir.resolve("c.gpuidx").toString());
        assertThat(bad[0]).isNotEqualTo("0");
        assertThat(bad[2]).contains("--kv-type must be f16 or f32, not q8_0");
    }
}
