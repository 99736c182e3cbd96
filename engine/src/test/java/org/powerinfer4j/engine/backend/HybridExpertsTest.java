package org.powerinfer4j.engine.backend;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.powerinfer4j.engine.TestData;
import org.powerinfer4j.engine.api.GenerationParams;
import org.powerinfer4j.engine.api.Model;
import org.powerinfer4j.engine.api.ModelOptions;
import org.powerinfer4j.engine.api.Session;
import org.powerinfer4j.engine.gguf.GGUFFile;
import org.powerinfer4j.engine.gpu.CudaBackend;
import org.powerinfer4j.engine.model.ModelConfig;
import org.powerinfer4j.engine.model.ModelException;
import org.powerinfer4j.engine.model.ModelWeights;
import org.powerinfer4j.engine.model.generator.ModelShape;
import org.powerinfer4j.engine.model.generator.PlantedSparsity;
import org.powerinfer4j.engine.model.generator.RandomModelGenerator;
import org.powerinfer4j.engine.offline.ActivationProfiler;
import org.powerinfer4j.engine.placement.ActivationStats;
import org.powerinfer4j.engine.placement.ExpertCounts;
import org.powerinfer4j.engine.placement.DeviceFootprint;
import org.powerinfer4j.engine.placement.GpuFootprint;
import org.powerinfer4j.engine.placement.GpuIndex;
import org.powerinfer4j.engine.sampling.SamplingParams;
import org.powerinfer4j.engine.sparse.SparseMode;
import org.powerinfer4j.engine.tensor.GGMLType;

/**
 * The hybrid FFN on a mixture-of-experts model: each (layer, routed expert) is a unit with its own hot neurons on the
 * device and cold ones on the CPU, planned from the profile's per-expert counts, written to and read from a GPU index
 * whose expert layers are [n_ff, n_expert] masks. On a generated planted-sparsity MoE (4 experts, 2 per token, a
 * predictor per expert) with the simulated device, the logits equal the CPU's predict mode within the float
 * summation order of the split (hot and cold partial sums added), and greedy tokens are the same.
 */
class HybridExpertsTest {
    @TempDir
    static Path dir;
    static Path model, profile;
    static final int BATCH = 4;

    @BeforeAll
    static void generateAndProfile() throws Exception {
        model = dir.resolve("moe-planted.gguf");
        new RandomModelGenerator(ModelShape.of(128, 2, 512, 4, 4, false), GGMLType.Q8_0, TestData.file("models/stories260K.gguf"))
                .seed(7).threads(2).sparseRelu(PlantedSparsity.Spec.defaults().withSparsity(0.9)).experts(4, 2).write(model);
        profile = dir.resolve("moe-planted.activations.gguf");
        try (Model m = Model.open(model, base(SparseMode.OFF))) {
            SplittableRandom r = new SplittableRandom(11);
            List<int[]> chunks = new ArrayList<>();
            for (int c = 0; c < 4; c++) chunks.add(r.ints(32, 3, m.config().vocabSize()).toArray());
            ActivationProfiler.profile(m, chunks, 0f, null).write(profile);
        }
    }

    private static ModelOptions base(SparseMode mode) {
        return ModelOptions.defaults().withThreads(2).withContextLength(128).withBatchSize(BATCH).withKvCacheType(GGMLType.F32).withSparseMode(mode);
    }

    /** Units are (layer, expert) pairs named blk.L.eE, and their counts are the profile's per-expert counts. */
    @Test
    void unitsAreTheRoutedExperts() throws Exception {
        try (GGUFFile f = GGUFFile.open(model)) {
            ModelConfig c = ModelConfig.fromGGUF(f);
            HybridUnits u = HybridUnits.of(c, ModelWeights.load(f, c), null, null);
            assertThat(u.size()).isEqualTo(2 * 4);
            assertThat(u.ofExperts()).isTrue();
            assertThat(u.label(u.unit(1, 3))).isEqualTo("blk.1.e3");
            assertThat(u.weights(u.unit(1, 3)).ffnUp().rows()).isEqualTo(512);
            assertThat(u.weights(u.unit(1, 3)).hasPredictor()).as("the expert's own fc1.3/fc2.3 as the unit's predictor").isTrue();
            ActivationStats stats = ActivationStats.read(profile);
            long[][] counts = u.counts(stats, "profile");
            assertThat(counts[u.unit(0, 2)]).containsExactly(stats.experts(0).neurons()[2]);
            // statistics without the per-expert counts cannot place experts: one clear line
            ActivationStats layerOnly = new ActivationStats(stats.counts(), stats.tokens(), "m", ActivationStats.CRITERION_NONZERO, 0f);
            assertThatThrownBy(() -> u.counts(layerOnly, "old.activations.gguf")).isInstanceOf(ModelException.class)
                    .hasMessageContaining("no per-expert counts for layer 0").hasMessageContaining("profile the model again");
        }
    }

