package org.powerinfer4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.powerinfer4j.engine.gguf.GGUFFile;
import org.powerinfer4j.engine.placement.ActivationStats;
import org.powerinfer4j.engine.placement.GpuIndex;
import picocli.CommandLine;

/** profile → plan and train-predictors end to end on the sparse test model (small sizes, for speed). */
class OfflineCommandsTest {
    @TempDir
    Path dir;

    private static final Path TESTDATA = Path.of(System.getProperty("powerinfer4j.testdata"));

    private record Run(int rc, String out, String err) {}

    private static Run run(String... args) {
        StringWriter out = new StringWriter(), err = new StringWriter();
        CommandLine cl = Main.commandLine();
        cl.setOut(new PrintWriter(out, true));
        cl.setErr(new PrintWriter(err, true));
        int rc = cl.execute(args);
        return new Run(rc, out.toString(), err.toString());
    }

    @Test
    void profileThenPlan() throws Exception {
        Path model = dir.resolve("m.gguf");
        Files.copy(TESTDATA.resolve("sparse/stories260K-relu.gguf"), model);
        Path svg = dir.resolve("skew.svg");
        Run p = run("profile", "-m", model.toString(), "--ffn-act", "relu", "-t", "1", "-c", "128", "--sample", "512", "--plot", svg.toString());
        assertThat(p.rc).as(p.err).isZero();
        assertThat(p.out).contains("layer 0: ").contains("of neurons cover 80% of activations");
        ActivationStats s = ActivationStats.read(dir.resolve("m.activations.gguf"));
        assertThat(s.layers()).isEqualTo(5);
        assertThat(s.tokens()).isEqualTo(512);
        assertThat(Files.readString(svg)).startsWith("<svg");

        Run plan = run("plan", "-m", model.toString(), "--vram-budget", "0.0012", "-c", "128", "-b", "16", "--tile", "4");
        assertThat(plan.rc).as(plan.err).isZero();
        assertThat(plan.out).contains("hot FFN rows").contains("total");
        GpuIndex idx = GpuIndex.read(dir.resolve("m.gguf.generated.gpuidx"));
        assertThat(idx.layers()).isEqualTo(5);
        assertThat(idx.vramCapacity()).isEqualTo((long) Math.floor(0.0012 * (1L << 30)));
        for (int l = 0; l < 5; l++) assertThat(idx.bucket(l).length % 4 == 0 || idx.bucket(l).length == 172).isTrue();

        Run bad = run("plan", "-m", model.toString(), "--vram-budget", "1", "--activations", TESTDATA.resolve("sparse/reference.json").toString());
        assertThat(bad.rc).isNotZero();
    }

    @Test
    void trainPredictorsWritesAPowerInferModel() throws Exception {
        Path model = TESTDATA.resolve("sparse/stories260K-relu.gguf");
        Path out = dir.resolve("s.powerinfer.gguf");
        Run r = run("train-predictors", "-m", model.toString(), "--ffn-act", "relu", "-t", "1", "-c", "128", "--sample", "640",
                "--hidden", "16", "--epochs", "2", "--threshold-recall", "0.9", "-o", out.toString());
        assertThat(r.rc).as(r.err).isZero();
        assertThat(r.out).contains("recall").contains("file threshold").contains("wrote");
        try (GGUFFile f = GGUFFile.open(out)) {
            assertThat(f.isPowerInfer()).isTrue();
            assertThat(f.tensorInfo("blk.4.fc1.weight").ne()).containsExactly(64L, 16L);
            assertThat(f.has("powerinfer.sparse_threshold")).isTrue();
        }
        Run sameFile = run("train-predictors", "-m", model.toString(), "--ffn-act", "relu", "--sample", "64", "-o", model.toString());
        assertThat(sameFile.rc).isNotZero();
    }

    /** A mixture-of-experts model: one predictor per (layer, expert), and the PWRI file runs predict mode in generate. */
    @Test
    void trainPredictorsOnAMixtureOfExpertsModel() throws Exception {
        Path out = dir.resolve("moe.powerinfer.gguf");
        Run r = run("train-predictors", "-m", TESTDATA.resolve("archs/mixtral.gguf").toString(), "--ffn-act", "reglu", "-t", "2", "-c", "128",
                "--sample", "512", "--hidden", "16", "--epochs", "2", "-o", out.toString());
        assertThat(r.rc).as(r.err).isZero();
        assertThat(r.out).contains("expert").contains("file threshold").contains("wrote");
        try (GGUFFile f = GGUFFile.open(out)) {
            assertThat(f.tensorInfo("blk.1.fc1.3.weight").ne()).containsExactly(64L, 16L);
            assertThat(f.hasTensor("blk.1.fc2.3.weight")).isTrue();
        }
        Run g = run("generate", "-m", out.toString(), "--ffn-act", "reglu", "-p", "hello", "-n", "4", "-t", "1", "--stats");
        assertThat(g.rc).as(g.err).isZero();
        try (var m = org.powerinfer4j.engine.api.Model.open(out, org.powerinfer4j.engine.api.ModelOptions.defaults().withThreads(1)
                .withContextLength(64).withActivation(org.powerinfer4j.engine.model.FfnActivation.REGLU))) {
            assertThat(m.sparseMode()).isEqualTo(org.powerinfer4j.engine.sparse.SparseMode.PREDICT);
        }

        // placed per (layer, expert): profile, plan (our expert layers in the GPU index), then the hybrid FFN from that index
        Run p = run("profile", "-m", out.toString(), "--ffn-act", "reglu", "-t", "1", "-c", "128", "--sample", "256");
        assertThat(p.rc).as(p.err).isZero();
        Run plan = run("plan", "-m", out.toString(), "--vram-budget", "0.002", "-c", "128", "-b", "8", "--tile", "4");
        assertThat(plan.rc).as(plan.err).isZero();
        assertThat(plan.out).contains("mixture of experts: 8 units").contains("blk.1.e3").contains("hot FFN rows");
        Path idxFile = dir.resolve("moe.powerinfer.gguf.generated.gpuidx");
        GpuIndex idx = GpuIndex.read(idxFile);
        assertThat(idx.experts(1)).isEqualTo(4);
        assertThat(idx.totalNeurons()).isPositive();
        Run hybrid = run("generate", "-m", out.toString(), "--ffn-act", "reglu", "-p", "hello", "-n", "4", "-t", "1", "-b", "8",
                "--gpu", "sim", "--gpu-index", idxFile.toString());
        assertThat(hybrid.rc).as(hybrid.err).isZero();
        assertThat(hybrid.err).doesNotContain("experts run on the CPU");
    }
}
