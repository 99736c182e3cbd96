package org.powerinfer4j.engine.tokenizer;

import java.util.List;

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

    /** A short name: "gguf" for a file's own template, else the built-in format's name. */
    String name();
}
