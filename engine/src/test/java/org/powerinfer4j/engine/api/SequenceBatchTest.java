package org.powerinfer4j.engine.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;
import org.powerinfer4j.engine.TestData;
import org.powerinfer4j.engine.model.InferenceState;
import org.powerinfer4j.engine.model.ModelException;

/**
 * Decode steps of several sequences in one pass ({@code Transformer.forwardSequences}, what {@link DecodeBatcher}
 * runs) give each sequence exactly the logits of its step run alone, through the unbatched path of a model opened
 * with batching off — for every kernel family a product can take (float, Q8_0, repacked Q4_0, the K-quant word
 * kernels, the generic row kernels of Q2_K/Q3_K/IQ4), sequences at different positions, and the same pass shape
 * the server produces. That is {@link DecodeBatching#EXACT}, the default; {@link DecodeBatching#FAST} (matMul
 * products) is held to the same greedy tokens and a stated logit tolerance instead.
 */
class SequenceBatchTest {
    private static final int SEQUENCES = 5, STEPS = 4;

    @ParameterizedTest
    @ValueSource(strings = {"rand-k-f32", "rand-k-q8_0", "rand-k-q4_k_m", "rand-k-q5_k", "rand-k-q3_k", "rand-k-iq4_xs", "stories260K-q4_0"})
    void aBatchedStepEqualsTheStepAlone(String name) throws Exception {
        Path p = TestData.file("models/quantized/" + name + ".gguf");
        ModelOptions o = ModelOptions.defaults().withThreads(2).withContextLength(64).withBatchSequences(true);
        try (Model batched = Model.open(p, o); Model alone = Model.open(p, o.withBatchSequences(false))) {
            assertBatchedEqualsAlone(batched, alone, true);
        }
    }

    @Test
    void aBatchedStepEqualsTheStepAloneOnA110mModel() throws Exception {
        // big enough that every product (and the per-token matVecBatch) is split over the 2-thread pool
        Path p = GeneratedModels.llama110m();
        ModelOptions o = ModelOptions.defaults().withThreads(2).withContextLength(64).withBatchSequences(true);
        try (Model batched = Model.open(p, o); Model alone = Model.open(p, o.withBatchSequences(false))) {
            assertBatchedEqualsAlone(batched, alone, true);
        }
    }

    @Test
    void aBatchedStepEqualsTheStepAloneOnASparsePredictModel() throws Exception {
        // PowerInfer's predictor-gated FFN: each token's own predicted set, the union's rows read once per pass
        Path p = GeneratedModels.sparseRelu();
        ModelOptions o = ModelOptions.defaults().withThreads(2).withContextLength(64).withBatchSequences(true);
        try (Model batched = Model.open(p, o); Model alone = Model.open(p, o.withBatchSequences(false))) {
            assertThat(batched.sparseMode()).isEqualTo(org.powerinfer4j.engine.sparse.SparseMode.PREDICT);
            assertThat(batched.transformer().supportsSequenceBatches()).isTrue();
            assertBatchedEqualsAlone(batched, alone, true);
        }
    }

    /**
     * Mixture-of-experts layers: each token routed by its own router logits, its experts computed per token (dense
     * SwiGLU experts, a shared expert, ReLU experts exact, per-expert predictors), bit-identical to the step alone.
     */
    @ParameterizedTest
    @org.junit.jupiter.params.provider.CsvSource({"archs/mixtral.gguf,,OFF", "archs/mixtral-q8_0.gguf,,OFF", "archs/qwen3moe.gguf,,OFF",
            "archs/mixtral.gguf,REGLU,EXACT", "generated,,PREDICT"})
    void aBatchedStepEqualsTheStepAloneOnMixtureOfExperts(String file, String activation, String mode, @org.junit.jupiter.api.io.TempDir Path dir)
            throws Exception {
        Path p = file.equals("generated") ? dir.resolve("moe.gguf") : TestData.file(file);
        if (file.equals("generated"))
            new org.powerinfer4j.engine.model.generator.RandomModelGenerator(org.powerinfer4j.engine.model.generator.ModelShape.of(128, 2, 512, 4, 4, false),
                    org.powerinfer4j.engine.tensor.GGMLType.Q8_0, TestData.file("models/stories260K.gguf")).seed(3).threads(2)
                    .sparseRelu(org.powerinfer4j.engine.model.generator.PlantedSparsity.Spec.defaults()).experts(4, 2).write(p);
        ModelOptions o = ModelOptions.defaults().withThreads(2).withContextLength(64).withBatchSequences(true)
                .withSparseMode(org.powerinfer4j.engine.sparse.SparseMode.valueOf(mode));
        if (activation != null) o = o.withActivation(org.powerinfer4j.engine.model.FfnActivation.parse(activation));
        for (boolean exact : new boolean[] {true, false}) {
            ModelOptions m = o.withDecodeBatching(exact ? DecodeBatching.EXACT : DecodeBatching.FAST);
            try (Model batched = Model.open(p, m); Model alone = Model.open(p, m.withBatchSequences(false))) {
                assertThat(batched.transformer().supportsSequenceBatches()).isTrue();
                assertBatchedEqualsAlone(batched, alone, exact);
            }
        }
    }

