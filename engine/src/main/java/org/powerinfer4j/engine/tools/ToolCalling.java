package org.powerinfer4j.engine.tools;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.TextNode;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import org.powerinfer4j.engine.grammar.Grammar;
import org.powerinfer4j.engine.grammar.GrammarException;
import org.powerinfer4j.engine.tokenizer.ChatMessage;
import org.powerinfer4j.engine.tokenizer.ChatPrompt;
import org.powerinfer4j.engine.tokenizer.ChatTemplate;
import org.powerinfer4j.engine.tokenizer.Tokenizer;

/**
 * Tool calling in one generic JSON format (llama.cpp's generic handler, for models without a native format
 * the engine knows): the model answers with one JSON object, constrained by a grammar —
 * <pre>
 * {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}, ...]}   a call (or several)
 * {"response": "It is sunny."}                                                    an answer (tool_choice auto only)
 * </pre>
 * {@code arguments} follows the function's parameter schema; with {@code parallel_tool_calls} false there is exactly
 * one call; a named tool_choice allows that function only; with a response schema (response_format) the
 * {@code response} value follows it instead of being a string.
 *
 * <p>The prompt: the tools go into the template's {@code tools} variable when the template renders it; otherwise
 * they are listed in the system prompt (one JSON object per line, after "You can call these tools:"). Either way the
 * system prompt gets the format instructions above ({@link #instructions}). Turns the template drops are rewritten
 * first: an assistant turn's tool calls become its content in the format above, a tool result becomes a user turn
 * {@code {"tool_response": {"name": ..., "tool_call_id": ..., "content": ...}}}, and a system prompt the template
 * ignores is put at the start of the first user turn.
 */
public final class ToolCalling {
    private ToolCalling() {}

    /** A rendered prompt and the grammar its answer must follow. */
    public record Prepared(int[] prompt, Grammar grammar) {}

    /** A parsed answer: text for the user, or the calls to run (ids made up, arguments as compact JSON text). */
    public record Reply(String content, List<ChatMessage.ToolCall> toolCalls) {
        public boolean hasToolCalls() {
            return !toolCalls.isEmpty();
        }
    }

    /**
     * The prompt and grammar for a conversation with tools. With no tools or {@code tool_choice} none the tools are
     * not offered: the grammar is {@code responseSchema}'s (or null without one).
     *
     * @param responseSchema the answer's JSON schema (response_format), or null for free text
     */
    public static Prepared prepare(ChatTemplate template, Tokenizer tokenizer, List<ChatMessage> messages, List<ToolDefinition> tools,
                                   ToolChoice choice, boolean parallel, JsonNode responseSchema) {
        ChatTemplate.Capabilities caps = template.capabilities();
        boolean offer = !tools.isEmpty() && choice.mode() != ToolChoice.Mode.NONE;
        List<ChatMessage> turns = rewriteHistory(messages, caps);
        if (!offer) {
            return new Prepared(ChatPrompt.tokenize(template, tokenizer, turns, true),
                    responseSchema == null ? null : Grammar.jsonSchema(responseSchema));
        }
        Grammar grammar = Grammar.jsonSchema(outputSchema(tools, choice, parallel, responseSchema));
        turns = withSystemText(turns, instructions(tools, choice, parallel, !caps.tools()), caps);
        List<Map<String, Object>> toolValues = new ArrayList<>();
        if (caps.tools()) for (ToolDefinition t : tools) toolValues.add(t.templateValue());
        return new Prepared(ChatPrompt.tokenize(template, tokenizer, turns, true, toolValues), grammar);
    }

