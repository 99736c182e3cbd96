package org.powerinfer4j.cli.server;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.powerinfer4j.engine.api.GenerationParams;
import org.powerinfer4j.engine.grammar.Grammar;
import org.powerinfer4j.engine.grammar.GrammarException;
import org.powerinfer4j.engine.tools.ToolCalling;
import org.powerinfer4j.engine.sampling.SamplingParams;
import org.powerinfer4j.engine.tokenizer.ChatMessage;
import org.powerinfer4j.engine.tokenizer.ChatPrompt;
import org.powerinfer4j.engine.tokenizer.ChatTemplate;
import org.powerinfer4j.engine.tokenizer.ChatTemplateException;
import org.powerinfer4j.engine.tokenizer.Tokenizer;

/**
 * Validates an OpenAI request body and turns it into prompt tokens and generation settings. Unknown fields are
 * ignored (clients send many); known fields of the wrong type or out of range are a 400 naming the field.
 */
final class RequestParser {
    private static final JsonNode JSON_OBJECT = new com.fasterxml.jackson.databind.ObjectMapper().createObjectNode().put("type", "object");

    /** OpenAI's limit on stop sequences. */
    static final int MAX_STOP_SEQUENCES = 4;

    /**
     * @param chat          from {@code /v1/chat/completions}
     * @param model         the {@code model} the client named (echoed back), or the server's model id
     * @param includeUsage  {@code stream_options.include_usage}: a last streamed chunk carries the usage
     * @param topLogprobs   -1: no log-probs; else report them, with this many alternatives per token
     */
    /** {@code toolCalls}: tools were offered, so the answer is parsed back into {@code tool_calls} ({@link ToolCalling#parse}). */
    record Parsed(boolean chat, String model, int[] prompt, GenerationParams params, List<String> stop, boolean stream,
                  boolean includeUsage, int topLogprobs, boolean toolCalls) {}

    /** The most alternatives per token we report (OpenAI's limit for {@code top_logprobs}). */
    static final int MAX_TOP_LOGPROBS = 20;

    private final Tokenizer tokenizer;
    private final ChatTemplate template;
    private final int contextLength;
    private final String modelId;
    private final GenerationParams defaults;
    private final Long defaultSeed;
    private final AtomicLong seeds = new AtomicLong(System.nanoTime());

    /** @param defaultSeed the server's {@code --seed}; null = a fresh seed per request */
    RequestParser(Tokenizer tokenizer, ChatTemplate template, int contextLength, String modelId, GenerationParams defaults, Long defaultSeed) {
        this.tokenizer = tokenizer;
        this.template = template;
        this.contextLength = contextLength;
        this.modelId = modelId;
        this.defaults = defaults;
        this.defaultSeed = defaultSeed;
    }