    /**
     * {@link DecodeBatching#FAST}: the pass's products are one {@code MatrixOps.matMul} for all sequences. Not
     * bit-exact: matMul dequantizes each weight row to floats and sums it against the activations in a register
     * tile (per-lane partial sums over the row, then a fixed lane tree), while the fused mat-vec kernel of the step
     * alone sums per quant block (and for repacked Q4_0 with the −8 offset folded into a per-lane start), so the
     * float roundings differ, and a sequence's bits depend on its column in the tile. Stated instead: the greedy
     * token of every step is the one of the step alone, and every logit is within {@link #FAST_TOLERANCE} of it.
     */
    @ParameterizedTest
    @ValueSource(strings = {"rand-k-f32", "rand-k-q8_0", "rand-k-q4_k_m", "rand-k-q5_k", "rand-k-q3_k", "rand-k-iq4_xs", "stories260K-q4_0"})
    void aFastBatchedStepIsWithinRoundingOfTheStepAlone(String name) throws Exception {
        Path p = TestData.file("models/quantized/" + name + ".gguf");
        ModelOptions o = ModelOptions.defaults().withThreads(2).withContextLength(64).withDecodeBatching(DecodeBatching.FAST);
        try (Model batched = Model.open(p, o); Model alone = Model.open(p, o.withBatchSequences(false))) {
            assertBatchedEqualsAlone(batched, alone, false);
        }
    }

    @Test
    void aFastBatchedStepIsWithinRoundingOfTheStepAloneOnA110mModel() throws Exception {
        Path p = GeneratedModels.llama110m();
        ModelOptions o = ModelOptions.defaults().withThreads(2).withContextLength(64).withDecodeBatching(DecodeBatching.FAST);
        try (Model batched = Model.open(p, o); Model alone = Model.open(p, o.withBatchSequences(false))) {
            assertBatchedEqualsAlone(batched, alone, false);
        }
    }

    /** From 32 sequences repacked Q4_0 matrices take matMul's broadcast tiles in FAST mode, held to the same rule. */
    @Test
    void aFastPassOfManySequencesOnRepackedWeightsIsWithinRoundingOfTheStepAlone() throws Exception {
        Path p = TestData.file("models/quantized/stories260K-q4_0.gguf");
        ModelOptions o = ModelOptions.defaults().withThreads(2).withContextLength(128).withDecodeBatching(DecodeBatching.FAST);
        try (Model batched = Model.open(p, o); Model alone = Model.open(p, o.withBatchSequences(false))) {
            if (org.powerinfer4j.engine.kernels.RepackedQ4Kernels.SUPPORTED)   // the scalar run repacks nothing
                assertThat(batched.weights().layers()[0].wq().repacked()).as("repacked Q4_0").isNotNull();
            assertBatchedEqualsAlone(batched, alone, false, 33);
        }
    }

    /**
     * Max |Δ| of a logit in {@link DecodeBatching#FAST} against the step alone. Measured over these models (5
     * sequences × 4 steps each, in the default, 256-bit and scalar-kernel surefire runs): at most 6.1e-3, with logits up to
     * 15.9 in magnitude (relative 4.6e-4). Bound with an 8× margin; a wrong product (a column mixed up between
     * sequences, a lost tile row) moves logits by whole units.
     */
    private static final float FAST_TOLERANCE = 0.05f;

    private static void assertBatchedEqualsAlone(Model batched, Model alone, boolean exact) {
        assertBatchedEqualsAlone(batched, alone, exact, SEQUENCES);
    }

