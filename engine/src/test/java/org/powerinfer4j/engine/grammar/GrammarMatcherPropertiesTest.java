package org.powerinfer4j.engine.grammar;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.lifecycle.BeforeContainer;
import org.powerinfer4j.engine.TestData;
import org.powerinfer4j.engine.gguf.GGUFFile;
import org.powerinfer4j.engine.tokenizer.Tokenizer;
import org.powerinfer4j.engine.tokenizer.Tokenizers;

/**
 * The matcher against random documents: values that conform to a schema (compact or pretty-printed) are accepted
 * byte by byte, in random chunks, and token by token through a real 32k vocabulary; a one-character mutation is
 * rejected exactly when the result no longer conforms, and never before the mutated character.
 */
class GrammarMatcherPropertiesTest {
    static final List<String> SCHEMAS = List.of(
            "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},\"age\":{\"type\":\"integer\"},"
                    + "\"score\":{\"type\":\"number\"},\"ok\":{\"type\":\"boolean\"},\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"maxItems\":3}},"
                    + "\"required\":[\"name\",\"age\"],\"additionalProperties\":false}",
            "{\"type\":\"array\",\"items\":{\"enum\":[\"red\",\"green\",\"blue\",1,null]},\"minItems\":1,\"maxItems\":4}",
            "{\"anyOf\":[{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"}},\"required\":[\"a\"],\"additionalProperties\":false},"
                    + "{\"type\":\"object\",\"properties\":{\"ab\":{\"const\":\"x\"}},\"required\":[\"ab\"],\"additionalProperties\":false},{\"type\":\"null\"}]}",
            "{\"$defs\":{\"node\":{\"type\":\"object\",\"properties\":{\"value\":{\"type\":\"integer\"},\"children\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/$defs/node\"}}},"
                    + "\"required\":[\"value\"],\"additionalProperties\":false}},\"$ref\":\"#/$defs/node\"}",
            "{\"type\":\"object\",\"additionalProperties\":{\"type\":[\"integer\",\"string\"]}}",
            "{\"type\":\"object\",\"properties\":{\"code\":{\"type\":\"string\",\"minLength\":2,\"maxLength\":4},\"note\":{\"type\":\"string\",\"nullable\":true}},"
                    + "\"required\":[\"code\"],\"additionalProperties\":false}");

    static Tokenizer spm;

    @BeforeContainer
    static void vocab() throws Exception {
        try (GGUFFile f = GGUFFile.open(TestData.file("vocab/ggml-vocab-llama-spm.gguf"))) {
            spm = Tokenizers.fromGGUF(f);
        }
    }

    record Doc(String schema, String text) {
        JsonNode schemaNode() {
            return JsonSamples.parse(schema);
        }
    }

    @Provide
    Arbitrary<Doc> documents() {
        return Arbitraries.integers().between(0, SCHEMAS.size() - 1).flatMap(i -> Arbitraries.longs().flatMap(seed -> Arbitraries.of(false, true).map(pretty -> {
            JsonNode schema = JsonSamples.parse(SCHEMAS.get(i));
            JsonNode value = JsonSamples.sample(schema, schema, new Random(seed), 0);
            try {
                String text = pretty ? JsonSamples.JSON.writerWithDefaultPrettyPrinter().writeValueAsString(value) : JsonSamples.JSON.writeValueAsString(value);
                return new Doc(SCHEMAS.get(i), text);
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        })));
    }

    @Property(tries = 300)
    void conformingDocumentsAreAcceptedByteByByte(@ForAll("documents") Doc doc) {
        assertThat(JsonSamples.conforms(doc.schemaNode(), doc.schemaNode(), JsonSamples.parse(doc.text()))).as(doc.text()).isTrue();
        GrammarMatcher m = new GrammarMatcher(Grammar.jsonSchema(doc.schema()));
        byte[] b = doc.text().getBytes(StandardCharsets.UTF_8);
        for (int i = 0; i < b.length; i++) {
            GrammarMatcher.State s = m.state();
            assertThat(m.accept(new byte[]{b[i]})).as("byte %d of %s", i, doc.text()).isTrue();
            assertThat(m.state().minRemaining()).as("a valid prefix can always be completed").isLessThan(Grammar.UNREACHABLE);
            assertThat(s.canContinue()).isTrue();
        }
        assertThat(m.state().accepting()).as(doc.text()).isTrue();
    }

    @Property(tries = 200)
    void chunkedAndTokenizedFeedsAgreeWithBytewise(@ForAll("documents") Doc doc, @ForAll long seed) {
        Grammar g = Grammar.jsonSchema(doc.schema());
        byte[] b = doc.text().getBytes(StandardCharsets.UTF_8);
        GrammarMatcher m = new GrammarMatcher(g);
        Random r = new Random(seed);
        for (int i = 0; i < b.length; ) {
            int n = 1 + r.nextInt(6);
            assertThat(m.accept(Arrays.copyOfRange(b, i, Math.min(b.length, i + n)))).isTrue();
            i += n;
        }
        assertThat(m.state().accepting()).isTrue();

        // the same text as a real vocabulary's tokens (the SentencePiece dummy prefix is leading whitespace)
        TokenConstraint c = new TokenConstraint(g, spm);
        for (int id : spm.encode(doc.text(), false, false)) {
            assertThat(c.allows(id, Integer.MAX_VALUE)).as("token %d (%s) of %s", id, spm.piece(id), doc.text()).isTrue();
            c.accept(id);
        }
        assertThat(c.complete()).isTrue();
        assertThat(c.allows(spm.eosId(), 1)).isTrue();
    }

    /**
     * The grammar's whitespace rule, checked outside strings: each run is one space, or one newline and at most 20
     * spaces or tabs; none after the value.
     */
    static boolean whitespaceFits(String text) {
        boolean inString = false;
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (inString) {
                if (c == '\\') i++;
                else if (c == '"') inString = false;
                continue;
            }
            if (c == '"') inString = true;
            if (c != ' ' && c != '\n' && c != '\t' && c != '\r') continue;
            int end = i;
            while (end < text.length() && " \n\t\r".indexOf(text.charAt(end)) >= 0) end++;
            String run = text.substring(i, end);
            if (end == text.length()) return false;
            boolean ok = run.equals(" ") || run.charAt(0) == '\n' && run.length() <= 21 && run.substring(1).chars().allMatch(x -> x == ' ' || x == '\t');
            if (!ok) return false;
            i = end - 1;
        }
        return true;
    }

    static final String MUTATIONS = "{}[]\":,\\ 0123456789aefnrtlsu.-+E\t\n/";

    @Property(tries = 400)
    void mutationsAreRejectedExactlyWhenTheyBreakConformance(@ForAll("documents") Doc doc, @ForAll long seed) {
        Random r = new Random(seed);
        String t = doc.text();
        int at = r.nextInt(t.length());
        if (Character.isSurrogate(t.charAt(at))) return;
        String replacement = String.valueOf(MUTATIONS.charAt(r.nextInt(MUTATIONS.length())));
        String mutated = t.substring(0, at) + replacement + t.substring(at + 1);
        if (mutated.equals(t)) return;
        GrammarMatcher m = new GrammarMatcher(Grammar.jsonSchema(doc.schema()));
        byte[] b = mutated.getBytes(StandardCharsets.UTF_8);
        int mutatedByte = t.substring(0, at).getBytes(StandardCharsets.UTF_8).length;
        int rejectedAt = -1;
        for (int i = 0; i < b.length && rejectedAt < 0; i++) if (!m.accept(new byte[]{b[i]})) rejectedAt = i;
        boolean matched = rejectedAt < 0 && m.state().accepting();
        JsonNode parsed;
        try {
            parsed = JsonSamples.JSON.readTree(mutated);
        } catch (Exception e) {
            parsed = null;
        }
        boolean conforms = parsed != null && !parsed.isMissingNode() && JsonSamples.conforms(doc.schemaNode(), doc.schemaNode(), parsed)
                && whitespaceFits(mutated);
        assertThat(matched).as("%s (mutated at %d)", mutated, at).isEqualTo(conforms);
        if (rejectedAt >= 0) assertThat(rejectedAt).as("rejected before the mutation: %s", mutated).isGreaterThanOrEqualTo(mutatedByte);
    }
}