    Parsed parse(JsonNode body, boolean chat) {
        if (body == null || !body.isObject()) throw ApiException.invalid("the request body must be a JSON object", null);
        String model = optString(body, "model");
        if (model == null) model = modelId;

        Integer n = optInt(body, "n");
        if (n != null && n != 1) throw ApiException.invalid("only n = 1 is supported, got " + n, "n");

        boolean stream = optBool(body, "stream", false);
        boolean includeUsage = false;
        JsonNode so = body.get("stream_options");
        if (so != null && !so.isNull()) {
            if (!so.isObject()) throw ApiException.invalid("'stream_options' must be an object", "stream_options");
            includeUsage = optBool(so, "include_usage", false, "stream_options.include_usage");
        }

        Integer maxTokens = optInt(body, "max_tokens");
        Integer maxCompletion = optInt(body, "max_completion_tokens");
        if (maxCompletion != null) maxTokens = maxCompletion;
        String maxParam = maxCompletion != null ? "max_completion_tokens" : "max_tokens";
        if (maxTokens != null && maxTokens < 1) throw ApiException.invalid("'" + maxParam + "' must be at least 1, got " + maxTokens, maxParam);

        SamplingParams s = defaults.sampling();
        Double temperature = optNumber(body, "temperature");
        if (temperature != null) {
            if (temperature < 0 || temperature > 2) throw ApiException.invalid("'temperature' must be between 0 and 2, got " + temperature, "temperature");
            s = s.withTemperature(temperature.floatValue());
        }
        Double topP = optNumber(body, "top_p");
        if (topP != null) {
            if (topP < 0 || topP > 1) throw ApiException.invalid("'top_p' must be between 0 and 1, got " + topP, "top_p");
            s = s.withTopP(topP.floatValue());
        }
        // llama.cpp server extensions, for clients that tune them
        Integer topK = optInt(body, "top_k");
        if (topK != null) {
            if (topK < 0) throw ApiException.invalid("'top_k' must be >= 0, got " + topK, "top_k");
            s = s.withTopK(topK);
        }
        Double minP = optNumber(body, "min_p");
        if (minP != null) {
            if (minP < 0 || minP > 1) throw ApiException.invalid("'min_p' must be between 0 and 1, got " + minP, "min_p");
            s = s.withMinP(minP.floatValue());
        }
        Double repeatPenalty = optNumber(body, "repeat_penalty");
        if (repeatPenalty != null) {
            if (repeatPenalty <= 0) throw ApiException.invalid("'repeat_penalty' must be > 0, got " + repeatPenalty, "repeat_penalty");
            s = s.withRepeatPenalty(repeatPenalty.floatValue());
        }
        Long seed = optLong(body, "seed");
        s = s.withSeed(seed != null ? seed : defaultSeed != null ? defaultSeed : seeds.getAndAdd(0x9E3779B97F4A7C15L));
        boolean ignoreEos = optBool(body, "ignore_eos", false);

        List<String> stop = stopSequences(body.get("stop"));

        ToolRequest tools = ToolRequest.parse(body, chat);
        Grammar[] grammar = {null};
        int[] prompt = chat ? chatPrompt(body, tools, grammar) : textPrompt(body);
        if (!chat) grammar[0] = tools.responseGrammar();
        if (prompt.length == 0) throw ApiException.invalid("the prompt is empty", chat ? "messages" : "prompt");
        if (prompt.length >= contextLength)
            throw ApiException.invalid("the prompt is " + prompt.length + " tokens, but the context is " + contextLength
                    + " tokens (and at least one must be left to generate)", chat ? "messages" : "prompt", "context_length_exceeded");

        GenerationParams params = defaults.withSampling(s).withStopAtEndOfGeneration(!ignoreEos);
        if (maxTokens != null) params = params.withMaxTokens(maxTokens);
        // constrained output is decoded token by token (speculative drafts are not checked against the grammar)
        if (grammar[0] != null) params = params.withGrammar(grammar[0]).withSpeculation(null);
        // and a stop sequence would cut it short of parsing: the grammar decides where it ends
        if (grammar[0] != null) stop = List.of();
        return new Parsed(chat, model, prompt, params, stop, stream, includeUsage, topLogprobs(body, chat), chat && tools.offersTools());
    }

    /**
     * Chat: {@code logprobs} (boolean) and {@code top_logprobs} (0..20, only with logprobs). Completions:
     * {@code logprobs} (an integer 0..20: log-probs with that many alternatives). Both: llama.cpp's {@code n_probs}
     * (0..20) asks for log-probs with that many alternatives too (the larger count wins).
     */
    private static int topLogprobs(JsonNode body, boolean chat) {
        int top = -1;
        if (chat) {
            boolean on = optBool(body, "logprobs", false);
            Integer n = optInt(body, "top_logprobs");
            if (n != null) {
                checkTop(n, "top_logprobs");
                if (!on) throw ApiException.invalid("'top_logprobs' needs 'logprobs': true", "top_logprobs");
            }
            if (on) top = n == null ? 0 : n;
        } else {
            JsonNode lp = body.get("logprobs");
            if (lp != null && lp.isBoolean()) throw ApiException.invalid("'logprobs' must be an integer (0.." + MAX_TOP_LOGPROBS + ") on /v1/completions", "logprobs");
            Integer n = optInt(body, "logprobs");
            if (n != null) top = checkTop(n, "logprobs");
        }
        Integer nProbs = optInt(body, "n_probs");
        if (nProbs != null && checkTop(nProbs, "n_probs") > 0) top = Math.max(top, nProbs);
        return top;
    }

