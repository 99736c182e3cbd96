package org.powerinfer4j.langchain4j;

import dev.langchain4j.data.message.AiMessage;
import dev.langchain4j.data.message.Content;
import dev.langchain4j.data.message.SystemMessage;
import dev.langchain4j.data.message.TextContent;
import dev.langchain4j.data.message.UserMessage;
import dev.langchain4j.exception.UnsupportedFeatureException;
import dev.langchain4j.model.chat.request.ChatRequest;
import dev.langchain4j.model.chat.request.ChatRequestParameters;
import dev.langchain4j.model.chat.request.ResponseFormatType;
import dev.langchain4j.model.chat.request.ToolChoice;
import java.util.ArrayList;
import java.util.List;
import org.powerinfer4j.engine.api.GenerationParams;
import org.powerinfer4j.engine.tokenizer.ChatMessage;

/**
 * A LangChain4j {@link ChatRequest} as the engine runs it: the conversation as engine chat messages,
 * the generation parameters and the stop sequences. What the engine cannot honour is refused with an
 * {@link UnsupportedFeatureException} (tools, JSON response formats, frequency/presence penalties, non-text content)
 * rather than ignored.
 *
 * @param messages      the conversation, rendered later with the model's chat template
 * @param params        the engine's generation parameters
 * @param stopSequences texts that end the answer (not included in it)
 */
record EngineRequest(List<ChatMessage> messages, GenerationParams params, List<String> stopSequences) {

    /** The request with {@code generator}'s defaults under its parameters, checked and translated. */
    static EngineRequest translate(ChatRequest request, InProcessGenerator generator) {
        ChatRequestParameters p = generator.defaults().asChatParameters(generator.modelName());
        if (request.parameters() != null) p = p.overrideWith(request.parameters());
        refuseUnsupported(p, generator.modelName());
        GenerationDefaults d = generator.defaults();
        GenerationParams params = d.params(p.temperature(), p.topP(), p.topK(), p.maxOutputTokens(), generator.nextSeed());
        return new EngineRequest(messages(request.messages()), params, d.stops(p.stopSequences()));
    }

    private static void refuseUnsupported(ChatRequestParameters p, String modelName) {
        if (p.toolSpecifications() != null && !p.toolSpecifications().isEmpty())
            throw new UnsupportedFeatureException("tools are not supported by PowerInfer4j models (the engine has no tool-call parsing)");
        if (p.toolChoice() == ToolChoice.REQUIRED)
            throw new UnsupportedFeatureException("toolChoice REQUIRED is not supported by PowerInfer4j models (no tools)");
        if (p.responseFormat() != null && p.responseFormat().type() == ResponseFormatType.JSON)
            throw new UnsupportedFeatureException("JSON response formats are not supported by PowerInfer4j models (no constrained decoding)");
        if (p.frequencyPenalty() != null && p.frequencyPenalty() != 0)
            throw new UnsupportedFeatureException("frequencyPenalty is not supported by PowerInfer4j models; use the builder's repeatPenalty (llama.cpp's)");
        if (p.presencePenalty() != null && p.presencePenalty() != 0)
            throw new UnsupportedFeatureException("presencePenalty is not supported by PowerInfer4j models; use the builder's repeatPenalty (llama.cpp's)");
        if (p.modelName() != null && !p.modelName().equals(modelName))
            throw new IllegalArgumentException("the request asks for model '" + p.modelName() + "', but this model runs '" + modelName + "'");
    }

    /** System, user and assistant turns as engine messages; tool turns, tool calls and non-text content are refused. */
    static List<ChatMessage> messages(List<dev.langchain4j.data.message.ChatMessage> in) {
        if (in == null || in.isEmpty()) throw new IllegalArgumentException("the chat request has no messages");
        List<ChatMessage> out = new ArrayList<>(in.size());
        for (dev.langchain4j.data.message.ChatMessage m : in) {
            out.add(switch (m) {
                case SystemMessage s -> ChatMessage.system(s.text());
                case UserMessage u -> ChatMessage.user(text(u));
                case AiMessage a -> {
                    if (a.hasToolExecutionRequests())
                        throw new UnsupportedFeatureException("assistant messages with tool calls are not supported by PowerInfer4j models");
                    yield ChatMessage.assistant(a.text() != null ? a.text() : "");
                }
                default -> throw new UnsupportedFeatureException(m.type() + " messages are not supported by PowerInfer4j models "
                        + "(system, user and assistant text only)");
            });
        }
        return out;
    }

    /** The user's text: a single text, or several text parts joined by newlines (as the OpenAI server does). */
    private static String text(UserMessage u) {
        if (u.hasSingleText()) return u.singleText();
        StringBuilder sb = new StringBuilder();
        for (Content c : u.contents()) {
            if (!(c instanceof TextContent t))
                throw new UnsupportedFeatureException(c.type() + " content is not supported by PowerInfer4j models (text only)");
            if (!sb.isEmpty()) sb.append('\n');
            sb.append(t.text());
        }
        return sb.toString();
    }
}