    /**
     * Hot experts get more of the budget: with expert 0 of layer 0 receiving ten times the tokens of the others (so its
     * neurons fire ten times as often), the solver gives it more hot neurons than any other expert of the layer.
     */
    @Test
    void theSolverPrefersHotExperts() throws Exception {
        try (GGUFFile f = GGUFFile.open(model)) {
            ModelConfig c = ModelConfig.fromGGUF(f);
            ModelWeights w = ModelWeights.load(f, c);
            HybridUnits u = HybridUnits.of(c, w, null, null);
            ActivationStats stats = scaled(ActivationStats.read(profile), 0, 0, 10);
            var fp = HybridPlacement.footprint(u, BATCH);
            long budget = fixedBytes(fp) + fp.allNeuronBytes() / 8;
            HybridPlacement p = HybridPlacement.planned(fp, u.counts(stats, "skewed"), budget, 1, "test");
            int hot0 = p.hotCount(u.unit(0, 0));
            for (int e = 1; e < 4; e++) assertThat(hot0).as("expert 0 against expert %d", e).isGreaterThan(p.hotCount(u.unit(0, e)));
            assertThat(p.totalHot()).isGreaterThan(0);
        }
    }

    /**
     * An expert's own predictor is charged only if the expert gets hot rows: with expert 2 of layer 1 never routed
     * (its counts zeroed), a budget that cannot hold every neuron leaves it cold, does not reserve its fc1.2/fc2.2,
     * and spends those bytes on other experts' neurons; the model then allocates no more than the budget.
     */
    @Test
    void anExpertWithoutHotRowsCostsNoPredictorBytes() throws Exception {
        try (GGUFFile f = GGUFFile.open(model)) {
            ModelConfig c = ModelConfig.fromGGUF(f);
            ModelWeights w = ModelWeights.load(f, c);
            HybridUnits u = HybridUnits.of(c, w, null, null);
            ActivationStats stats = scaled(ActivationStats.read(profile), 1, 2, 0);
            var fp = HybridPlacement.footprint(u, BATCH);
            long[] setup = fp.unitSetup();
            int unused = u.unit(1, 2);
            assertThat(setup[unused]).as("fc1.2 + fc2.2 of layer 1").isEqualTo(GpuFootprint.pad(w.layers()[1].expertPredictorFc1(2).data().byteSize())
                    + GpuFootprint.pad(w.layers()[1].expertPredictorFc2(2).data().byteSize()));
            assertThat(fp.fixedItems()).as("no expert's own predictor among the fixed parts").noneMatch(it -> it.category().equals("predictors") && it.bytes() > 0);
            long budget = fixedBytes(fp) + fp.allNeuronBytes() / 2;
            HybridPlacement p = HybridPlacement.planned(fp, u.counts(stats, "one expert unused"), budget, 1, "test");
            var sol = p.plan().hot();
            assertThat(p.hotCount(unused)).isZero();
            assertThat(p.totalHot()).isLessThan(p.totalNeurons());
            long ownPredictorsOfHotUnits = 0;
            for (int unit = 0; unit < u.size(); unit++) if (p.hotCount(unit) > 0) ownPredictorsOfHotUnits += setup[unit];
            assertThat(sol.setupBytes()).isEqualTo(ownPredictorsOfHotUnits);
            // charged up front, every predictor left exactly allNeuronBytes / 2 for neurons
            assertThat(sol.neuronBytes()).as("the unused expert's predictor bytes went to neurons").isGreaterThan(fp.allNeuronBytes() / 2);
            assertThat(p.plan().usedBytes()).isLessThanOrEqualTo(budget);
            DeviceFootprint run = DeviceFootprint.hybridFfn(u.allWeights(), u.labels(), p.hotCounts(), BATCH);
            assertThat(run.allocations()).as("the unused expert's predictor is not uploaded").noneMatch(a -> a.label().startsWith("blk.1.e2 "));
            assertThat(run.totalBytes()).isLessThanOrEqualTo(budget);
        }
    }

