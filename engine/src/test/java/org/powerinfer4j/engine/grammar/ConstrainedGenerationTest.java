package org.powerinfer4j.engine.grammar;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;
import org.powerinfer4j.engine.TestData;
import org.powerinfer4j.engine.api.GenerationParams;
import org.powerinfer4j.engine.api.GenerationResult;
import org.powerinfer4j.engine.api.Model;
import org.powerinfer4j.engine.api.ModelOptions;
import org.powerinfer4j.engine.api.Session;
import org.powerinfer4j.engine.api.Speculation;
import org.powerinfer4j.engine.sampling.SamplingParams;

/**
 * Generation under a grammar on real models: stories260K (trained, 512 tokens) and llama-2-tiny-random (random
 * weights, the 32k Llama-2 vocabulary, so the model's preferences fight the grammar at every step). Whatever the model
 * wants, the text must parse and conform — greedy and sampled, with a generous budget and with one just above the
 * schema's shortest output.
 */
class ConstrainedGenerationTest {
    static final String PERSON = "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},\"age\":{\"type\":\"integer\"},"
            + "\"pets\":{\"type\":\"array\",\"items\":{\"enum\":[\"cat\",\"dog\"]},\"maxItems\":3},\"alive\":{\"type\":\"boolean\"},"
            + "\"home\":{\"$ref\":\"#/$defs/place\"}},\"required\":[\"name\",\"age\",\"home\"],\"additionalProperties\":false,"
            + "\"$defs\":{\"place\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"},\"zip\":{\"anyOf\":[{\"type\":\"integer\"},{\"type\":\"null\"}]}},"
            + "\"required\":[\"city\",\"zip\"],\"additionalProperties\":false}}}";

    static Model stories, random;

    @BeforeAll
    static void open() throws Exception {
        stories = Model.open(TestData.file("models/stories260K.gguf"), ModelOptions.defaults().withThreads(1));
        random = Model.open(TestData.file("models/llama-2-tiny-random.gguf"), ModelOptions.defaults().withThreads(1).withContextLength(512));
    }

    @AfterAll
    static void close() {
        if (stories != null) stories.close();
        if (random != null) random.close();
    }

    static GenerationResult generate(Model m, String prompt, String schema, SamplingParams sampling, int maxTokens) {
        try (Session s = m.newSession()) {
            return s.generate(prompt, GenerationParams.defaults().withSampling(sampling).withMaxTokens(maxTokens).withGrammar(Grammar.jsonSchema(schema)), null);
        }
    }

    static void assertConforms(String schema, GenerationResult r) {
        JsonNode s = JsonSamples.parse(schema);
        JsonNode v = JsonSamples.parse(r.text());
        assertThat(JsonSamples.conforms(s, s, v)).as(r.text()).isTrue();
    }

    @ParameterizedTest
    @ValueSource(strings = {"stories", "random"})
    void greedyOutputParsesAndConforms(String which) {
        Model m = which.equals("stories") ? stories : random;
        GenerationResult r = generate(m, "Once upon a time", PERSON, SamplingParams.GREEDY, 200);
        assertConforms(PERSON, r);
        // the models write long strings: either they end the document or the budget closes it
        assertThat(r.stopReason()).isIn("eos", "length");
    }

    @ParameterizedTest
    @ValueSource(longs = {1, 2, 3, 4, 5})
    void sampledOutputParsesAndConformsForAnySeed(long seed) {
        for (Model m : List.of(stories, random)) {
            SamplingParams hot = SamplingParams.DEFAULT.withTemperature(1.5f).withSeed(seed);
            GenerationResult r = generate(m, "Lily", PERSON, hot, 200);
            assertConforms(PERSON, r);
            // same seed, same text
            assertThat(generate(m, "Lily", PERSON, hot, 200).text()).isEqualTo(r.text());
        }
    }

    @Test
    void aTightBudgetStillClosesTheDocument() {
        int shortest = Grammar.jsonSchema(PERSON).minimalLength();
        for (int budget : new int[] {shortest, shortest + 3, shortest + 20}) {
            for (Model m : List.of(stories, random)) {
                GenerationResult r = generate(m, "Once", PERSON, SamplingParams.DEFAULT.withTemperature(1f).withSeed(budget), budget);
                assertConforms(PERSON, r);
                assertThat(r.generatedTokens().length).isLessThanOrEqualTo(budget);
            }
        }
    }

    @Test
    void anyJsonObject() {
        for (Model m : List.of(stories, random)) {
            try (Session s = m.newSession()) {
                GenerationResult r = s.generate("The", GenerationParams.defaults().withMaxTokens(60).withSampling(SamplingParams.GREEDY)
                        .withGrammar(Grammar.jsonObject()), null);
                assertThat(JsonSamples.parse(r.text()).isObject()).as(r.text()).isTrue();
            }
        }
    }

    @Test
    void enumsAndConstantsAreForcedExactly() {
        String schema = "{\"enum\":[\"alpha\",\"beta\",\"gamma\"]}";
        GenerationResult r = generate(random, "x", schema, SamplingParams.GREEDY, 30);
        assertThat(r.text().strip()).isIn("\"alpha\"", "\"beta\"", "\"gamma\"");
    }

    @Test
    void speculationIsRefusedUnderAGrammar() {
        try (Session s = stories.newSession()) {
            assertThatThrownBy(() -> s.generate("x", GenerationParams.defaults().withGrammar(Grammar.jsonObject())
                    .withSpeculation(Speculation.promptLookup(4)), null)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("speculative");
        }
    }

    @Test
    void maskingA32kVocabularyIsAffordable() {
        // a full-vocabulary mask inside a string (where nearly every token is allowed): the trie walk's worst case
        TokenConstraint c = new TokenConstraint(Grammar.jsonSchema(PERSON), random.tokenizer());
        for (int id : random.tokenizer().encode("{\"name\":\"Li", false, false)) c.accept(id);
        boolean[] mask = new boolean[random.tokenizer().vocabSize()];
        int allowed = c.allowedTokens(Integer.MAX_VALUE, mask);
        assertThat(allowed).isGreaterThan(20_000);
        long t0 = System.nanoTime();
        for (int i = 0; i < 20; i++) c.allowedTokens(Integer.MAX_VALUE, mask);
        long perMask = (System.nanoTime() - t0) / 20;
        assertThat(perMask).as("ns per full mask").isLessThan(50_000_000L);
    }
}