    /** The JSON schema of the answer (see the class comment); tool parameter schemas are moved under {@code $defs}. */
    public static JsonNode outputSchema(List<ToolDefinition> tools, ToolChoice choice, boolean parallel, JsonNode responseSchema) {
        ObjectNode root = ToolDefinition.JSON.createObjectNode();
        ObjectNode defs = ToolDefinition.JSON.createObjectNode();
        ArrayNode calls = ToolDefinition.JSON.createArrayNode();
        Set<String> names = new HashSet<>();
        for (int i = 0; i < tools.size(); i++) {
            ToolDefinition t = tools.get(i);
            if (!names.add(t.name())) throw new GrammarException("two tools are named '" + t.name() + "'");
            if (choice.mode() == ToolChoice.Mode.FUNCTION && !t.name().equals(choice.function())) continue;
            String def = "tool" + i;
            defs.set(def, relocated(t.parameters(), "#/$defs/" + def));
            ObjectNode call = calls.addObject().put("type", "object");
            call.putObject("properties").<ObjectNode>set("name", ToolDefinition.JSON.createObjectNode().put("const", t.name()))
                    .set("arguments", ToolDefinition.JSON.createObjectNode().put("$ref", "#/$defs/" + def));
            call.putArray("required").add("name").add("arguments");
            call.put("additionalProperties", false);
        }
        if (calls.isEmpty()) throw new GrammarException("tool_choice names the function '" + choice.function() + "', which is not among the tools");
        ObjectNode array = ToolDefinition.JSON.createObjectNode().put("type", "array").put("minItems", 1);
        if (!parallel) array.put("maxItems", 1);
        array.putObject("items").set("anyOf", calls);
        ObjectNode callObject = object("tool_calls", array);
        if (choice.mode() == ToolChoice.Mode.AUTO) {
            JsonNode response = ToolDefinition.JSON.createObjectNode().put("type", "string");
            if (responseSchema != null) {
                defs.set("response", relocated(responseSchema, "#/$defs/response"));
                response = ToolDefinition.JSON.createObjectNode().put("$ref", "#/$defs/response");
            }
            root.putArray("anyOf").add(callObject).add(object("response", response));
        } else {
            root.setAll(callObject);
        }
        root.set("$defs", defs);
        return root;
    }

    private static ObjectNode object(String property, JsonNode schema) {
        ObjectNode o = ToolDefinition.JSON.createObjectNode().put("type", "object");
        o.putObject("properties").set(property, schema);
        o.putArray("required").add(property);
        o.put("additionalProperties", false);
        return o;
    }

    /** A copy of {@code schema} whose local references point into it at its new place {@code base}. */
    private static JsonNode relocated(JsonNode schema, String base) {
        JsonNode copy = schema.deepCopy();
        rewriteRefs(copy, base);
        return copy;
    }

    private static void rewriteRefs(JsonNode n, String base) {
        if (n instanceof ObjectNode o) {
            JsonNode ref = o.get("$ref");
            if (ref != null && ref.isTextual() && ref.asText().startsWith("#")) o.put("$ref", base + ref.asText().substring(1));
            for (Iterator<Map.Entry<String, JsonNode>> it = o.fields(); it.hasNext(); ) {
                Map.Entry<String, JsonNode> e = it.next();
                if (!(e.getValue() instanceof TextNode)) rewriteRefs(e.getValue(), base);
            }
        } else if (n instanceof ArrayNode a) {
            for (JsonNode x : a) rewriteRefs(x, base);
        }
    }

    /** The system-prompt text: the tools when {@code listTools} (the template does not render them), and the answer format. */
    public static String instructions(List<ToolDefinition> tools, ToolChoice choice, boolean parallel, boolean listTools) {
        StringBuilder sb = new StringBuilder();
        if (listTools) {
            sb.append("You can call these tools:\n");
            for (ToolDefinition t : tools) sb.append(json(ToolDefinition.JSON.valueToTree(t.templateValue()))).append('\n');
        }
        sb.append("Answer with one JSON object only. To call ").append(parallel ? "tools" : "a tool").append(", answer ")
                .append("{\"tool_calls\": [{\"name\": <tool name>, \"arguments\": <arguments object>}").append(parallel ? ", ...]}" : "]}");
        if (choice.mode() == ToolChoice.Mode.FUNCTION) sb.append(" calling ").append(choice.function());
        sb.append('.');
        if (choice.mode() == ToolChoice.Mode.AUTO) sb.append(" To answer directly, answer {\"response\": <your answer>}.");
        return sb.toString();
    }

