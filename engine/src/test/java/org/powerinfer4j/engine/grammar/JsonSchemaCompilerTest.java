package org.powerinfer4j.engine.grammar;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/** What each supported keyword accepts and rejects, and the errors for what is not supported. */
class JsonSchemaCompilerTest {
    static boolean matches(String schema, String text) {
        GrammarMatcher m = new GrammarMatcher(Grammar.jsonSchema(schema));
        return m.accept(text) && m.state().accepting();
    }

    static boolean prefix(String schema, String text) {
        return new GrammarMatcher(Grammar.jsonSchema(schema)).accept(text);
    }

    @Test
    void scalars() {
        assertThat(matches("{\"type\":\"integer\"}", "-120")).isTrue();
        assertThat(matches("{\"type\":\"integer\"}", "012")).isFalse();
        assertThat(matches("{\"type\":\"integer\"}", "1.5")).isFalse();
        assertThat(matches("{\"type\":\"number\"}", "-0.25e+10")).isTrue();
        assertThat(matches("{\"type\":\"number\"}", "1.")).isFalse();
        assertThat(matches("{\"type\":\"boolean\"}", "false")).isTrue();
        assertThat(matches("{\"type\":\"null\"}", "null")).isTrue();
        assertThat(matches("{\"type\":[\"string\",\"null\"]}", "null")).isTrue();
        assertThat(matches("{\"type\":\"string\"}", "\"a\\\"b\\u00e9 \\n é 😀\"")).isTrue();
        assertThat(prefix("{\"type\":\"string\"}", "\"a\nb")).as("raw control character").isFalse();
        assertThat(prefix("{\"type\":\"string\"}", "\"\\x")).as("bad escape").isFalse();
        assertThat(new GrammarMatcher(Grammar.jsonSchema("{\"type\":\"string\"}")).accept(new byte[]{'"', (byte) 0xC0})).as("overlong UTF-8").isFalse();
        assertThat(matches("{\"type\":\"string\",\"minLength\":2,\"maxLength\":3}", "\"ab\"")).isTrue();
        assertThat(matches("{\"type\":\"string\",\"minLength\":2,\"maxLength\":3}", "\"a\"")).isFalse();
        assertThat(matches("{\"type\":\"string\",\"minLength\":2,\"maxLength\":3}", "\"abcd\"")).isFalse();
    }

    @Test
    void enumConstAndCombinators() {
        String colour = "{\"enum\":[\"red\",\"green\",7,null,{\"a\":[1]}]}";
        assertThat(matches(colour, "\"green\"")).isTrue();
        assertThat(matches(colour, "{\"a\":[1]}")).isTrue();
        assertThat(matches(colour, "\"blue\"")).isFalse();
        assertThat(matches("{\"type\":\"string\",\"enum\":[\"x\",1]}", "1")).as("enum values of another type are dropped").isFalse();
        assertThat(matches("{\"const\":\"fixed\"}", "\"fixed\"")).isTrue();
        String any = "{\"oneOf\":[{\"type\":\"integer\"},{\"type\":\"array\",\"items\":{\"type\":\"boolean\"}}]}";
        assertThat(matches(any, "[true, false]")).isTrue();
        assertThat(matches(any, "12")).isTrue();
        assertThat(matches(any, "\"s\"")).isFalse();
        assertThat(matches("{\"allOf\":[{\"type\":\"integer\"}]}", "3")).isTrue();
    }

