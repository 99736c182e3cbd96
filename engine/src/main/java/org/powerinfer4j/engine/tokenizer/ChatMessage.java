package org.powerinfer4j.engine.tokenizer;

import java.util.List;
import java.util.Objects;

/**
 * One chat turn: a role ("system", "user", "assistant", "tool", ...) and its text; an assistant turn may carry the
 * tool calls it made, a "tool" turn answers one of them ({@code toolCallId}, the tool's {@code name}).
 */
public record ChatMessage(String role, String content, List<ToolCall> toolCalls, String toolCallId, String name) {
    /**
     * A function call an assistant turn made (OpenAI's {@code tool_calls[]} of type function).
     *
     * @param arguments the arguments as JSON text (OpenAI sends them as a string)
     */
    public record ToolCall(String id, String name, String arguments) {
        public ToolCall {
            Objects.requireNonNull(name, "name");
            Objects.requireNonNull(arguments, "arguments");
        }
    }

    public ChatMessage {
        Objects.requireNonNull(role, "role");
        Objects.requireNonNull(content, "content");
        toolCalls = toolCalls == null ? List.of() : List.copyOf(toolCalls);
    }

    public ChatMessage(String role, String content) {
        this(role, content, List.of(), null, null);
    }

    public static ChatMessage system(String content) {
        return new ChatMessage("system", content);
    }

    public static ChatMessage user(String content) {
        return new ChatMessage("user", content);
    }

    public static ChatMessage assistant(String content) {
        return new ChatMessage("assistant", content);
    }

    /** An assistant turn that called tools (its content may be empty). */
    public static ChatMessage assistant(String content, List<ToolCall> toolCalls) {
        return new ChatMessage("assistant", content, toolCalls, null, null);
    }

    /** A tool's result for the call {@code toolCallId}. */
    public static ChatMessage tool(String toolCallId, String name, String content) {
        return new ChatMessage("tool", content, List.of(), toolCallId, name);
    }

    /** The same turn with other text. */
    public ChatMessage withContent(String text) {
        return new ChatMessage(role, text, toolCalls, toolCallId, name);
    }

    public boolean hasToolCalls() {
        return !toolCalls.isEmpty();
    }
}
