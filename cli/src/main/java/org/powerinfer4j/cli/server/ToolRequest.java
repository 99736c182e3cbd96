package org.powerinfer4j.cli.server;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.List;
import org.powerinfer4j.engine.grammar.Grammar;
import org.powerinfer4j.engine.grammar.GrammarException;
import org.powerinfer4j.engine.tokenizer.ChatMessage;
import org.powerinfer4j.engine.tools.ToolChoice;
import org.powerinfer4j.engine.tools.ToolDefinition;

/**
 * The structured-output part of a request: OpenAI's {@code tools}, {@code tool_choice}, {@code parallel_tool_calls}
 * and {@code response_format}, validated (400 naming the field), plus the tool parts of chat messages (an assistant's
 * {@code tool_calls}, role {@code tool} with {@code tool_call_id}).
 *
 * @param responseSchema {@code response_format} json_schema's schema; for json_object {@link #jsonObject}; else null
 */
record ToolRequest(List<ToolDefinition> tools, ToolChoice choice, boolean parallel, JsonNode responseSchema, boolean jsonObject) {
    static final ToolRequest NONE = new ToolRequest(List.of(), ToolChoice.NONE, true, null, false);
    private static final Grammar ANY_OBJECT = Grammar.jsonObject();

    /** Tools are offered: the answer is a tool call (or, with auto, a response) and is parsed back into tool_calls. */
    boolean offersTools() {
        return !tools.isEmpty() && choice.mode() != ToolChoice.Mode.NONE;
    }

    /** The grammar of a plain (tool-less) answer: response_format's, or null for free text. */
    Grammar responseGrammar() {
        if (jsonObject) return ANY_OBJECT;
        if (responseSchema == null) return null;
        try {
            return Grammar.jsonSchema(responseSchema);
        } catch (GrammarException e) {
            throw ApiException.invalid("'response_format.json_schema.schema': " + e.getMessage(), "response_format");
        }
    }

    static ToolRequest parse(JsonNode body, boolean chat) {
        JsonNode responseSchema = null;
        boolean jsonObject = false;
        JsonNode rf = body.get("response_format");
        if (rf != null && !rf.isNull()) {
            if (!rf.isObject() || !rf.path("type").isTextual()) throw ApiException.invalid("'response_format' must be an object with a 'type'", "response_format");
            switch (rf.get("type").asText()) {
                case "text" -> {}
                case "json_object" -> jsonObject = true;
                case "json_schema" -> {
                    JsonNode js = rf.get("json_schema");
                    if (js == null || !js.isObject()) throw ApiException.invalid("'response_format.json_schema' must be an object", "response_format");
                    responseSchema = js.get("schema");
                    if (responseSchema == null || !(responseSchema.isObject() || responseSchema.isBoolean()))
                        throw ApiException.invalid("'response_format.json_schema.schema' is required and must be a JSON schema", "response_format");
                    JsonNode strict = js.get("strict");
                    if (strict != null && !strict.isNull() && !strict.isBoolean())
                        throw ApiException.invalid("'response_format.json_schema.strict' must be a boolean", "response_format");
                }
                default -> throw ApiException.invalid("'response_format.type' must be 'text', 'json_object' or 'json_schema', got '"
                        + rf.get("type").asText() + "'", "response_format");
            }
        }
        List<ToolDefinition> tools = chat ? tools(body.get("tools")) : List.of();
        if (!chat && body.has("tools")) throw ApiException.invalid("'tools' is only supported on /v1/chat/completions", "tools");
        ToolChoice choice = choice(body.get("tool_choice"), tools);
        boolean parallel = true;
        JsonNode p = body.get("parallel_tool_calls");
        if (p != null && !p.isNull()) {
            if (!p.isBoolean()) throw ApiException.invalid("'parallel_tool_calls' must be a boolean", "parallel_tool_calls");
            parallel = p.asBoolean();
        }
        ToolRequest r = new ToolRequest(tools, choice, parallel, responseSchema, jsonObject);
        r.responseGrammar();   // a bad response schema is response_format's 400, also when tools wrap it
        return r;
    }

