package org.powerinfer4j.engine.model.generator;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.EnumSource;
import org.powerinfer4j.engine.TestData;
import org.powerinfer4j.engine.api.GenerationParams;
import org.powerinfer4j.engine.api.Model;
import org.powerinfer4j.engine.api.ModelOptions;
import org.powerinfer4j.engine.api.Session;
import org.powerinfer4j.engine.backend.GpuMode;
import org.powerinfer4j.engine.backend.GpuOptions;
import org.powerinfer4j.engine.gguf.GGUFFile;
import org.powerinfer4j.engine.model.FfnActivation;
import org.powerinfer4j.engine.sampling.SamplingParams;
import org.powerinfer4j.engine.sparse.SparseMode;
import org.powerinfer4j.engine.sparse.SparsityStats;
import org.powerinfer4j.engine.tensor.GGMLType;

/**
 * Generated Falcon and OPT files (n_embd 128, n_ff 512, 2 layers): they load with the engine's loader, generate,
 * and under {@code --sparse-relu} show the planted sparsity, predictors that recall it, and exact = off.
 */
class ArchGeneratorTest {
    @TempDir
    static Path dir;

    private static ModelShape shape(ModelArch arch) {
        return ModelShape.of(128, 2, 512, 4, arch == ModelArch.FALCON ? 1 : 4, arch == ModelArch.OPT);
    }

    private static RandomModelGenerator generator(ModelArch arch, GGMLType type, PlantedSparsity.Spec spec) throws Exception {
        return new RandomModelGenerator(shape(arch), type, TestData.file("models/stories260K.gguf")).seed(7).threads(2)
                .architecture(arch).sparseRelu(spec);
    }

    /** The file for (arch, sparsity), written once per class; sparsity 0 = dense. */
    private static Path file(ModelArch arch, double sparsity) throws Exception {
        Path p = dir.resolve(arch + "-" + sparsity + ".gguf");
        if (!Files.exists(p))
            generator(arch, GGMLType.Q8_0, sparsity == 0 ? null : PlantedSparsity.Spec.defaults().withSparsity(sparsity)).write(p);
        return p;
    }

    private static ModelOptions options(SparseMode mode) {
        return ModelOptions.defaults().withThreads(2).withContextLength(128).withSparseMode(mode).withSparseStats(true);
    }

    private static int[] greedy(Path p, SparseMode mode) throws Exception {
        try (Model m = Model.open(p, options(mode)); Session s = m.newSession()) {
            assertThat(m.sparseMode()).isEqualTo(mode);
            return s.generate(new int[] {1, 72, 101, 108}, GenerationParams.defaults().withMaxTokens(16)
                    .withSampling(SamplingParams.GREEDY).withStopAtEndOfGeneration(false), null).generatedTokens();
        }
    }

    private static SparsityStats run(Model m, int n) {
        SplittableRandom r = new SplittableRandom(5);
        try (Session s = m.newSession()) {
            for (int i = 0; i < n; i++) s.evaluate(3 + r.nextInt(m.config().vocabSize() - 3));
        }
        return m.sparsityStats();
    }

    @Test
    void falconHasLlamaCppsTensorsAndKeys() throws Exception {
        try (GGUFFile f = GGUFFile.open(file(ModelArch.FALCON, 0))) {
            assertThat(f.isPowerInfer()).isFalse();
            assertThat(f.getString("general.architecture", null)).isEqualTo("falcon");
            assertThat(f.getInt("falcon.attention.head_count_kv", -1)).isEqualTo(1);
            assertThat(f.getFloat("falcon.attention.layer_norm_epsilon", Float.NaN)).isEqualTo(1e-5f);
            assertThat(f.has("falcon.attention.layer_norm_rms_epsilon")).isFalse();
            assertThat(f.tensorInfo("blk.0.attn_qkv.weight").ne()).containsExactly(128, 128 + 2 * 32);
            assertThat(f.tensorInfo("blk.1.attn_norm.bias").ne()).containsExactly(128);
            assertThat(f.tensorInfo("blk.1.ffn_up.weight").ne()).containsExactly(128, 512);
            assertThat(f.tensorInfo("blk.1.ffn_down.weight").ne()).containsExactly(512, 128);
            assertThat(f.hasTensor("blk.0.ffn_gate.weight") || f.hasTensor("blk.0.ffn_norm.weight") || f.hasTensor("blk.0.attn_q.weight")).isFalse();
            assertThat(f.hasTensor("output_norm.bias") && f.hasTensor("output.weight")).isTrue();
        }
    }