    @Test
    void objectsKeepDeclaredOrderAndRequireRequired() {
        String s = "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"},\"b\":{\"type\":\"string\"},\"c\":{\"type\":\"boolean\"}},"
                + "\"required\":[\"b\"],\"additionalProperties\":false}";
        assertThat(matches(s, "{\"b\":\"x\"}")).isTrue();
        assertThat(matches(s, "{\"a\":1,\"b\":\"x\",\"c\":true}")).isTrue();
        assertThat(matches(s, "{ \"a\" : 1 ,\n  \"b\": \"x\" }")).isTrue();
        assertThat(matches(s, "{\"a\":1}")).as("required b missing").isFalse();
        assertThat(matches(s, "{\"b\":\"x\",\"a\":1}")).as("declared order").isFalse();
        assertThat(matches(s, "{\"b\":\"x\",\"d\":1}")).as("undeclared").isFalse();
        assertThat(matches(s, "{\"b\":\"x\",}")).isFalse();
        assertThat(matches("{\"type\":\"object\",\"additionalProperties\":false}", "{}")).isTrue();
        assertThat(matches("{\"type\":\"object\",\"additionalProperties\":false}", "{\"a\":1}")).isFalse();
        assertThat(matches("{\"type\":\"object\"}", "{\"any\":[1,{\"x\":null}],\"b\":\"s\"}")).isTrue();
        assertThat(matches("{\"additionalProperties\":{\"type\":\"integer\"}}", "{\"x\":1,\"y\":2}")).isTrue();
        assertThat(matches("{\"additionalProperties\":{\"type\":\"integer\"}}", "{\"x\":\"1\"}")).isFalse();
    }

    @Test
    void arraysHonourTheirBounds() {
        String s = "{\"type\":\"array\",\"items\":{\"type\":\"integer\"},\"minItems\":2,\"maxItems\":3}";
        assertThat(matches(s, "[1,2]")).isTrue();
        assertThat(matches(s, "[1, 2, 3]")).isTrue();
        assertThat(matches(s, "[1]")).isFalse();
        assertThat(matches(s, "[1,2,3,4]")).isFalse();
        assertThat(matches("{\"type\":\"array\"}", "[]")).isTrue();
        assertThat(matches("{\"type\":\"array\",\"items\":false}", "[1]")).isFalse();
    }

    @Test
    void referencesIncludingRecursiveOnes() {
        String list = "{\"definitions\":{\"cell\":{\"type\":\"object\",\"properties\":{\"v\":{\"type\":\"integer\"},\"next\":{\"anyOf\":[{\"$ref\":\"#/definitions/cell\"},{\"type\":\"null\"}]}},"
                + "\"required\":[\"v\",\"next\"],\"additionalProperties\":false}},\"$ref\":\"#/definitions/cell\"}";
        assertThat(matches(list, "{\"v\":1,\"next\":{\"v\":2,\"next\":null}}")).isTrue();
        assertThat(matches(list, "{\"v\":1,\"next\":{\"v\":2}}")).isFalse();
        assertThat(matches("{\"type\":\"array\",\"items\":{\"$ref\":\"#\"}}", "[[],[[]]]")).isTrue();
    }

    @Test
    void whitespaceIsBoundedAndNothingFollowsTheValue() {
        assertThat(matches("{\"type\":\"object\"}", " {}")).isTrue();
        assertThat(prefix("{\"type\":\"object\"}", "{}" + " ")).isFalse();
        assertThat(prefix("{\"type\":\"object\"}", "{\n" + " ".repeat(20))).isTrue();
        assertThat(prefix("{\"type\":\"object\"}", "{\n" + " ".repeat(21))).isFalse();
        assertThat(prefix("{\"type\":\"object\"}", "{  ")).as("one space").isFalse();
        assertThat(prefix("{\"type\":\"object\"}", "{\n\n")).as("one newline").isFalse();
        GrammarMatcher m = new GrammarMatcher(Grammar.jsonObject());
        m.accept("{\"a\":1}");
        assertThat(m.state().accepting()).isTrue();
        assertThat(m.state().canContinue()).isFalse();
    }

    @Test
    void minRemainingIsTheShortestCompletion() {
        GrammarMatcher m = new GrammarMatcher(Grammar.jsonSchema("{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"}},\"required\":[\"name\"]}"));
        assertThat(m.state().minRemaining()).isEqualTo("{\"name\":\"\"}".length());
        m.accept("{\"name\":\"abc");
        assertThat(m.state().minRemaining()).isEqualTo(2);
        assertThat(Grammar.jsonObject().minimalLength()).isEqualTo(2);
    }

    @Test
    void unsupportedOrBrokenSchemasFailWithOneLine() {
        assertError("{\"type\":\"string\",\"pattern\":\"^a\"}", "unsupported JSON schema keyword 'pattern' at #");
        assertError("{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"integer\",\"minimum\":3}}}", "unsupported JSON schema keyword 'minimum' at #/properties/n");
        assertError("{\"not\":{}}", "unsupported JSON schema keyword 'not'");
        assertError("{\"type\":\"strin\"}", "unknown type 'strin'");
        assertError("{\"$ref\":\"#/$defs/missing\"}", "points to nothing");
        assertError("{\"$ref\":\"https://example.com/s.json\"}", "only local references");
        assertError("{\"$ref\":\"#\"}", "can never be satisfied");
        assertError("{\"anyOf\":[{\"$ref\":\"#\"},{\"type\":\"integer\"}]}", "refers to itself");
        assertError("false", "no value can conform");
        assertError("{\"type\":\"object\",\"properties\":{},\"required\":[\"x\"]}", "required property 'x'");
        assertError("{\"type\":\"object\",\"properties\":{\"x\":{\"$ref\":\"#/properties/x\"}}}", "refers to itself");
        assertError("{\"type\":\"array\",\"minItems\":3,\"maxItems\":2}", "'maxItems' is below 'minItems'");
        assertError("{\"allOf\":[{},{}]}", "'allOf' with more than one schema");
        assertError("{\"type\":", "not valid JSON");
        assertError("{\"$defs\":{\"a\":{\"type\":\"object\",\"properties\":{\"x\":{\"$ref\":\"#/$defs/a\"}},\"required\":[\"x\"]}},\"$ref\":\"#/$defs/a\"}",
                "can never be satisfied");
    }

    static void assertError(String schema, String message) {
        assertThatThrownBy(() -> Grammar.jsonSchema(schema)).isInstanceOf(GrammarException.class)
                .hasMessageContaining(message).satisfies(e -> assertThat(e.getMessage()).doesNotContain("\n"));
    }
}