    /** The GPU index of an expert placement: [n_ff, n_expert] masks, flat ids E·n_ff + r, read back to the same units. */
    @Test
    void expertLayersRoundTripThroughTheGpuIndex() throws Exception {
        try (GGUFFile f = GGUFFile.open(model)) {
            ModelConfig c = ModelConfig.fromGGUF(f);
            HybridUnits u = HybridUnits.of(c, ModelWeights.load(f, c), null, null);
            HybridSetup.DevicePlan plan = HybridSetup.planFromProfile(c, ModelWeights.load(f, c), 128, BATCH, 3L << 20, ActivationStats.read(profile), 32, "test");
            GpuIndex idx = plan.gpuIndex(3L << 20);
            assertThat(idx.experts(0)).isEqualTo(4);
            assertThat(idx.ffSizes()[1]).isEqualTo(4 * 512);
            Path file = dir.resolve("moe.gpuidx");
            idx.write(file);
            try (GGUFFile g = GGUFFile.open(file)) {
                assertThat(g.tensorInfo("blk.0.gpu_idx").ne()).containsExactly(512, 4);
            }
            GpuIndex back = GpuIndex.read(file);
            assertThat(back).isEqualTo(idx);
            HybridPlacement p = u.fromGpuIndex(back, null, "index");
            for (int unit = 0; unit < u.size(); unit++) assertThat(p.hot(unit)).as(u.label(unit)).containsExactly(plan.placement().hot(unit));
            // a dense index (PowerInfer's) does not fit an expert model
            GpuIndex dense = GpuIndex.of(0, new int[] {512, 512}, new int[][] {{1}, {}});
            assertThatThrownBy(() -> u.fromGpuIndex(dense, null, "dense")).isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("GPU index layer 0 has 512 neurons, the model 4 experts of 512 neurons");
        }
    }

    /**
     * End to end on the simulated device, from the profile next to the model: experts' hot neurons are served on the
     * device, and every logit is the CPU predict mode's within 1e-3 (the same neurons, summed as a hot and a cold
     * partial; Q8_0 down rows from the same F16 neuron-major copy), greedy tokens identical; then from the index
     * {@code plan} would write, the same.
     */
    @Test
    void simulatedDeviceMatchesTheCpu() throws Exception {
        endToEnd(GpuMode.SIMULATED, "device simulated");
    }

    /** The same through the CUDA backend and the PTX kernels (cuda-emu in CI's gpu-emulated run, a real device where there is one). */
    @Test
    @Tag("gpu")
    void cudaDeviceMatchesTheCpu() throws Exception {
        assumeTrue(CudaBackend.isAvailable(), CudaBackend.unavailableReason());
        endToEnd(GpuMode.CUDA, "hybrid FFN: device ");
    }

    /** The same with every expert call of two or more tokens run as GEMMs on the device ({@link HybridDevicePass}). */
    @Test
    void simulatedDeviceWithDenseExpertBatchesMatchesTheCpu() throws Exception {
        denseFromTwo(() -> endToEnd(GpuMode.SIMULATED, "device simulated"));
    }

    @Test
    @Tag("gpu")
    void cudaDeviceWithDenseExpertBatchesMatchesTheCpu() throws Exception {
        assumeTrue(CudaBackend.isAvailable(), CudaBackend.unavailableReason());
        denseFromTwo(() -> endToEnd(GpuMode.CUDA, "hybrid FFN: device "));
    }

    private interface Run {
        void run() throws Exception;
    }

    private static void denseFromTwo(Run r) throws Exception {
        String key = "powerinfer4j.gpu.hybridDenseFrom";
        System.setProperty(key, "2");
        try {
            r.run();
        } finally {
            System.clearProperty(key);
        }
    }