    private static int checkTop(int n, String field) {
        if (n < 0 || n > MAX_TOP_LOGPROBS) throw ApiException.invalid("'" + field + "' must be between 0 and " + MAX_TOP_LOGPROBS + ", got " + n, field);
        return n;
    }

    private int[] textPrompt(JsonNode body) {
        JsonNode p = body.get("prompt");
        if (p == null || p.isNull()) throw ApiException.invalid("'prompt' is required", "prompt", "missing_required_parameter");
        String text;
        if (p.isArray() && !p.isEmpty() && p.get(0).isNumber()) return tokenIds(p, "prompt");   // one prompt as token ids
        if (p.isArray() && p.size() == 1 && p.get(0).isArray()) return tokenIds(p.get(0), "prompt[0]");
        if (p.isTextual()) text = p.asText();
        else if (p.isArray() && p.size() == 1 && p.get(0).isTextual()) text = p.get(0).asText();
        else if (p.isArray() && p.size() > 1) throw ApiException.invalid("only one prompt per request is supported (n = 1)", "prompt");
        else throw ApiException.invalid("'prompt' must be a string, an array of token ids, or an array of one of these", "prompt");
        // plain text: special-token text in the prompt stays text, as in generate
        return tokenizer.encode(text, true, false);
    }

    /** An array of token ids, each an integer inside the vocabulary, used as they are (no BOS added). */
    private int[] tokenIds(JsonNode a, String param) {
        int[] ids = new int[a.size()];
        int vocab = tokenizer.vocabSize();
        for (int i = 0; i < ids.length; i++) {
            JsonNode t = a.get(i);
            if (!t.isIntegralNumber() || !t.canConvertToInt())
                throw ApiException.invalid("'" + param + "' must be an array of integer token ids; element " + i + " is not", param);
            ids[i] = t.asInt();
            if (ids[i] < 0 || ids[i] >= vocab)
                throw ApiException.invalid("token id " + ids[i] + " in '" + param + "' is outside the vocabulary (0.." + (vocab - 1) + ")", param);
        }
        return ids;
    }

    /** The rendered conversation; {@code grammar[0]} gets the answer's grammar (tools or response_format), if any. */
    private int[] chatPrompt(JsonNode body, ToolRequest tools, Grammar[] grammar) {
        JsonNode msgs = body.get("messages");
        if (msgs == null || msgs.isNull()) throw ApiException.invalid("'messages' is required", "messages", "missing_required_parameter");
        if (!msgs.isArray()) throw ApiException.invalid("'messages' must be an array", "messages");
        if (msgs.isEmpty()) throw ApiException.invalid("'messages' must contain at least one message", "messages");
        List<ChatMessage> messages = new ArrayList<>(msgs.size());
        for (int i = 0; i < msgs.size(); i++) {
            JsonNode m = msgs.get(i);
            String param = "messages[" + i + "]";
            if (!m.isObject()) throw ApiException.invalid("'" + param + "' must be an object", param);
            JsonNode role = m.get("role");
            if (role == null || !role.isTextual() || role.asText().isBlank())
                throw ApiException.invalid("'" + param + ".role' must be a non-empty string", param + ".role");
            String r = role.asText();
            if (r.equals("developer")) r = "system"; // OpenAI's newer name for the system role
            messages.add(ToolRequest.message(m, r, content(m.get("content"), param + ".content"), param));
        }
        try {
            if (!tools.offersTools()) {
                grammar[0] = tools.responseGrammar();
                return ChatPrompt.tokenize(template, tokenizer, messages, true);
            }
            ToolCalling.Prepared p = ToolCalling.prepare(template, tokenizer, messages, tools.tools(), tools.choice(), tools.parallel(),
                    tools.jsonObject() ? JSON_OBJECT : tools.responseSchema());
            grammar[0] = p.grammar();
            return p.prompt();
        } catch (ChatTemplateException e) {
            throw ApiException.invalid(e.getMessage(), "messages");
        } catch (GrammarException e) {
            throw ApiException.invalid(e.getMessage(), "tools");
        }
    }

