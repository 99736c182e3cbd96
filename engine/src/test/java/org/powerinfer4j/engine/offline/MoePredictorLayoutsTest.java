package org.powerinfer4j.engine.offline;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.powerinfer4j.engine.TestData;
import org.powerinfer4j.engine.api.Model;
import org.powerinfer4j.engine.api.ModelOptions;
import org.powerinfer4j.engine.model.FfnActivation;
import org.powerinfer4j.engine.sparse.SparseMode;

/** The per-expert vs per-layer predictor comparison of mixture-of-experts layers ({@link MoePredictorLayouts}). */
class MoePredictorLayoutsTest {

    /**
     * One predictor over two blocks whose rules are opposite (block 0's neuron r fires when x[r mod 8] &gt; 0.3,
     * block 1's when it is &lt; −0.3): each sample labels only its own block, so both are learned; were a sample's
     * labels applied to the other block too, the two rules would cancel and neither could be recalled.
     */
    @Test
    void aLayerWidePredictorLearnsEachBlockFromItsOwnSamplesOnly() {
        int dim = 8, ff = 16, words = 1, n = 4000;
        SplittableRandom r = new SplittableRandom(5);
        float[] x = new float[n * dim];
        long[] masks = new long[n];
        int[] block = new int[n];
        for (int t = 0; t < n; t++) {
            block[t] = t % 2;
            for (int j = 0; j < dim; j++) x[t * dim + j] = (float) r.nextGaussian();
            for (int i = 0; i < ff; i++) {
                float v = x[t * dim + i % dim];
                if (block[t] == 0 ? v > 0.3f : v < -0.3f) masks[t] |= 1L << i;
            }
        }
        // blocks = 3: block 2 has no samples, and its rows must come out as they were drawn
        PredictorTrainer.Samples s = new PredictorTrainer.Samples(x, masks, block, 3, dim, ff, words);
        PredictorTrainer.Config cfg = PredictorTrainer.Config.defaults(dim).withEpochs(30).withSeed(9);
        int[] train = IntStream.range(0, 3500).toArray(), test = IntStream.range(3500, n).toArray();
        float[][] w = PredictorTrainer.fit(s, train, 16, cfg, 77);
        for (int b = 0; b < 2; b++) {
            int bb = b;
            int[] mine = IntStream.of(test).filter(t -> block[t] == bb).toArray();
            double[] m = PredictorTrainer.metrics(s, mine, 16, w[0], w[1], 0f);
            assertThat(m[0]).as("block %d held-out recall", b).isGreaterThan(0.85);
            assertThat(m[1]).as("block %d held-out precision", b).isGreaterThan(0.8);
        }
        float[][] other = PredictorTrainer.fit(s, IntStream.range(0, 500).toArray(), 16, cfg.withEpochs(2), 77);
        for (int i = 2 * ff * 16; i < 3 * ff * 16; i++)
            assertThat(w[1][i]).as("untouched block 2, weight %d", i).isEqualTo(other[1][i]);
    }

    @Test
    void matchedHiddenSizeCostsWhatThePerExpertLayoutCosts() {
        // Mixtral-8x7B's shape, 2 experts per token: 2·128·(4096 + 14336) = 4,718,592; 144·(4096 + 2·14336) = 4,718,592
        assertThat(MoePredictorLayouts.matchedHidden(128, 4096, 14336, 2)).isEqualTo(144);
        assertThat(MoePredictorLayouts.matchedHidden(32, 64, 64, 1)).isEqualTo(32);
    }