    private static void assertBatchedEqualsAlone(Model batched, Model alone, boolean exact, int sequences) {
        int vocab = batched.config().vocabSize();
        SplittableRandom r = new SplittableRandom(3);
        int[][] scripts = new int[sequences][];
        for (int i = 0; i < sequences; i++) {
            scripts[i] = new int[1 + 2 * i + STEPS];   // prompts of different lengths: each sequence at its own position
            for (int j = 0; j < scripts[i].length; j++) scripts[i][j] = 1 + r.nextInt(vocab - 1);
        }
        List<Session> seqs = new ArrayList<>(), refs = new ArrayList<>();
        try {
            for (int[] s : scripts) {
                Session a = batched.newSession(), b = alone.newSession();
                seqs.add(a);
                refs.add(b);
                int prompt = s.length - STEPS;
                a.evaluate(Arrays.copyOf(s, prompt));
                b.evaluate(Arrays.copyOf(s, prompt));
            }
            for (int step = 0; step < STEPS; step++) {
                InferenceState[] states = new InferenceState[sequences];
                int[] tokens = new int[sequences], positions = new int[sequences];
                for (int i = 0; i < sequences; i++) {
                    states[i] = seqs.get(i).state();
                    positions[i] = scripts[i].length - STEPS + step;
                    tokens[i] = scripts[i][positions[i]];
                }
                InferenceState scratch = InferenceState.forSequenceBatch(batched.config(), batched.contextLength(), sequences, 2, exact);
                batched.transformer().forwardSequences(batched.pool(), scratch, states, tokens, positions, sequences);
                for (int i = 0; i < sequences; i++) {
                    float[] want = refs.get(i).evaluate(tokens[i]);
                    float[] got = states[i].logits();
                    float maxDelta = 0;
                    for (int v = 0; v < want.length; v++) maxDelta = Math.max(maxDelta, Math.abs(got[v] - want[v]));
                    if (exact) {
                        assertThat(Arrays.equals(got, want)).as("sequence %d at position %d, step %d bit-identical (max |Δ| %s)", i, positions[i], step, maxDelta).isTrue();
                    } else {
                        assertThat(argmax(got)).as("sequence %d step %d greedy token", i, step).isEqualTo(argmax(want));
                        assertThat(maxDelta).as("sequence %d at position %d, step %d: max |Δ| of the logits", i, positions[i], step).isLessThanOrEqualTo(FAST_TOLERANCE);
                    }
                }
            }
        } finally {
            seqs.forEach(Session::close);
            refs.forEach(Session::close);
        }
    }

    private static int argmax(float[] v) {
        int best = 0;
        for (int i = 1; i < v.length; i++) if (v[i] > v[best]) best = i;
        return best;
    }

    /** Concurrent decoding sessions do share passes (fewer passes than steps), each still getting its tokens alone. */
    @Test
    void concurrentSessionsShareDecodePasses() throws Exception {
        Path p = GeneratedModels.llama110m();
        int sessions = 4, tokens = 24;
        try (Model m = Model.open(p, ModelOptions.defaults().withThreads(2).withContextLength(64).withBatchSequences(true))) {
            GenerationParams greedy = GenerationParams.defaults().withMaxTokens(tokens).withStopAtEndOfGeneration(false)
                    .withSampling(org.powerinfer4j.engine.sampling.SamplingParams.GREEDY);
            int[][] prompts = {{1, 5, 9}, {1, 7}, {1, 20, 30, 40}, {1, 100}};
            List<int[]> want = new ArrayList<>();
            for (int[] pr : prompts)
                try (Session s = m.newSession()) {
                    want.add(s.generate(pr, greedy, null).generatedTokens());
                }
            long[] before = m.decodeBatchCounts();
            CyclicBarrier go = new CyclicBarrier(sessions);
            List<Future<int[]>> got = new ArrayList<>();
            try (ExecutorService pool = Executors.newFixedThreadPool(sessions)) {
                for (int[] pr : prompts)
                    got.add(pool.submit(() -> {
                        try (Session s = m.newSession()) {
                            go.await();
                            return s.generate(pr, greedy, null).generatedTokens();
                        }
                    }));
                for (int i = 0; i < sessions; i++) assertThat(got.get(i).get()).as("stream %d", i).isEqualTo(want.get(i));
            }
            long[] after = m.decodeBatchCounts();
            long steps = after[0] - before[0], passes = after[1] - before[1];
            assertThat(steps).isEqualTo((long) sessions * (tokens - 1));
            assertThat(passes).as("passes for %d decode steps", steps).isLessThan(steps);
            // the leader waits for the previous pass's streams (DecodeBatcher.gather): 4 streams ride together.
            // Measured 3.83-4.0 on a loaded 2-core machine; 2.5 before the wait, when a pass set off with whoever
            // had queued and the rest formed a second, narrower one
            assertThat((double) steps / passes).as("mean pass width of %d streams", sessions).isGreaterThanOrEqualTo(3.0);
        }
    }

    /**
     * {@code -ngl}: whole layers on the device take decode steps of several sessions in one pass (the products over
     * all rows, RoPE and attention per row over its own session's device cache). Exact batching runs each row through
     * the one-token path: bit-identical to the step alone; fast batching keeps the greedy tokens and the tolerance.
     * The head stays on the CPU here, as in the unbatched model it is compared with.
     */
    @ParameterizedTest(name = "exact {0}")
    @ValueSource(booleans = {true, false})
    void deviceLayersTakeDecodeStepsOfSeveralSessions(boolean exact) throws Exception {
        deviceBatch(org.powerinfer4j.engine.backend.GpuMode.SIMULATED, exact);
    }

