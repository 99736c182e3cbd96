package org.powerinfer4j.engine.tokenizer;

import java.util.List;
import java.util.Map;

/**
 * Finds out what a chat template renders by rendering small conversations that carry a marker in one place — a
 * system message, a tool's name, a tool call's name, a tool result — and looking for the marker in the output
 * (llama.cpp's minja probes templates the same way). A template that fails on a probe does not support that part.
 */
final class TemplateProbe {
    private static final String MARK = "\uE0F0probe";

    private TemplateProbe() {}

    static ChatTemplate.Capabilities probe(ChatTemplate t) {
        boolean system = contains(t, List.of(ChatMessage.system(MARK + "system"), ChatMessage.user("hi")), List.of(), "system");
        Map<String, Object> tool = Map.of("type", "function", "function",
                Map.of("name", MARK + "tool", "description", "d", "parameters", Map.of("type", "object", "properties", Map.of())));
        boolean tools = contains(t, List.of(ChatMessage.user("hi")), List.of(tool), "tool");
        ChatMessage call = ChatMessage.assistant("", List.of(new ChatMessage.ToolCall("call_1", MARK + "call", "{\"a\":1}")));
        boolean calls = contains(t, List.of(ChatMessage.user("hi"), call), List.of(), "call");
        boolean results = contains(t, List.of(ChatMessage.user("hi"), call, ChatMessage.tool("call_1", MARK + "call", MARK + "result")), List.of(),
                "result");
        return new ChatTemplate.Capabilities(system, tools, calls, results);
    }

    private static boolean contains(ChatTemplate t, List<ChatMessage> messages, List<Map<String, Object>> tools, String what) {
        try {
            return t.render(messages, true, tools).contains(MARK + what);
        } catch (RuntimeException e) {
            return false;
        }
    }
}