    /** Tool calls and results in turns the template would drop, rewritten as text (see the class comment). */
    static List<ChatMessage> rewriteHistory(List<ChatMessage> messages, ChatTemplate.Capabilities caps) {
        List<ChatMessage> out = new ArrayList<>(messages.size());
        for (ChatMessage m : messages) {
            if (m.hasToolCalls() && !caps.toolCalls()) {
                String calls = callsText(m.toolCalls());
                out.add(ChatMessage.assistant(m.content().isEmpty() ? calls : m.content() + "\n" + calls));
            } else if (m.role().equals("tool") && !caps.toolResponses()) {
                ObjectNode r = ToolDefinition.JSON.createObjectNode();
                ObjectNode body = r.putObject("tool_response");
                if (m.name() != null) body.put("name", m.name());
                if (m.toolCallId() != null) body.put("tool_call_id", m.toolCallId());
                body.put("content", m.content());
                ChatMessage last = out.isEmpty() ? null : out.getLast();
                if (last != null && last.role().equals("user") && last.content().startsWith("{\"tool_response\""))
                    out.set(out.size() - 1, last.withContent(last.content() + "\n" + json(r)));   // consecutive results: one turn
                else out.add(ChatMessage.user(json(r)));
            } else {
                out.add(m);
            }
        }
        return out;
    }

    /** {@code text} at the end of the system prompt; at the start of the first user turn if the template has no system role. */
    static List<ChatMessage> withSystemText(List<ChatMessage> turns, String text, ChatTemplate.Capabilities caps) {
        List<ChatMessage> out = new ArrayList<>(turns);
        if (caps.systemRole()) {
            if (!out.isEmpty() && out.getFirst().role().equals("system")) out.set(0, out.getFirst().withContent(out.getFirst().content() + "\n\n" + text));
            else out.addFirst(ChatMessage.system(text));
            return out;
        }
        String system = "";
        if (!out.isEmpty() && out.getFirst().role().equals("system")) system = out.removeFirst().content() + "\n\n";
        for (int i = 0; i < out.size(); i++) {
            if (out.get(i).role().equals("user")) {
                out.set(i, out.get(i).withContent(system + text + "\n\n" + out.get(i).content()));
                return out;
            }
        }
        out.addFirst(ChatMessage.user(system + text));
        return out;
    }

    /** Calls in the answer format, as an earlier assistant turn says them. */
    static String callsText(List<ChatMessage.ToolCall> calls) {
        ObjectNode o = ToolDefinition.JSON.createObjectNode();
        ArrayNode a = o.putArray("tool_calls");
        for (ChatMessage.ToolCall c : calls) {
            ObjectNode call = a.addObject().put("name", c.name());
            try {
                call.set("arguments", ToolDefinition.JSON.readTree(c.arguments()));
            } catch (Exception e) {
                call.put("arguments", c.arguments());
            }
        }
        return json(o);
    }

    /**
     * Reads an answer in the format back: {@code tool_calls} become calls, {@code response} the content (its text, or
     * its JSON when it is not a string). Text that is not such an object (no tools were offered) is the content.
     */
    public static Reply parse(String text) {
        JsonNode o;
        try {
            o = ToolDefinition.JSON.readTree(text);
        } catch (Exception e) {
            return new Reply(text, List.of());
        }
        if (o == null || !o.isObject()) return new Reply(text, List.of());
        if (o.get("tool_calls") instanceof ArrayNode a) {
            List<ChatMessage.ToolCall> calls = new ArrayList<>();
            for (JsonNode c : a) {
                if (!c.path("name").isTextual()) continue;
                JsonNode args = c.get("arguments");
                calls.add(new ChatMessage.ToolCall(newCallId(), c.get("name").asText(), args == null ? "{}" : json(args)));
            }
            if (!calls.isEmpty()) return new Reply("", calls);
        }
        JsonNode r = o.get("response");
        if (r != null && o.size() == 1) return new Reply(r.isTextual() ? r.asText() : json(r), List.of());
        return new Reply(text, List.of());
    }

    /** OpenAI-like call ids: "call_" and 24 letters and digits. */
    static String newCallId() {
        String alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        StringBuilder sb = new StringBuilder("call_");
        ThreadLocalRandom r = ThreadLocalRandom.current();
        for (int i = 0; i < 24; i++) sb.append(alphabet.charAt(r.nextInt(alphabet.length())));
        return sb.toString();
    }

    private static String json(JsonNode n) {
        try {
            return ToolDefinition.JSON.writeValueAsString(n);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }
}
