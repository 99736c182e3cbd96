package org.powerinfer4j.engine.sparse;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.powerinfer4j.engine.TestData;
import org.powerinfer4j.engine.api.GenerationParams;
import org.powerinfer4j.engine.api.Model;
import org.powerinfer4j.engine.api.ModelOptions;
import org.powerinfer4j.engine.api.Session;
import org.powerinfer4j.engine.model.FfnActivation;
import org.powerinfer4j.engine.sampling.SamplingParams;
import org.powerinfer4j.engine.tensor.GGMLType;

/**
 * The ReLU-sparse stories260K student against its float64 reference ({@code sparse/reference.json}): dense and
 * exact modes reproduce the dense-ReLU greedy tokens, predict mode the predictor-gated tokens at thresholds 0
 * and 1 (threshold 1 diverges from dense, so it proves the predictor is applied), on both the PowerInfer file
 * and the plain GGUF of the same weights.
 */
class SparseReferenceTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static JsonNode ref;

    @BeforeAll
    static void load() throws Exception {
        ref = JSON.readTree(Files.readString(TestData.file("sparse/reference.json")));
    }

    @ParameterizedTest(name = "{0} --sparse {1} threshold {2} → {3} (threads {4})")
    @CsvSource({
            "stories260K-relu.powerinfer.gguf, off, NaN, dense_relu, 2",
            "stories260K-relu.powerinfer.gguf, exact, NaN, dense_relu, 2",
            "stories260K-relu.powerinfer.gguf, predict, 0, sparse_predictor_thr0, 2",
            "stories260K-relu.powerinfer.gguf, predict, 1, sparse_predictor_thr1, 1",
            "stories260K-relu.powerinfer.gguf, predict, 1, sparse_predictor_thr1, 2",
            // threshold −∞: the predictor selects every neuron, so predict is the dense model (issue #15)
            "stories260K-relu.powerinfer.gguf, predict, -Infinity, dense_relu, 2",
            "stories260K-relu.gguf, off, NaN, dense_relu, 2",
            "stories260K-relu.gguf, exact, NaN, dense_relu, 1",
            "stories260K-relu.gguf, exact, NaN, dense_relu, 2",
    })
    void greedyTokensMatchReference(String file, String mode, float threshold, String expectedKey, int threads) throws Exception {
        Path path = TestData.file("sparse/" + file);
        ModelOptions o = ModelOptions.defaults().withKvCacheType(GGMLType.F32).withThreads(threads).withContextLength(256).withSparseMode(SparseMode.parse(mode))
                .withSparseThreshold(threshold).withActivation(FfnActivation.REGLU).withBatchSize(3);
        try (Model m = Model.open(path, o)) {
            for (JsonNode p : ref.get("prompts")) {
                int[] prompt = ints(p.get("prompt_ids"));
                int[] expected = ints(p.get(expectedKey).get("ids"));
                try (Session s = m.newSession()) {
                    int[] got = s.generate(prompt, GenerationParams.defaults().withMaxTokens(expected.length)
                            .withSampling(SamplingParams.GREEDY).withStopAtEndOfGeneration(false), null).generatedTokens();
                    assertThat(got).as("prompt %s", p.get("name").asText()).containsExactly(expected);
                }
            }
        }
    }

    @ParameterizedTest(name = "{0} --sparse {1}")
    @CsvSource({"stories260K-relu.powerinfer.gguf, off", "stories260K-relu.powerinfer.gguf, exact", "stories260K-relu.gguf, exact"})
    void denseTop5LogitsMatchReference(String file, String mode) throws Exception {
        ModelOptions o = ModelOptions.defaults().withKvCacheType(GGMLType.F32).withThreads(2).withContextLength(64).withSparseMode(SparseMode.parse(mode))
                .withActivation(FfnActivation.REGLU);
        try (Model m = Model.open(TestData.file("sparse/" + file), o)) {
            for (JsonNode p : ref.get("prompts")) {
                try (Session s = m.newSession()) {
                    for (JsonNode pos : p.get("dense_top5_first4_positions")) {
                        float[] logits = s.evaluate(pos.get("input_id").asInt());
                        for (JsonNode t : pos.get("top5"))
                            assertThat((double) logits[t.get(0).asInt()]).as("%s pos %s", p.get("name"), pos.get("pos"))
                                    .isCloseTo(t.get(2).asDouble(), within(1e-3));
                    }
                }
            }
        }
    }

    /** Predict with every neuron selected (threshold −∞) computes what off computes, logit for logit. */
    @org.junit.jupiter.api.Test
    void predictAtMinusInfinityEqualsOff() throws Exception {
        Path path = TestData.file("sparse/stories260K-relu.powerinfer.gguf");
        ModelOptions base = ModelOptions.defaults().withKvCacheType(GGMLType.F32).withThreads(2).withContextLength(64).withActivation(FfnActivation.REGLU);
        JsonNode p = ref.get("prompts").get(1);
        int[] seq = concat(ints(p.get("prompt_ids")), ints(p.get("dense_relu").get("ids")));
        try (Model off = Model.open(path, base.withSparseMode(SparseMode.OFF));
             Model all = Model.open(path, base.withSparseMode(SparseMode.PREDICT).withSparseThreshold(Float.NEGATIVE_INFINITY));
             Session a = off.newSession(); Session b = all.newSession()) {
            for (int i = 0; i < 40; i++) {
                float[] la = a.evaluate(seq[i]), lb = b.evaluate(seq[i]);
                for (int v = 0; v < la.length; v++) assertThat(lb[v]).as("position %d token %d", i, v).isCloseTo(la[v], within(1e-5f));
            }
        }
    }

    @org.junit.jupiter.api.Test
    void predictorCountsMatchReferenceOnFirstPositions() throws Exception {
        ModelOptions o = ModelOptions.defaults().withKvCacheType(GGMLType.F32).withThreads(2).withContextLength(64).withSparseMode(SparseMode.PREDICT)
                .withSparseThreshold(0f).withSparseStats(true);
        try (Model m = Model.open(TestData.file("sparse/stories260K-relu.powerinfer.gguf"), o)) {
            JsonNode p = ref.get("prompts").get(1);
            int[] seq = concat(ints(p.get("prompt_ids")), ints(p.get("dense_relu").get("ids")));
            JsonNode counts = p.get("neuron_counts_first8_positions").get("values");
            try (Session s = m.newSession()) {
                SparsityStats st = m.sparsityStats();
                for (int pos = 0; pos < counts.size(); pos++) {
                    st.reset();
                    s.evaluate(seq[pos]);
                    for (int l = 0; l < m.config().layers(); l++) {
                        JsonNode c = counts.get(pos).get(l);
                        assertThat(Math.round(st.predictedFraction(l) * m.config().ffDim())).as("pos %d layer %d predicted", pos, l).isEqualTo(c.get(0).asLong());
                        assertThat(Math.round(st.activeFraction(l) * m.config().ffDim())).as("pos %d layer %d active", pos, l).isEqualTo(c.get(1).asLong());
                        assertThat(Math.round(st.recall(l) * st.activeFraction(l) * m.config().ffDim())).as("pos %d layer %d both", pos, l).isEqualTo(c.get(2).asLong());
                    }
                }
            }
        }
    }

    static int[] concat(int[] a, int[] b) {
        int[] r = java.util.Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, r, a.length, b.length);
        return r;
    }

    static int[] ints(JsonNode arr) {
        int[] r = new int[arr.size()];
        for (int i = 0; i < r.length; i++) r[i] = arr.get(i).asInt();
        return r;
    }
}
