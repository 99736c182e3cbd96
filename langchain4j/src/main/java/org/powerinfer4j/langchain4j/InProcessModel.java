package org.powerinfer4j.langchain4j;

import dev.langchain4j.data.message.AiMessage;
import dev.langchain4j.model.chat.listener.ChatModelListener;
import dev.langchain4j.model.chat.request.ChatRequestParameters;
import dev.langchain4j.model.chat.response.ChatResponse;
import java.util.List;
import org.powerinfer4j.engine.api.Model;

/**
 * What the four LangChain4j models of this module have in common: the generation core over one engine
 * {@link Model}, and closing it (which closes the model only when it was opened from {@code modelPath}).
 */
public abstract sealed class InProcessModel implements AutoCloseable
        permits InProcessModel.Chat, PowerInferLanguageModel, PowerInferStreamingLanguageModel {
    final InProcessGenerator generator;

    InProcessModel(InProcessGenerator generator) {
        this.generator = generator;
    }

    /** The engine model this LangChain4j model runs on. */
    public Model model() {
        return generator.model();
    }

    @Override
    public void close() {
        generator.close();
    }

    /** A plain-text prompt (BOS, no template) continued with the builder's settings, the text streamed to {@code sink}. */
    InProcessGenerator.Generation complete(String prompt, InProcessGenerator.TextSink sink) {
        if (prompt == null) throw new IllegalArgumentException("the prompt is null");
        GenerationDefaults d = generator.defaults();
        return generator.generate(generator.textPrompt(prompt), d.params(null, null, null, null, generator.nextSeed()), d.stops(null), sink);
    }

    /** The two chat models: LangChain4j listeners, the defaults they report, and how a finished call becomes a response. */
    public abstract static sealed class Chat extends InProcessModel permits PowerInferChatModel, PowerInferStreamingChatModel {
        private final List<ChatModelListener> listeners;

        Chat(InProcessGenerator generator, List<ChatModelListener> listeners) {
            super(generator);
            this.listeners = listeners;
        }

        public ChatRequestParameters defaultRequestParameters() {
            return generator.defaults().asChatParameters(generator.modelName());
        }

        public List<ChatModelListener> listeners() {
            return listeners;
        }

        ChatResponse response(InProcessGenerator.Generation g) {
            return ChatResponse.builder()
                    .aiMessage(AiMessage.from(g.text()))
                    .modelName(generator.modelName())
                    .tokenUsage(g.tokenUsage())
                    .finishReason(g.finishReason())
                    .build();
        }

        /** A chat model's builder: {@link PowerInferBuilder}'s settings plus LangChain4j listeners. */
        public abstract static class Builder<B extends Builder<B>> extends PowerInferBuilder<B> {
            List<ChatModelListener> listeners = List.of();

            Builder() {}

            /** Observers of every request, response and error (LangChain4j's observability hook). */
            public B listeners(List<ChatModelListener> listeners) {
                this.listeners = listeners == null ? List.of() : List.copyOf(listeners);
                return self();
            }
        }
    }
}