    /** On the random Mixtral of {@code archs/} (ReGLU experts): a row per (layer, expert), both layouts measured, the costs equal within rounding. */
    @Test
    void comparesBothLayoutsOnEveryExpert() throws Exception {
        ModelOptions o = ModelOptions.defaults().withThreads(2).withContextLength(128).withActivation(FfnActivation.REGLU).withSparseMode(SparseMode.OFF);
        try (Model m = Model.open(TestData.file("archs/mixtral.gguf"), o)) {
            List<int[]> corpus = CalibrationCorpus.sample(m, 12, 96, 1.0f, 7);
            PredictorDataset data = PredictorDataset.collect(m, corpus, null);
            int k = m.config().params().expertsUsed();
            MoePredictorLayouts.Comparison c = MoePredictorLayouts.compare(data, PredictorTrainer.Config.defaults(m.config().dim()).withThreads(2)
                    .withSeed(3), 32, k, 0.95, null);
            System.out.print(c.table());
            assertThat(c.rows()).hasSize(m.config().layers() * m.config().params().experts());
            assertThat((double) c.sharedMacs()).isCloseTo(c.ownMacs(), org.assertj.core.data.Percentage.withPercentage(5));
            for (MoePredictorLayouts.Row row : c.rows()) {
                // half of a random model's expert neurons fire; both layouts do better than chance (precision = that half)
                assertThat(row.trulyActive()).isBetween(0.3, 0.7);
                assertThat(row.ownPrecision()).as("layer %d expert %d", row.layer(), row.expert()).isGreaterThan(row.trulyActive() + 0.1);
                assertThat(row.sharedPrecision()).as("layer %d expert %d", row.layer(), row.expert()).isGreaterThan(row.trulyActive() + 0.1);
                assertThat(row.ownPredictedAtTarget()).isBetween(row.trulyActive(), 1.0);
                assertThat(row.sharedPredictedAtTarget()).isBetween(row.trulyActive(), 1.0);
            }
            assertThat(c.table()).contains("per layer");
        }
    }
    /**
     * {@code train-predictors --moe-predictor layer}: one predictor per mixture-of-experts layer, written as that
     * layer's {@code fc1} {n_embd, H} and {@code fc2} {H, n_expert·n_ff}; the file opens in predict mode (each
     * expert running its block of fc2's rows), generates, and with every neuron predicted gives the dense logits.
     */
    @Test
    void aLayerWidePredictorFileRunsPredictMode(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
        java.nio.file.Path out = dir.resolve("mixtral-layer.powerinfer.gguf");
        int layers, experts, ff;
        try (Model m = Model.open(TestData.file("archs/mixtral.gguf"), options(SparseMode.OFF))) {
            layers = m.config().layers();
            experts = m.config().params().experts();
            ff = m.config().ffDim();
            PredictorDataset data = PredictorDataset.collect(m, CalibrationCorpus.sample(m, 8, 96, 1.0f, 7), null);
            PredictorTrainer.Result r = MoePredictorLayouts.trainLayerWide(data, PredictorTrainer.Config.defaults(m.config().dim())
                    .withCandidates(32).withThreads(2).withSeed(3), null);
            assertThat(r.layers()).hasSize(layers);
            for (PredictorTrainer.LayerPredictor p : r.layers()) {
                assertThat(p.expert()).isEqualTo(-1);
                assertThat(p.fc2()).hasSize(experts * ff * p.hidden());
                assertThat(p.precision()).as("layer %d better than chance", p.layer()).isGreaterThan(p.trulyActive() + 0.1);
            }
            PowerInferWriter.write(m.file(), r, out);
            PowerInferWriter.write(m.file(), perExpert(r, experts, ff), dir.resolve("mixtral-own.powerinfer.gguf"));
        }
        sharedHiddenGivesThePerExpertLogits(out, dir.resolve("mixtral-own.powerinfer.gguf"));
        try (org.powerinfer4j.engine.gguf.GGUFFile f = org.powerinfer4j.engine.gguf.GGUFFile.open(out)) {
            for (int l = 0; l < layers; l++) {
                assertThat(f.tensorInfo("blk." + l + ".fc1.weight").ne()).containsExactly((long) f.tensorInfo("blk." + l + ".ffn_gate_inp.weight").ne()[0], 32L);
                assertThat(f.tensorInfo("blk." + l + ".fc2.weight").ne()).containsExactly(32L, (long) experts * ff);
                assertThat(f.hasTensor("blk." + l + ".fc1.0.weight")).isFalse();
            }
        }
        try (Model p = Model.open(out, options(null)); org.powerinfer4j.engine.api.Session s = p.newSession()) {
            assertThat(p.sparseMode()).isEqualTo(SparseMode.PREDICT);
            var g = s.generate(new int[] {1, 5, 9}, org.powerinfer4j.engine.api.GenerationParams.defaults().withMaxTokens(8)
                    .withSampling(org.powerinfer4j.engine.sampling.SamplingParams.GREEDY).withStopAtEndOfGeneration(false), null);
            assertThat(g.generatedTokens()).hasSize(8);
            assertThat(p.sparsityStats().meanPredictedFraction()).isStrictlyBetween(0.05, 0.95);
        }
        int[] prompt = {1, 15, 27, 3, 99, 41, 8, 64};
        try (Model off = Model.open(out, options(SparseMode.OFF));
             Model all = Model.open(out, options(SparseMode.PREDICT).withSparseThreshold(Float.NEGATIVE_INFINITY));
             org.powerinfer4j.engine.api.Session a = off.newSession(); org.powerinfer4j.engine.api.Session b = all.newSession()) {
            for (int id : prompt) {
                float[] x = a.evaluate(id), y = b.evaluate(id);
                for (int v = 0; v < x.length; v++) assertThat(Math.abs(x[v] - y[v])).as("token %d logit %d", id, v).isLessThan(1e-4f);
            }
        }
        hybridUploadsTheSharedFc1Once(out, layers);
    }

