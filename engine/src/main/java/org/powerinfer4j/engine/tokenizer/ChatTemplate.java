package org.powerinfer4j.engine.tokenizer;

import java.util.List;
import java.util.Map;

/**
 * Turns a conversation into the prompt text a model was trained on. The result contains special-token text
 * (e.g. {@code <|im_start|>}), so tokenize it with {@code parseSpecial = true} and {@code addSpecial = false} when
 * the template writes the BOS itself (most do, via {@code bos_token}).
 */
public interface ChatTemplate {
    /**
     * @param addGenerationPrompt end with the opening of an assistant turn, so the model answers next
     * @throws ChatTemplateException when the template rejects the conversation ({@code raise_exception}) or fails
     */
    String render(List<ChatMessage> messages, boolean addGenerationPrompt);

    /**
     * Renders with {@code tools} in scope (OpenAI-style {@code {"type":"function","function":{name, description,
     * parameters}}} maps), as llama.cpp's Jinja path passes them; empty: no {@code tools} variable. Templates that
     * ignore tools render as {@link #render(List, boolean)}.
     */
    default String render(List<ChatMessage> messages, boolean addGenerationPrompt, List<Map<String, Object>> tools) {
        return render(messages, addGenerationPrompt);
    }

    /** What a template renders of the tool-calling conversation (found by rendering probes, as llama.cpp's minja does). */
    record Capabilities(boolean systemRole, boolean tools, boolean toolCalls, boolean toolResponses) {}

    /** Which parts of a tool-calling conversation the template renders; what it drops must be put into other turns. */
    default Capabilities capabilities() {
        return TemplateProbe.probe(this);
    }

    /** A short name: "gguf" for a file's own template, else the built-in format's name. */
    String name();
}
