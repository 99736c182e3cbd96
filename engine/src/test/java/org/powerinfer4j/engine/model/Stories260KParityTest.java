package org.powerinfer4j.engine.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import org.junit.jupiter.api.Test;
import org.powerinfer4j.engine.TestData;
import org.powerinfer4j.engine.api.GenerationParams;
import org.powerinfer4j.engine.api.GenerationResult;
import org.powerinfer4j.engine.api.Model;
import org.powerinfer4j.engine.api.ModelOptions;
import org.powerinfer4j.engine.api.Session;
import org.powerinfer4j.engine.sampling.SamplingParams;
import org.powerinfer4j.engine.tensor.GGMLType;

/** stories260K (F32, trained): greedy tokens and top-5 logits against the float64 reference (= llama.cpp's ids). */
class Stories260KParityTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    @Test
    void greedyFromBosMatchesReference() throws Exception {
        JsonNode ref = JSON.readTree(Files.readString(TestData.file("reference/stories260K.json"))).get("greedy_from_bos");
        int[] expected = ints(ref.get("generated_ids"));
        for (int threads : new int[]{1, 2}) {
            try (Model m = Model.open(TestData.file("models/stories260K.gguf"), ModelOptions.defaults().withKvCacheType(GGMLType.F32).withThreads(threads));
                 Session s = m.newSession()) {
                GenerationResult r = s.generate(new int[]{1}, GenerationParams.defaults().withMaxTokens(expected.length)
                        .withSampling(SamplingParams.GREEDY).withStopAtEndOfGeneration(false), null);
                assertThat(r.generatedTokens()).as("threads=%d", threads).containsExactly(expected);
            }
        }
    }

    @Test
    void promptLogitsMatchReferenceTop5() throws Exception {
        JsonNode ref = JSON.readTree(Files.readString(TestData.file("reference/stories260K.json"))).get("prompt_logits");
        try (Model m = Model.open(TestData.file("models/stories260K.gguf"), ModelOptions.defaults().withKvCacheType(GGMLType.F32).withThreads(2));
             Session s = m.newSession()) {
            for (JsonNode p : ref.get("positions")) {
                float[] logits = s.evaluate(p.get("input_token").asInt());
                for (JsonNode t : p.get("top5"))
                    assertThat((double) logits[t.get("id").asInt()]).as("pos %s id %s", p.get("position"), t.get("id"))
                            .isCloseTo(t.get("logit").asDouble(), within(1e-3));
            }
        }
    }

    @Test
    void batchedPrefillEqualsTokenByToken() throws Exception {
        int[] prompt = {1, 403, 407, 261, 378, 432, 383, 286, 261, 376};
        try (Model m = Model.open(TestData.file("models/stories260K.gguf"), ModelOptions.defaults().withKvCacheType(GGMLType.F32).withThreads(2).withBatchSize(4));
             Session a = m.newSession(); Session b = m.newSession()) {
            float[] batched = a.evaluate(prompt);
            float[] single = null;
            for (int t : prompt) single = b.evaluate(t);
            for (int i = 0; i < batched.length; i++) assertThat(batched[i]).isCloseTo(single[i], within(1e-4f));
        }
    }

    @Test
    void seededSamplingIsIdenticalForAnyThreadCount() throws Exception {
        int[][] runs = new int[3][];
        float[][] logits = new float[3][];
        for (int threads = 1; threads <= 3; threads++) {
            try (Model m = Model.open(TestData.file("models/stories260K.gguf"), ModelOptions.defaults().withThreads(threads).withBatchSize(7));
                 Session s = m.newSession()) {
                logits[threads - 1] = s.evaluate(1, 403, 407, 261, 378, 432, 383, 286, 261, 376);
                runs[threads - 1] = s.generate(new int[0], GenerationParams.defaults().withMaxTokens(80)
                        .withSampling(SamplingParams.DEFAULT.withSeed(1234)).withStopAtEndOfGeneration(false), null).generatedTokens();
            }
        }
        assertThat(logits[1]).containsExactly(logits[0]);   // bitwise: every dot product keeps its order
        assertThat(logits[2]).containsExactly(logits[0]);
        assertThat(runs[1]).containsExactly(runs[0]);
        assertThat(runs[2]).containsExactly(runs[0]);
    }

    static int[] ints(JsonNode arr) {
        int[] r = new int[arr.size()];
        for (int i = 0; i < r.length; i++) r[i] = arr.get(i).asInt();
        return r;
    }
}