    private static List<ToolDefinition> tools(JsonNode t) {
        if (t == null || t.isNull()) return List.of();
        if (!t.isArray()) throw ApiException.invalid("'tools' must be an array", "tools");
        List<ToolDefinition> out = new ArrayList<>();
        for (int i = 0; i < t.size(); i++) {
            JsonNode tool = t.get(i);
            String param = "tools[" + i + "]";
            if (!tool.isObject() || !"function".equals(tool.path("type").asText()))
                throw ApiException.invalid("'" + param + "' must be {\"type\": \"function\", \"function\": {...}}; only function tools are supported", param);
            JsonNode fn = tool.get("function");
            if (fn == null || !fn.isObject() || !fn.path("name").isTextual())
                throw ApiException.invalid("'" + param + ".function' must be an object with a 'name'", param);
            JsonNode description = fn.get("description");
            if (description != null && !description.isNull() && !description.isTextual())
                throw ApiException.invalid("'" + param + ".function.description' must be a string", param);
            try {
                ToolDefinition d = new ToolDefinition(fn.get("name").asText(), description == null || description.isNull() ? "" : description.asText(),
                        fn.get("parameters"));
                Grammar.jsonSchema(d.parameters());   // an unsupported parameter schema is this tool's 400, not a later one
                for (ToolDefinition o : out) if (o.name().equals(d.name())) throw ApiException.invalid("two tools are named '" + d.name() + "'", param);
                out.add(d);
            } catch (GrammarException e) {
                throw ApiException.invalid("'" + param + ".function': " + e.getMessage(), param);
            }
        }
        return out;
    }

    private static ToolChoice choice(JsonNode c, List<ToolDefinition> tools) {
        if (c == null || c.isNull()) return tools.isEmpty() ? ToolChoice.NONE : ToolChoice.AUTO;
        ToolChoice choice;
        if (c.isTextual()) {
            choice = switch (c.asText()) {
                case "auto" -> ToolChoice.AUTO;
                case "required" -> ToolChoice.REQUIRED;
                case "none" -> ToolChoice.NONE;
                default -> throw ApiException.invalid("'tool_choice' must be 'auto', 'required', 'none' or a function, got '" + c.asText() + "'", "tool_choice");
            };
        } else if (c.isObject() && "function".equals(c.path("type").asText()) && c.path("function").path("name").isTextual()) {
            String name = c.get("function").get("name").asText();
            if (tools.stream().noneMatch(t -> t.name().equals(name)))
                throw ApiException.invalid("'tool_choice' names the function '" + name + "', which is not among the tools", "tool_choice");
            choice = ToolChoice.function(name);
        } else {
            throw ApiException.invalid("'tool_choice' must be a string or {\"type\": \"function\", \"function\": {\"name\": ...}}", "tool_choice");
        }
        if (tools.isEmpty() && choice.mode() != ToolChoice.Mode.NONE)
            throw ApiException.invalid("'tool_choice' is '" + c + "' but no 'tools' were given", "tool_choice");
        return choice;
    }

    /** A chat message's tool parts: an assistant's {@code tool_calls}, a tool result's {@code tool_call_id} (required) and name. */
    static ChatMessage message(JsonNode m, String role, String content, String param) {
        if (role.equals("tool")) {
            JsonNode id = m.get("tool_call_id");
            if (id == null || !id.isTextual()) throw ApiException.invalid("'" + param + ".tool_call_id' is required for role 'tool'", param + ".tool_call_id");
            JsonNode name = m.get("name");
            return ChatMessage.tool(id.asText(), name != null && name.isTextual() ? name.asText() : null, content);
        }
        JsonNode calls = m.get("tool_calls");
        if (calls == null || calls.isNull() || calls.isEmpty()) return new ChatMessage(role, content);
        if (!role.equals("assistant") || !calls.isArray())
            throw ApiException.invalid("'" + param + ".tool_calls' must be an array on an assistant message", param + ".tool_calls");
        List<ChatMessage.ToolCall> out = new ArrayList<>();
        for (int i = 0; i < calls.size(); i++) {
            JsonNode c = calls.get(i), fn = c.path("function");
            String cp = param + ".tool_calls[" + i + "]";
            if (!fn.path("name").isTextual()) throw ApiException.invalid("'" + cp + ".function.name' must be a string", cp);
            JsonNode args = fn.get("arguments");
            String arguments = args == null || args.isNull() ? "{}" : args.isTextual() ? args.asText() : args.toString();
            out.add(new ChatMessage.ToolCall(c.path("id").isTextual() ? c.get("id").asText() : null, fn.get("name").asText(), arguments));
        }
        return ChatMessage.assistant(content, out);
    }
}