    @Test
    void optHasPowerInfersLayout() throws Exception {
        try (GGUFFile f = GGUFFile.open(file(ModelArch.OPT, 0))) {
            assertThat(f.getString("general.architecture", null)).isEqualTo("opt");
            assertThat(f.getInt("opt.context_length", -1)).isEqualTo(2050);
            assertThat(f.tensorInfo("position_embd.weight").ne()).containsExactly(128, 2050);
            for (String b : new String[] {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_up", "ffn_down", "attn_norm", "ffn_norm"})
                assertThat(f.hasTensor("blk.1." + b + ".bias")).as(b).isTrue();
            assertThat(f.hasTensor("output.weight") || f.hasTensor("blk.0.ffn_gate.weight")).isFalse();
        }
    }

    @ParameterizedTest(name = "{0} sparsity {1}")
    @CsvSource({"FALCON, 0", "OPT, 0", "FALCON, 0.9", "OPT, 0.9"})
    void parameterCountIsWhatTheFileHolds(ModelArch arch, double sparsity) throws Exception {
        long elements = 0;
        try (GGUFFile f = GGUFFile.open(file(arch, sparsity))) {
            for (String n : f.tensorNames()) {
                long e = 1;
                for (long x : f.tensorInfo(n).ne()) e *= x;
                elements += e;
            }
        }
        assertThat(generator(arch, GGMLType.Q8_0, sparsity == 0 ? null : PlantedSparsity.Spec.defaults().withSparsity(sparsity))
                .parameterCount()).isEqualTo(elements);
    }

    @ParameterizedTest
    @EnumSource(value = ModelArch.class, names = {"FALCON", "OPT"})
    void denseModelLoadsAndGenerates(ModelArch arch) throws Exception {
        Path p = file(arch, 0);
        try (Model m = Model.open(p, ModelOptions.defaults().withThreads(2).withContextLength(64))) {
            assertThat(m.config().architecture()).isEqualTo(arch.ggufName());
            assertThat(m.config().activation()).isEqualTo(arch == ModelArch.FALCON ? FfnActivation.GELU : FfnActivation.REGLU);
        }
        assertThat(greedy(p, SparseMode.OFF)).hasSize(16);
    }

    @ParameterizedTest(name = "{0} sparsity {1}")
    @CsvSource({"FALCON, 0.9", "OPT, 0.9", "FALCON, 0.7", "OPT, 0.7"})
    void measuredSparsityIsNearThePlantedOne(ModelArch arch, double sparsity) throws Exception {
        Path p = file(arch, sparsity);
        try (GGUFFile f = GGUFFile.open(p)) {
            assertThat(f.isPowerInfer()).isTrue();
            assertThat(f.getString("general.architecture", null)).isEqualTo(arch.ggufName());
            assertThat(f.hasTensor("blk.0.ffn_down.weight")).isFalse();
            assertThat(f.tensorInfo("blk.0.ffn_down_t.weight").ne()).containsExactly(128, 512);
            assertThat(f.tensorInfo("blk.1.fc2.weight").ne()).containsExactly(64, 512);
        }
        try (Model m = Model.open(p, options(SparseMode.EXACT))) {
            assertThat(m.config().activation()).isEqualTo(FfnActivation.REGLU);
            SparsityStats st = run(m, 64);
            for (int l = 0; l < 2; l++)
                assertThat(1 - st.activeFraction(l)).as("layer %d sparsity", l).isCloseTo(sparsity, within(0.04));
        }
    }

    @ParameterizedTest
    @EnumSource(value = ModelArch.class, names = {"FALCON", "OPT"})
    void predictorsRecallAndExactEqualsOff(ModelArch arch) throws Exception {
        Path p = file(arch, 0.9);
        try (Model m = Model.open(p, options(SparseMode.PREDICT))) {
            SparsityStats st = run(m, 64);
            assertThat(st.verified()).isTrue();
            for (int l = 0; l < 2; l++) {
                assertThat(st.recall(l)).as("layer %d recall", l).isGreaterThanOrEqualTo(0.85);
                assertThat(st.predictedFraction(l)).as("layer %d predicted", l).isLessThan(0.25);
            }
        }
        assertThat(greedy(p, SparseMode.EXACT)).containsExactly(greedy(p, SparseMode.OFF));
        assertThat(greedy(p, SparseMode.PREDICT)).hasSize(16);
        // greedy text of a planted model is repetitive, so also compare every position's logits
        GeneratedLogits.assertClose(logits(p, SparseMode.OFF, 24), logits(p, SparseMode.EXACT, 24), 1e-4f);
    }

    /**
     * Asked for a GPU in predict mode: Falcon's FFN goes to the hybrid executor (its attention stays on the CPU:
     * attention and FFN run in parallel, so there is no attention block to move), and so does OPT's, biases included
     * (its sparsity thresholds are planted in {@code ffn_up.bias}, so a bias lost or added on an inactive row
     * changes which neurons fire), both with the CPU's logits up to summation order.
     */
    @ParameterizedTest
    @EnumSource(value = ModelArch.class, names = {"FALCON", "OPT"})
    void gpuRequestRunsTheHybridFfnWhereItCan(ModelArch arch) throws Exception {
        hybridWhereItCan(arch, GpuMode.SIMULATED);
    }

    /** The same on CUDA (cuda-emu in CI). */
    @ParameterizedTest
    @EnumSource(value = ModelArch.class, names = {"FALCON", "OPT"})
    @org.junit.jupiter.api.Tag("gpu")
    void onCudaTheHybridFfnRunsWhereItCan(ModelArch arch) throws Exception {
        org.junit.jupiter.api.Assumptions.assumeTrue(org.powerinfer4j.engine.gpu.CudaBackend.isAvailable(),
                org.powerinfer4j.engine.gpu.CudaBackend.unavailableReason());
        hybridWhereItCan(arch, GpuMode.CUDA);
    }

    private void hybridWhereItCan(ModelArch arch, GpuMode mode) throws Exception {
        Path p = file(arch, 0.9);
        int batch = options(SparseMode.PREDICT).batchSize();
        long dense = denseBatchWorkspace(p, batch);   // the workspace a chunk's dense device batches add
        ModelOptions gpu = options(SparseMode.PREDICT).withSparseStats(false).withGpu(GpuOptions.budget(mode, (1 << 20) + (384 << 10) + dense));   // CUDA's 1 MiB stream scratch reserve + part of the FFN
        if (arch == ModelArch.OPT)   // its attention blocks go first, with buffers (and GEMM scratch) for a prompt chunk
            gpu = gpu.withGpu(GpuOptions.budget(mode, (7 << 20) / 4 + chunkBuffers(p, gpu.contextLength(), gpu.batchSize()) + dense));
        try (Model m = Model.open(p, gpu)) {
            m.newSession().close();
            assertThat(m.hybridFeedForward()).as("the hybrid FFN takes %s (OPT: with its biases)", arch).isNotNull();
            var placement = m.hybridFeedForward().placement();
            assertThat(placement.totalHot()).as("some neurons hot on the device, some cold").isPositive().isLessThan(java.util.Arrays.stream(placement.ffSizes()).sum());
            if (arch == ModelArch.FALCON) assertThat(m.gpuLayers()).as("no attention block on the device").isNull();
            else assertThat(m.gpuLayers()).as("OPT's attention blocks on the device").isNotNull();
        }
        float[][] dev = logits(p, gpu, 8), cpu = logits(p, options(SparseMode.PREDICT).withSparseStats(false), 8);
        for (int i = 0; i < cpu.length; i++) {
            float scale = 0;
            for (float v : cpu[i]) scale = Math.max(scale, Math.abs(v));
            for (int v = 0; v < cpu[i].length; v++)
                assertThat(dev[i][v]).as("position %d logit %d", i, v).isCloseTo(cpu[i][v], within(1e-4f * scale + 1e-6f));
        }
    }

    /**
     * OPT's FFN has biases: the hybrid FFN uploads the hot rows' gate/up bias entries beside the rows, so the plan must
     * charge them. For budgets from "nothing hot" to "everything hot", what the runtime allocates never exceeds the budget.
     */
    @Test
    void optHybridPlanChargesTheHotRowsBiases() throws Exception {
        Path p = file(ModelArch.OPT, 0.9);
        try (GGUFFile f = GGUFFile.open(p)) {
            var c = org.powerinfer4j.engine.model.ModelConfig.fromGGUF(f);
            var w = org.powerinfer4j.engine.model.ModelWeights.load(f, c);
            assertThat(w.layers()[0].has("ffn_up.bias")).isTrue();
            int hotSomewhere = 0;
            for (long budget = 1 << 20; budget < 8 << 20; budget += 37_813) {
                var plan = org.powerinfer4j.engine.backend.HybridSetup.plan(c, w, 128, 4, budget, null, 1, "test");
                assertThat(plan.footprint().totalBytes()).as("budget %,d", budget).isLessThanOrEqualTo(budget);
                if (plan.placement().totalHot() > 0) hotSomewhere++;
            }
            assertThat(hotSomewhere).as("budgets with hot neurons").isGreaterThan(10);
        }
    }

    /** What the attention blocks' session state for chunks of {@code batch} tokens adds to their one-token footprint. */
    /**
     * Planned hybrid workspace bytes that chunks of {@code batch} tokens add by running as GEMMs on the device
     * (every token's predictor and hot-row values, the GEMMs' stream scratch): the footprint against the same without
     * dense batches ({@code -Dpowerinfer4j.gpu.hybridDenseFrom} above the batch).
     */
    private static long denseBatchWorkspace(Path p, int batch) throws Exception {
        try (org.powerinfer4j.engine.gguf.GGUFFile f = org.powerinfer4j.engine.gguf.GGUFFile.open(p)) {
            var w = org.powerinfer4j.engine.model.ModelWeights.load(f, org.powerinfer4j.engine.model.ModelConfig.fromGGUF(f));
            long dense = org.powerinfer4j.engine.backend.HybridPlacement.footprint(w, batch).workspace();
            String key = "powerinfer4j.gpu.hybridDenseFrom";
            System.setProperty(key, String.valueOf(batch + 1));
            try {
                return dense - org.powerinfer4j.engine.backend.HybridPlacement.footprint(w, batch).workspace();
            } finally {
                System.clearProperty(key);
            }
        }
    }

    private static long chunkBuffers(Path p, int ctx, int batch) throws Exception {
        try (org.powerinfer4j.engine.gguf.GGUFFile f = org.powerinfer4j.engine.gguf.GGUFFile.open(p)) {
            var c = org.powerinfer4j.engine.model.ModelConfig.fromGGUF(f);
            var w = org.powerinfer4j.engine.model.ModelWeights.load(f, c);
            var g = org.powerinfer4j.engine.model.GraphBuilder.build(c, w);
            return org.powerinfer4j.engine.placement.DeviceFootprint.layers(c, g, w, 0, c.layers(), true, false, ctx, batch).totalBytes()
                    - org.powerinfer4j.engine.placement.DeviceFootprint.layers(c, g, w, 0, c.layers(), true, false, ctx, 1).totalBytes();
        }
    }

    /** Logits after each of {@code n} random tokens. */
    private static float[][] logits(Path p, SparseMode mode, int n) throws Exception {
        return logits(p, options(mode), n);
    }

    private static float[][] logits(Path p, ModelOptions options, int n) throws Exception {
        return GeneratedLogits.evaluate(p, options, n);
    }

    @Test
    void badCombinationsAreRejected() throws Exception {
        assertThatThrownBy(() -> ModelArch.parse("gpt2")).hasMessage("unknown architecture 'gpt2' (known: llama, falcon, opt)");
        PlantedSparsity.Spec drelu = PlantedSparsity.Spec.defaults().withActivation(FfnActivation.DRELU);
        assertThatThrownBy(() -> generator(ModelArch.FALCON, GGMLType.Q8_0, drelu)).hasMessageContaining("needs --arch llama");
        Path stories = TestData.file("models/stories260K.gguf");
        assertThatThrownBy(() -> new RandomModelGenerator(ModelShape.of(128, 1, 256, 4, 2, true), GGMLType.Q8_0, stories)
                .architecture(ModelArch.OPT)).hasMessageContaining("grouped-query");
        assertThat(ModelShape.presetArch("falcon-7b")).isEqualTo(ModelArch.FALCON);
        assertThat(ModelShape.presetArch("opt-6.7b")).isEqualTo(ModelArch.OPT);
        assertThat(ModelShape.preset("falcon-7b").parameters(65024, ModelArch.FALCON)).isBetween(6_900_000_000L, 7_300_000_000L);
        assertThat(ModelShape.preset("opt-6.7b").parameters(50272, ModelArch.OPT)).isBetween(6_600_000_000L, 6_800_000_000L);
        assertThat(ModelShape.presetArch("falcon-40b")).isEqualTo(ModelArch.FALCON);
        assertThat(ModelShape.presetArch("opt-30b")).isEqualTo(ModelArch.OPT);
        assertThat(ModelShape.preset("falcon-40b").parameters(65024, ModelArch.FALCON)).isBetween(41_000_000_000L, 43_000_000_000L);
        assertThat(ModelShape.preset("opt-30b").parameters(50272, ModelArch.OPT)).isBetween(29_500_000_000L, 30_500_000_000L);
    }
}