    private static void endToEnd(GpuMode mode, String deviceLine) throws Exception {
        int[] prompt = new SplittableRandom(3).ints(10, 3, 512).toArray();
        float[][] cpu;
        int[] cpuTokens;
        try (Model m = Model.open(model, base(SparseMode.PREDICT))) {
            cpu = logits(m, prompt);
            cpuTokens = greedy(m, prompt);
        }
        long budget;
        try (GGUFFile f = GGUFFile.open(model)) {
            ModelConfig c = ModelConfig.fromGGUF(f);
            HybridUnits u = HybridUnits.of(c, ModelWeights.load(f, c), null, null);
            var fp = HybridPlacement.footprint(u, BATCH);
            budget = fixedBytes(fp) + fp.allNeuronBytes() / 3;
        }
        GpuOptions gpu = GpuOptions.budget(mode, budget).withActivations(profile);
        Path index = dir.resolve("from-run.gpuidx");
        try (Model m = Model.open(model, base(SparseMode.PREDICT).withGpu(gpu))) {
            HybridFeedForward h = m.hybridFeedForward();
            assertThat(h).isNotNull();
            assertThat(h.placement().layers()).as("one unit per (layer, expert)").isEqualTo(8);
            assertThat(h.placement().totalHot()).isBetween(1L, h.placement().totalNeurons() - 1);
            float[][] got = logits(m, prompt);
            for (int i = 0; i < prompt.length; i++) assertThat(maxAbsDiff(cpu[i], got[i])).as("position %d", i).isLessThan(1e-3);
            assertThat(greedy(m, prompt)).containsExactly(cpuTokens);
            long served = 0;
            for (int unit = 0; unit < 8; unit++) served += h.gpuComputed(unit);
            assertThat(served).as("predicted-active neurons computed on the device").isPositive();
            String summary = m.placementSummary();
            System.out.print(summary);
            assertThat(summary).contains("blk.1.e3").contains(deviceLine);
            assertThat(h.loadNotes()).as("everything placed").isEmpty();
            try (GGUFFile f = GGUFFile.open(model)) {
                ModelConfig c = ModelConfig.fromGGUF(f);
                HybridUnits.of(c, ModelWeights.load(f, c), null, null).toGpuIndex(budget, h.placement()).write(index);
            }
        }
        try (Model m = Model.open(model, base(SparseMode.PREDICT).withGpu(GpuOptions.index(mode, index)))) {
            assertThat(m.hybridFeedForward().placement().totalHot()).isPositive();
            assertThat(greedy(m, prompt)).containsExactly(cpuTokens);
        }
    }

    /** The profile with expert {@code e} of layer {@code layer} receiving {@code factor} times its tokens (its neurons firing as often more). */
    private static ActivationStats scaled(ActivationStats real, int layer, int e, long factor) {
        ExpertCounts[] counts = new ExpertCounts[2];
        long[][] layerCounts = new long[2][];
        for (int l = 0; l < 2; l++) {
            long[][] n = real.experts(l).neurons().clone();
            long[] t = real.experts(l).tokens().clone();
            if (l == layer) {
                n[e] = n[e].clone();
                for (int i = 0; i < n[e].length; i++) n[e][i] *= factor;
                t[e] *= factor;
            }
            counts[l] = new ExpertCounts(n, t);
            layerCounts[l] = counts[l].summedOverExperts();
        }
        return new ActivationStats(layerCounts, real.tokens(), "m", ActivationStats.CRITERION_NONZERO, 0f, counts);
    }

    /** Workspace, shared predictor parts, per-unit index maps, and every expert's own predictor (its setup). */
    private static long fixedBytes(org.powerinfer4j.engine.placement.GpuFootprint fp) {
        long b = fp.workspace();
        for (var it : fp.fixedItems()) b += it.bytes();
        for (long o : fp.layerOverhead()) b += o;
        for (long o : fp.unitSetup()) b += o;
        return b;
    }

    private static float[][] logits(Model m, int[] seq) {
        try (Session s = m.newSession()) {
            float[][] r = new float[seq.length][];
            int i = 0;
            // a prompt chunk (tokens grouped per expert, batches up to BATCH) then single tokens
            float[] rows = s.evaluateAll(java.util.Arrays.copyOf(seq, 5), false);
            int vocab = m.config().vocabSize();
            for (; i < 5; i++) r[i] = java.util.Arrays.copyOfRange(rows, i * vocab, (i + 1) * vocab);
            for (; i < seq.length; i++) r[i] = s.evaluate(seq[i]).clone();
            return r;
        }
    }

    private static int[] greedy(Model m, int[] prompt) {
        try (Session s = m.newSession()) {
            return s.generate(prompt, GenerationParams.defaults().withMaxTokens(12).withSampling(SamplingParams.GREEDY).withStopAtEndOfGeneration(false), null)
                    .generatedTokens();
        }
    }

    private static double maxAbsDiff(float[] a, float[] b) {
        double d = 0;
        for (int i = 0; i < a.length; i++) d = Math.max(d, Math.abs(a[i] - b[i]));
        return d;
    }
}