    /** A string, null (assistant turns with tool calls), or an array of text parts joined by newlines. */
    private static String content(JsonNode c, String param) {
        if (c == null || c.isNull()) return "";
        if (c.isTextual()) return c.asText();
        if (!c.isArray()) throw ApiException.invalid("'" + param + "' must be a string or an array of content parts", param);
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < c.size(); i++) {
            JsonNode part = c.get(i);
            JsonNode type = part.get("type"), text = part.get("text");
            if (!part.isObject() || type == null || !"text".equals(type.asText()) || text == null || !text.isTextual())
                throw ApiException.invalid("'" + param + "[" + i + "]' must be a text part ({\"type\":\"text\",\"text\":...}); only text is supported",
                        param + "[" + i + "]");
            if (!sb.isEmpty()) sb.append('\n');
            sb.append(text.asText());
        }
        return sb.toString();
    }

    private static List<String> stopSequences(JsonNode stop) {
        if (stop == null || stop.isNull()) return List.of();
        List<String> out = new ArrayList<>();
        if (stop.isTextual()) out.add(stop.asText());
        else if (stop.isArray()) {
            if (stop.size() > MAX_STOP_SEQUENCES)
                throw ApiException.invalid("at most " + MAX_STOP_SEQUENCES + " stop sequences are supported, got " + stop.size(), "stop");
            for (JsonNode s : stop) {
                if (!s.isTextual()) throw ApiException.invalid("'stop' must be a string or an array of strings", "stop");
                out.add(s.asText());
            }
        } else throw ApiException.invalid("'stop' must be a string or an array of strings", "stop");
        return out;
    }

    private static String optString(JsonNode body, String field) {
        JsonNode v = body.get(field);
        if (v == null || v.isNull()) return null;
        if (!v.isTextual()) throw ApiException.invalid("'" + field + "' must be a string", field);
        return v.asText();
    }

    private static Integer optInt(JsonNode body, String field) {
        Long v = optLong(body, field);
        if (v == null) return null;
        if (v != v.intValue()) throw ApiException.invalid("'" + field + "' is out of range: " + v, field);
        return v.intValue();
    }

    private static Long optLong(JsonNode body, String field) {
        JsonNode v = body.get(field);
        if (v == null || v.isNull()) return null;
        if (!v.isIntegralNumber() || !v.canConvertToLong()) throw ApiException.invalid("'" + field + "' must be an integer", field);
        return v.asLong();
    }

    private static Double optNumber(JsonNode body, String field) {
        JsonNode v = body.get(field);
        if (v == null || v.isNull()) return null;
        if (!v.isNumber()) throw ApiException.invalid("'" + field + "' must be a number", field);
        double d = v.asDouble();
        if (!Double.isFinite(d)) throw ApiException.invalid("'" + field + "' must be a finite number", field);
        return d;
    }

    private static boolean optBool(JsonNode body, String field, boolean dflt) {
        return optBool(body, field, dflt, field);
    }

    private static boolean optBool(JsonNode body, String field, boolean dflt, String param) {
        JsonNode v = body.get(field);
        if (v == null || v.isNull()) return dflt;
        if (!v.isBoolean()) throw ApiException.invalid("'" + param + "' must be a boolean", param);
        return v.asBoolean();
    }
}
