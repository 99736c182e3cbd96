package org.powerinfer4j.langchain4j;

import dev.langchain4j.agent.tool.ToolExecutionRequest;
import dev.langchain4j.data.message.AiMessage;
import dev.langchain4j.model.chat.Capability;
import dev.langchain4j.model.output.FinishReason;
import java.util.ArrayList;
import java.util.Set;
import org.powerinfer4j.engine.tokenizer.ChatMessage;
import org.powerinfer4j.engine.tools.ToolCalling;
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

        /** JSON-schema response formats are honoured (grammar-constrained), so AiServices sends the schema instead of prose. */
        public Set<Capability> supportedCapabilities() {
            return Set.of(Capability.RESPONSE_FORMAT_JSON_SCHEMA);
        }

        /** The finished call as a response; with {@code toolCalls} the answer is read back as tool calls or content. */
        ChatResponse response(InProcessGenerator.Generation g, boolean toolCalls) {
            AiMessage message = AiMessage.from(g.text());
            FinishReason finish = g.finishReason();
            if (toolCalls) {
                ToolCalling.Reply reply = ToolCalling.parse(g.text());
                if (reply.hasToolCalls()) {
                    message = AiMessage.from(executionRequests(reply));
                    finish = FinishReason.TOOL_EXECUTION;
                } else {
                    message = AiMessage.from(reply.content());
                }
            }
            return ChatResponse.builder()
                    .aiMessage(message)
                    .modelName(generator.modelName())
                    .tokenUsage(g.tokenUsage())
                    .finishReason(finish)
                    .build();
        }

        static List<ToolExecutionRequest> executionRequests(ToolCalling.Reply reply) {
            List<ToolExecutionRequest> out = new ArrayList<>();
            for (ChatMessage.ToolCall c : reply.toolCalls())
                out.add(ToolExecutionRequest.builder().id(c.id()).name(c.name()).arguments(c.arguments()).build());
            return out;
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