    @ParameterizedTest(name = "exact {0}")
    @ValueSource(booleans = {true, false})
    @org.junit.jupiter.api.Tag("gpu")
    void onCudaDeviceLayersTakeDecodeStepsOfSeveralSessions(boolean exact) throws Exception {
        org.junit.jupiter.api.Assumptions.assumeTrue(org.powerinfer4j.engine.gpu.CudaBackend.isAvailable(),
                org.powerinfer4j.engine.gpu.CudaBackend.unavailableReason());
        deviceBatch(org.powerinfer4j.engine.backend.GpuMode.CUDA, exact);
    }

    private static void deviceBatch(org.powerinfer4j.engine.backend.GpuMode mode, boolean exact) throws Exception {
        for (String name : new String[] {"stories260K-q8_0", "rand-k-q4_k_m"}) {
            Path p = TestData.file("models/quantized/" + name + ".gguf");
            int layers;
            try (var f = org.powerinfer4j.engine.gguf.GGUFFile.open(p)) {
                layers = org.powerinfer4j.engine.model.ModelConfig.fromGGUF(f).layers();
            }
            ModelOptions o = ModelOptions.defaults().withThreads(2).withContextLength(64).withBatchSize(4).withBatchSequences(true)
                    .withDecodeBatching(exact ? DecodeBatching.EXACT : DecodeBatching.FAST)
                    .withGpu(org.powerinfer4j.engine.backend.GpuOptions.layers(mode, layers));
            try (Model batched = Model.open(p, o); Model alone = Model.open(p, o.withBatchSequences(false))) {
                assertThat(batched.gpuLayers()).as(name).isNotNull();
                assertThat(batched.gpuLayers().deviceLayers()).isEqualTo(layers);
                assertThat(batched.transformer().supportsSequenceBatches()).as("device layers batch decode steps").isTrue();
                // 5 sequences over session buffers of 4 rows (-b 4): the pass goes through in two pieces
                assertBatchedEqualsAlone(batched, alone, exact);
                assertThat(batched.gpuLayers().sequenceRowsRun()).as("rows the device ran in sequence batches").isGreaterThanOrEqualTo((long) SEQUENCES * STEPS);
                assertThat(batched.gpuLayers().failed()).isFalse();
            }
        }
    }

    /**
     * PowerInfer's hybrid placement: the attention blocks on the device, each FFN's hot neurons there and its cold
     * ones on the CPU. Decode steps of several sessions share one pass: attention per row over its own session's
     * device cache, the FFN's rows as a prompt's (in pieces of the device workspace's -b rows); exact batching runs
     * each row alone through both, bit-identical to its step alone.
     */
    @ParameterizedTest(name = "exact {0}")
    @ValueSource(booleans = {true, false})
    void theHybridPlacementTakesDecodeStepsOfSeveralSessions(boolean exact) throws Exception {
        Path p = TestData.file("sparse/stories260K-relu.powerinfer.gguf");
        ModelOptions o = ModelOptions.defaults().withThreads(2).withContextLength(64).withBatchSize(4).withBatchSequences(true)
                .withDecodeBatching(exact ? DecodeBatching.EXACT : DecodeBatching.FAST)
                .withSparseMode(org.powerinfer4j.engine.sparse.SparseMode.PREDICT)
                .withGpu(org.powerinfer4j.engine.backend.GpuOptions.budget(org.powerinfer4j.engine.backend.GpuMode.SIMULATED, 1_610_000));
        try (Model batched = Model.open(p, o); Model alone = Model.open(p, o.withBatchSequences(false))) {
            var placement = batched.hybridFeedForward().placement();
            assertThat(placement.totalHot()).as("some neurons hot, some cold").isPositive().isLessThan(placement.totalNeurons());
            assertThat(batched.gpuLayers()).as("attention blocks on the device").isNotNull();
            assertThat(batched.transformer().supportsSequenceBatches()).isTrue();
            assertBatchedEqualsAlone(batched, alone, exact);
            assertThat(batched.gpuLayers().sequenceRowsRun()).as("rows the attention blocks ran in sequence batches").isPositive();
            assertThat(batched.gpuLayers().failed()).isFalse();
        }
    }

    @Test
    void aBadStepFailsAloneNotTheStreamsItRodeWith() throws Exception {
        Path p = TestData.file("models/quantized/stories260K-q4_0.gguf");
        try (Model m = Model.open(p, ModelOptions.defaults().withThreads(1).withContextLength(16));
             Session s = m.newSession()) {
            s.evaluate(1, 2);
            assertThatThrownBy(() -> s.evaluate(m.config().vocabSize())).isInstanceOf(ModelException.class).hasMessageContaining("outside the vocabulary");
            assertThat(s.position()).isEqualTo(2);
            assertThat(s.evaluate(3)).hasSize(m.config().vocabSize());
        }
    }
}
