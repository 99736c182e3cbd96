package org.powerinfer4j.langchain4j;

import dev.langchain4j.model.chat.ChatModel;
import dev.langchain4j.model.chat.listener.ChatModelListener;
import dev.langchain4j.model.chat.request.ChatRequest;
import dev.langchain4j.model.chat.response.ChatResponse;
import java.util.List;
import org.powerinfer4j.engine.api.Model;

/**
 * A LangChain4j {@link ChatModel} that runs a PowerInfer4j {@link Model} in this JVM — no server, no HTTP. The
 * conversation is rendered with the model's own chat template (the GGUF's {@code tokenizer.chat_template}, else a
 * built-in format), and the request's temperature, top-p, top-k, max output tokens and stop sequences are honoured.
 * Tools ({@code toolSpecifications}, toolChoice AUTO/REQUIRED) come back as {@code ToolExecutionRequest}s and JSON
 * response formats (with or without a schema) as JSON that conforms, both by grammar-constrained decoding
 * ({@link org.powerinfer4j.engine.tools.ToolCalling}); frequency/presence penalties and non-text content are refused
 * with an {@link dev.langchain4j.exception.UnsupportedFeatureException}.
 *
 * <pre>{@code
 * try (PowerInferChatModel chat = PowerInferChatModel.builder().modelPath(Path.of("model.gguf")).temperature(0.0).build()) {
 *     String answer = chat.chat("Tell me a story.");
 * }
 * }</pre>
 *
 * <p>Thread-safe: each call runs in its own engine session, and concurrent calls share the model as the engine's
 * sessions do (see {@link Model}). Closing it closes the model only when it was opened from {@code modelPath}.
 */
public final class PowerInferChatModel extends InProcessModel.Chat implements ChatModel {
    private PowerInferChatModel(InProcessGenerator generator, List<ChatModelListener> listeners) {
        super(generator, listeners);
    }

    public static Builder builder() {
        return new Builder();
    }

    @Override
    public ChatResponse doChat(ChatRequest request) {
        EngineRequest.Call call = EngineRequest.translate(request, generator).prepare(generator);
        InProcessGenerator.Generation g = generator.generate(call.prompt(), call.params(), call.stopSequences(), text -> {});
        return response(g, call.toolCalls());
    }

    /** Builds a {@link PowerInferChatModel}; the settings are {@link PowerInferBuilder}'s plus LangChain4j listeners. */
    public static final class Builder extends InProcessModel.Chat.Builder<Builder> {
        private Builder() {}

        public PowerInferChatModel build() {
            return new PowerInferChatModel(generator(), listeners);
        }
    }
}
