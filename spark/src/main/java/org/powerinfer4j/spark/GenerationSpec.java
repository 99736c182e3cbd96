package org.powerinfer4j.spark;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.powerinfer4j.engine.api.GenerationParams;
import org.powerinfer4j.engine.sampling.SamplingParams;

/**
 * How each row is generated: the sampler flags of {@code generate} (named and defaulted as there and in llama.cpp),
 * the token limit, stop sequences and whether the prompt goes through the model's chat template. The transformer's
 * params make one; the SQL function's {@code params} argument overrides it per row ({@link #with(Map)}).
 *
 * @param maxTokens tokens to generate at most; -1 = until end of generation or a full context
 * @param seed      the sampler seed of a row that has none of its own: fixed, so a retried task gives the same rows
 */
public record GenerationSpec(int maxTokens, float temperature, int topK, float topP, float minP, float repeatPenalty, int repeatLastN,
                             long seed, List<String> stop, boolean chatTemplate, String systemPrompt, boolean ignoreEos) implements Serializable {

    /** The names {@link #with(Map)} takes, as in the OpenAI API where it has one. */
    public static final List<String> PARAMETER_NAMES = List.of("max_tokens", "temperature", "top_k", "top_p", "min_p", "repeat_penalty",
            "repeat_last_n", "seed", "stop", "chat_template", "system_prompt", "ignore_eos");

    private static final ObjectMapper JSON = new ObjectMapper();

    public GenerationSpec {
        if (maxTokens < -1) throw new IllegalArgumentException("max_tokens must be >= 0, or -1 for no limit; is " + maxTokens);
        stop = stop == null ? List.of() : List.copyOf(stop);
        new SamplingParams(temperature, topK, topP, minP, repeatPenalty, repeatLastN, seed);   // the sampler's own checks (top-p in [0, 1], ...)
    }

    /** {@code generate}'s defaults, with at most 128 tokens and seed 0. */
    public static GenerationSpec defaults() {
        SamplingParams d = SamplingParams.DEFAULT;
        return new GenerationSpec(128, d.temperature(), d.topK(), d.topP(), d.minP(), d.repeatPenalty(), d.repeatLastN(), 0L, List.of(), false, null, false);
    }

    public SamplingParams sampling(long rowSeed) {
        return new SamplingParams(temperature, topK, topP, minP, repeatPenalty, repeatLastN, rowSeed);
    }

    /** The engine's parameters for a row with sampler seed {@code rowSeed}, as {@code generate -n maxTokens -s rowSeed} sets them. */
    public GenerationParams params(long rowSeed) {
        return GenerationParams.defaults().withMaxTokens(maxTokens).withSampling(sampling(rowSeed)).withStopAtEndOfGeneration(!ignoreEos);
    }

    /**
     * This spec with per-row overrides: keys from {@link #PARAMETER_NAMES}, values as text (numbers, {@code true/false};
     * {@code stop} a string or a JSON array of strings). An unknown key or a bad value is an {@link IllegalArgumentException}
     * naming it.
     */
    public GenerationSpec with(Map<String, String> params) {
        if (params == null || params.isEmpty()) return this;
        int maxTokens = this.maxTokens, topK = this.topK, repeatLastN = this.repeatLastN;
        float temperature = this.temperature, topP = this.topP, minP = this.minP, repeatPenalty = this.repeatPenalty;
        long seed = this.seed;
        List<String> stop = this.stop;
        boolean chatTemplate = this.chatTemplate, ignoreEos = this.ignoreEos;
        String systemPrompt = this.systemPrompt;
        for (Map.Entry<String, String> e : params.entrySet()) {
            String key = e.getKey() == null ? "" : e.getKey().trim().toLowerCase(Locale.ROOT);
            String v = e.getValue();
            if (v == null) continue;   // SQL NULL: keep the default
            switch (key) {
                case "max_tokens" -> maxTokens = parseInt(key, v);
                case "temperature" -> temperature = parseFloat(key, v);
                case "top_k" -> topK = parseInt(key, v);
                case "top_p" -> topP = parseFloat(key, v);
                case "min_p" -> minP = parseFloat(key, v);
                case "repeat_penalty" -> repeatPenalty = parseFloat(key, v);
                case "repeat_last_n" -> repeatLastN = parseInt(key, v);
                case "seed" -> seed = parseLong(key, v);
                case "stop" -> stop = parseStop(v);
                case "chat_template" -> chatTemplate = parseBoolean(key, v);
                case "system_prompt" -> systemPrompt = v;
                case "ignore_eos" -> ignoreEos = parseBoolean(key, v);
                default -> throw new IllegalArgumentException("unknown parameter '" + e.getKey() + "' (known: " + String.join(", ", PARAMETER_NAMES) + ")");
            }
        }
        return new GenerationSpec(maxTokens, temperature, topK, topP, minP, repeatPenalty, repeatLastN, seed, stop, chatTemplate, systemPrompt, ignoreEos);
    }

    /** Parameters given as one JSON object, e.g. {@code {"max_tokens": 32, "temperature": 0, "stop": ["\n"]}}. */
    public static Map<String, String> parseJson(String json) {
        JsonNode node;
        try {
            node = JSON.readTree(json);
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException("params are not valid JSON: " + e.getOriginalMessage());
        }
        if (node == null || !node.isObject()) throw new IllegalArgumentException("params must be a JSON object, e.g. {\"max_tokens\": 32}");
        Map<String, String> out = new LinkedHashMap<>();
        node.properties().forEach(e -> out.put(e.getKey(), e.getValue().isNull() ? null
                : e.getValue().isValueNode() ? e.getValue().asText() : e.getValue().toString()));
        return out;
    }

    private static List<String> parseStop(String v) {
        if (!v.trim().startsWith("[")) return List.of(v);
        try {
            JsonNode node = JSON.readTree(v);
            List<String> out = new ArrayList<>();
            for (JsonNode n : node) {
                if (!n.isTextual()) throw new IllegalArgumentException("stop must be a string or an array of strings");
                out.add(n.asText());
            }
            return out;
        } catch (JsonProcessingException e) {
            return List.of(v);   // not JSON after all: the literal text is the stop sequence
        }
    }

    private static int parseInt(String key, String v) {
        try {
            return Integer.parseInt(v.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(key + " must be an integer, not '" + v + "'");
        }
    }

    private static long parseLong(String key, String v) {
        try {
            return Long.parseLong(v.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(key + " must be an integer, not '" + v + "'");
        }
    }

    private static float parseFloat(String key, String v) {
        try {
            float f = Float.parseFloat(v.trim());
            if (!Float.isFinite(f)) throw new NumberFormatException();
            return f;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(key + " must be a number, not '" + v + "'");
        }
    }

    private static boolean parseBoolean(String key, String v) {
        return switch (v.trim().toLowerCase(Locale.ROOT)) {
            case "true", "1", "yes" -> true;
            case "false", "0", "no" -> false;
            default -> throw new IllegalArgumentException(key + " must be true or false, not '" + v + "'");
        };
    }
}