    /** The layer-wide predictors as per-expert ones with the same values: fc1 copied to each expert, fc2 cut into its blocks. */
    private static PredictorTrainer.Result perExpert(PredictorTrainer.Result r, int experts, int ff) {
        List<PredictorTrainer.LayerPredictor> own = new java.util.ArrayList<>();
        for (PredictorTrainer.LayerPredictor p : r.layers())
            for (int e = 0; e < experts; e++)
                own.add(new PredictorTrainer.LayerPredictor(p.layer(), e, p.hidden(), p.fc1().clone(),
                        java.util.Arrays.copyOfRange(p.fc2(), e * ff * p.hidden(), (e + 1) * ff * p.hidden()), p.threshold(), p.recall(),
                        p.precision(), p.predictedActive(), p.trulyActive(), p.recallAtZero(), p.tried()));
        return new PredictorTrainer.Result(own, r.fileThreshold(), r.trainTokens(), r.heldOutTokens());
    }

    /**
     * A layer-wide predictor's hidden layer is computed once per token and shared by the routed experts
     * ({@code SparseExpertFeedForward.beginLayer}); the same predictors stored per expert run it once per expert. Decode
     * steps give the same logits bit for bit, and a prompt chunk (one product over all its tokens instead of one per
     * expert's group) within float summation order.
     */
    private static void sharedHiddenGivesThePerExpertLogits(java.nio.file.Path layerWide, java.nio.file.Path ownPerExpert) throws Exception {
        int[] prompt = {1, 15, 27, 3, 99, 41, 8, 64};
        try (Model shared = Model.open(layerWide, options(SparseMode.PREDICT)); Model own = Model.open(ownPerExpert, options(SparseMode.PREDICT));
             org.powerinfer4j.engine.api.Session a = shared.newSession(); org.powerinfer4j.engine.api.Session b = own.newSession()) {
            assertThat(own.weights().layers()[0].expertPredictorFc1(1)).as("per expert: its own fc1")
                    .isNotSameAs(own.weights().layers()[0].expertPredictorFc1(0));
            assertThat(shared.weights().layers()[0].expertPredictorFc1(1)).isSameAs(shared.weights().layers()[0].expertPredictorFc1(0));
            for (int id : prompt) assertThat(a.evaluate(id)).as("decode, token %d", id).containsExactly(b.evaluate(id));
            float[] x = a.evaluateAll(prompt, false), y = b.evaluateAll(prompt, false);
            float scale = 0;
            for (float v : y) scale = Math.max(scale, Math.abs(v));
            for (int i = 0; i < x.length; i++) assertThat(x[i]).as("prompt logit %d", i).isCloseTo(y[i], org.assertj.core.api.Assertions.within(1e-4f * scale));
        }
    }

    /**
     * The hybrid FFN on that file (simulated device, every neuron hot): each layer's shared fc1 is one device
     * allocation for all its experts, the footprint says so, the device holds exactly the footprint's bytes, and the
     * greedy tokens are the CPU predict mode's.
     */
    private static void hybridUploadsTheSharedFc1Once(java.nio.file.Path file, int layers) throws Exception {
        int[] prompt = {1, 15, 27, 3};
        var greedy = org.powerinfer4j.engine.api.GenerationParams.defaults().withMaxTokens(8)
                .withSampling(org.powerinfer4j.engine.sampling.SamplingParams.GREEDY).withStopAtEndOfGeneration(false);
        int[] cpu;
        try (Model m = Model.open(file, options(SparseMode.PREDICT).withKvCacheType(org.powerinfer4j.engine.tensor.GGMLType.F32));
             org.powerinfer4j.engine.api.Session s = m.newSession()) {
            cpu = s.generate(prompt, greedy, null).generatedTokens();
        }
        var gpu = org.powerinfer4j.engine.backend.GpuOptions.budget(org.powerinfer4j.engine.backend.GpuMode.SIMULATED, 1L << 30);
        try (Model m = Model.open(file, options(SparseMode.PREDICT).withKvCacheType(org.powerinfer4j.engine.tensor.GGMLType.F32).withGpu(gpu))) {
            var fp = m.deviceFootprint();
            for (int l = 0; l < layers; l++) {
                String prefix = "blk." + l + ".e";
                assertThat(fp.allocations().stream().filter(a -> a.category().equals("predictors") && a.label().startsWith(prefix) && a.label().endsWith(" fc1")))
                        .as("layer %d: one fc1 for its experts", l).hasSize(1);
                assertThat(fp.allocations().stream().filter(a -> a.category().equals("predictors") && a.label().startsWith(prefix) && a.label().endsWith(" fc2")))
                        .as("layer %d: an fc2 block per expert", l).hasSize(m.config().params().experts());
            }
            try (org.powerinfer4j.engine.api.Session s = m.newSession()) {
                assertThat(s.generate(prompt, greedy, null).generatedTokens()).containsExactly(cpu);
                assertThat(m.deviceBytesInUse()).as("device bytes with one session").isEqualTo(fp.allocatedBytes());
            }
            assertThat(m.hybridFeedForward().placement().totalHot()).isEqualTo(m.hybridFeedForward().placement().totalNeurons());
        }
    }

    private static ModelOptions options(SparseMode mode) {
        return ModelOptions.defaults().withThreads(2).withContextLength(128).withActivation(FfnActivation.REGLU).withSparseMode(mode);
    }
}
