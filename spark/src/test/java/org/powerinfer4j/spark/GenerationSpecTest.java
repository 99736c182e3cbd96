package org.powerinfer4j.spark;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Assume;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.AlphaChars;
import net.jqwik.api.constraints.FloatRange;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.StringLength;
import org.junit.jupiter.api.Test;

/** Per-row parameters of the SQL function: every name and value form, and a clear error for anything else. */
class GenerationSpecTest {

    @Property(tries = 200)
    void everyParameterGivenAsTextOrJsonTakesEffect(@ForAll @IntRange(min = -1, max = 4096) int maxTokens,
                                                    @ForAll @FloatRange(min = 0, max = 2) float temperature,
                                                    @ForAll @IntRange(min = 0, max = 100) int topK,
                                                    @ForAll @FloatRange(min = 0, max = 1) float topP,
                                                    @ForAll long seed, @ForAll boolean chat, @ForAll("stops") List<String> stop) throws Exception {
        Map<String, String> text = new LinkedHashMap<>();
        text.put("max_tokens", Integer.toString(maxTokens));
        text.put("temperature", Float.toString(temperature));
        text.put("top_k", Integer.toString(topK));
        text.put("top_p", Float.toString(topP));
        text.put("seed", Long.toString(seed));
        text.put("chat_template", Boolean.toString(chat));
        text.put("stop", new com.fasterxml.jackson.databind.ObjectMapper().writeValueAsString(stop));
        GenerationSpec s = GenerationSpec.defaults().with(text);
        assertThat(s.maxTokens()).isEqualTo(maxTokens);
        assertThat(s.temperature()).isEqualTo(temperature);
        assertThat(s.topK()).isEqualTo(topK);
        assertThat(s.topP()).isEqualTo(topP);
        assertThat(s.seed()).isEqualTo(seed);
        assertThat(s.chatTemplate()).isEqualTo(chat);
        assertThat(s.stop()).isEqualTo(stop);
        assertThat(s.minP()).isEqualTo(GenerationSpec.defaults().minP());   // untouched keys keep the generator's value

        String json = "{\"max_tokens\": " + maxTokens + ", \"temperature\": " + temperature + ", \"top_k\": " + topK + ", \"top_p\": " + topP
                + ", \"seed\": " + seed + ", \"chat_template\": " + chat + ", \"stop\": " + text.get("stop") + "}";
        assertThat(GenerationSpec.defaults().with(GenerationSpec.parseJson(json))).isEqualTo(s);
    }

    @Provide
    Arbitrary<List<String>> stops() {
        return Arbitraries.strings().ofMinLength(1).ofMaxLength(5).list().ofMaxSize(3);
    }

    @Property(tries = 100)
    void anUnknownNameIsAnErrorNamingIt(@ForAll @AlphaChars @StringLength(min = 1, max = 12) String name) {
        Assume.that(!GenerationSpec.PARAMETER_NAMES.contains(name.toLowerCase(java.util.Locale.ROOT)));
        assertThatThrownBy(() -> GenerationSpec.defaults().with(Map.of(name, "1")))
                .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith("unknown parameter '" + name + "' (known: max_tokens");
    }

    @Test
    void badValuesAreOneLineErrors() {
        assertThatThrownBy(() -> GenerationSpec.defaults().with(Map.of("max_tokens", "ten"))).hasMessage("max_tokens must be an integer, not 'ten'");
        assertThatThrownBy(() -> GenerationSpec.defaults().with(Map.of("max_tokens", "-2"))).hasMessage("max_tokens must be >= 0, or -1 for no limit; is -2");
        assertThatThrownBy(() -> GenerationSpec.defaults().with(Map.of("temperature", "NaN"))).hasMessage("temperature must be a number, not 'NaN'");
        assertThatThrownBy(() -> GenerationSpec.defaults().with(Map.of("top_p", "1.5"))).hasMessage("top-p must be in [0, 1], is 1.5");
        assertThatThrownBy(() -> GenerationSpec.defaults().with(Map.of("chat_template", "maybe"))).hasMessage("chat_template must be true or false, not 'maybe'");
        assertThatThrownBy(() -> GenerationSpec.defaults().with(Map.of("stop", "[1, 2]"))).hasMessage("stop must be a string or an array of strings");
        assertThatThrownBy(() -> GenerationSpec.parseJson("[1]")).hasMessageStartingWith("params must be a JSON object");
        assertThatThrownBy(() -> GenerationSpec.parseJson("{\"max_tokens\": ")).hasMessageStartingWith("params are not valid JSON");
    }

    @Test
    void nullValuesKeepTheDefaultAndAPlainStopIsOneSequence() {
        Map<String, String> m = new LinkedHashMap<>();
        m.put("max_tokens", null);
        m.put("stop", "\n\n");
        GenerationSpec s = GenerationSpec.defaults().with(m);
        assertThat(s.maxTokens()).isEqualTo(128);
        assertThat(s.stop()).containsExactly("\n\n");
        assertThat(PowerInferFunctions.parameters(null)).isEmpty();
        assertThat(PowerInferFunctions.parameters(" ")).isEmpty();
        assertThatThrownBy(() -> PowerInferFunctions.parameters(42)).hasMessageStartingWith("params must be NULL, a MAP<STRING, STRING> or a JSON object string");
    }

    @Test
    void theGeneratorsDefaultsAreThoseOfTheGenerateCommand() {
        GenerationSpec d = new PowerInferGenerator().generationSpec();
        assertThat(d.sampling(7)).isEqualTo(org.powerinfer4j.engine.sampling.SamplingParams.DEFAULT.withSeed(7));
        assertThat(d.params(7).stopAtEndOfGeneration()).isTrue();
        assertThat(d.maxTokens()).isEqualTo(128);
    }
}
