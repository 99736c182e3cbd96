package org.powerinfer4j.langchain4j;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.langchain4j.agent.tool.ToolExecutionRequest;
import dev.langchain4j.agent.tool.ToolSpecification;
import dev.langchain4j.data.message.AiMessage;
import dev.langchain4j.data.message.Content;
import dev.langchain4j.data.message.SystemMessage;
import dev.langchain4j.data.message.TextContent;
import dev.langchain4j.data.message.ToolExecutionResultMessage;
import dev.langchain4j.data.message.UserMessage;
import dev.langchain4j.exception.UnsupportedFeatureException;
import dev.langchain4j.internal.JsonSchemaElementUtils;
import dev.langchain4j.model.chat.request.ChatRequest;
import dev.langchain4j.model.chat.request.ChatRequestParameters;
import dev.langchain4j.model.chat.request.ResponseFormat;
import dev.langchain4j.model.chat.request.ResponseFormatType;
import java.util.ArrayList;
import java.util.List;
import org.powerinfer4j.engine.api.GenerationParams;
import org.powerinfer4j.engine.grammar.Grammar;
import org.powerinfer4j.engine.grammar.GrammarException;
import org.powerinfer4j.engine.tokenizer.ChatMessage;
import org.powerinfer4j.engine.tools.ToolCalling;
import org.powerinfer4j.engine.tools.ToolChoice;
import org.powerinfer4j.engine.tools.ToolDefinition;

/**
 * A LangChain4j {@link ChatRequest} as the engine runs it: the conversation as engine chat messages (tool calls and
 * tool results included), the generation parameters, the stop sequences, the tools and the response format. Tools
 * and JSON response formats run as grammar-constrained decoding ({@link ToolCalling}); what the engine cannot
 * honour is refused with an {@link UnsupportedFeatureException} (frequency/presence penalties, non-text content)
 * rather than ignored, and a schema outside the supported subset with an {@link IllegalArgumentException}.
 *
 * @param messages       the conversation, rendered later with the model's chat template
 * @param params         the engine's generation parameters
 * @param stopSequences  texts that end the answer (not included in it)
 * @param tools          the tools offered (empty: none, or toolChoice NONE)
 * @param toolChoice     AUTO (a call or an answer) or REQUIRED (a call)
 * @param responseSchema the answer's JSON schema ({@code {"type":"object"}} for JSON without one), or null for text
 */
record EngineRequest(List<ChatMessage> messages, GenerationParams params, List<String> stopSequences, List<ToolDefinition> tools,
                     ToolChoice toolChoice, JsonNode responseSchema) {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** What the generator runs: the prompt, the parameters with the answer's grammar, and whether to parse tool calls back. */
    record Call(int[] prompt, GenerationParams params, List<String> stopSequences, boolean toolCalls) {}

    /** The request with {@code generator}'s defaults under its parameters, checked and translated. */
    static EngineRequest translate(ChatRequest request, InProcessGenerator generator) {
        ChatRequestParameters p = generator.defaults().asChatParameters(generator.modelName());
        if (request.parameters() != null) p = p.overrideWith(request.parameters());
        refuseUnsupported(p, generator.modelName());
        GenerationDefaults d = generator.defaults();
        GenerationParams params = d.params(p.temperature(), p.topP(), p.topK(), p.maxOutputTokens(), generator.nextSeed());
        List<ToolDefinition> tools = new ArrayList<>();
        if (p.toolSpecifications() != null && p.toolChoice() != dev.langchain4j.model.chat.request.ToolChoice.NONE)
            for (ToolSpecification t : p.toolSpecifications()) tools.add(tool(t));
        if (tools.isEmpty() && p.toolChoice() == dev.langchain4j.model.chat.request.ToolChoice.REQUIRED)
            throw new IllegalArgumentException("toolChoice REQUIRED needs toolSpecifications");
        ToolChoice choice = p.toolChoice() == dev.langchain4j.model.chat.request.ToolChoice.REQUIRED ? ToolChoice.REQUIRED : ToolChoice.AUTO;
        return new EngineRequest(messages(request.messages()), params, d.stops(p.stopSequences()), tools, choice, responseSchema(p.responseFormat()));
    }

    /** The rendered prompt and the parameters it runs with; a grammar decides where a constrained answer ends, so stop sequences are dropped. */
    Call prepare(InProcessGenerator generator) {
        try {
            if (tools.isEmpty()) {
                int[] prompt = generator.chatPrompt(messages);
                if (responseSchema == null) return new Call(prompt, params, stopSequences, false);
                return new Call(prompt, params.withGrammar(Grammar.jsonSchema(responseSchema)), List.of(), false);
            }
            ToolCalling.Prepared p = ToolCalling.prepare(generator.model().chatTemplate(), generator.model().tokenizer(), messages, tools, toolChoice,
                    true, responseSchema);
            return new Call(p.prompt(), params.withGrammar(p.grammar()), List.of(), true);
        } catch (GrammarException e) {
            throw new IllegalArgumentException("the request's JSON schema is not supported: " + e.getMessage(), e);
        }
    }

    private static ToolDefinition tool(ToolSpecification t) {
        JsonNode parameters = t.parameters() == null ? null : JSON.valueToTree(JsonSchemaElementUtils.toMap(t.parameters()));
        try {
            return new ToolDefinition(t.name(), t.description(), parameters);
        } catch (GrammarException e) {
            throw new IllegalArgumentException(e.getMessage(), e);
        }
    }

    /** JSON with a schema: the schema; JSON without one: any object; text: null. */
    private static JsonNode responseSchema(ResponseFormat f) {
        if (f == null || f.type() != ResponseFormatType.JSON) return null;
        if (f.jsonSchema() == null || f.jsonSchema().rootElement() == null) return JSON.createObjectNode().put("type", "object");
        return JSON.valueToTree(JsonSchemaElementUtils.toMap(f.jsonSchema().rootElement()));
    }

    private static void refuseUnsupported(ChatRequestParameters p, String modelName) {
        if (p.frequencyPenalty() != null && p.frequencyPenalty() != 0)
            throw new UnsupportedFeatureException("frequencyPenalty is not supported by PowerInfer4j models; use the builder's repeatPenalty (llama.cpp's)");
        if (p.presencePenalty() != null && p.presencePenalty() != 0)
            throw new UnsupportedFeatureException("presencePenalty is not supported by PowerInfer4j models; use the builder's repeatPenalty (llama.cpp's)");
        if (p.modelName() != null && !p.modelName().equals(modelName))
            throw new IllegalArgumentException("the request asks for model '" + p.modelName() + "', but this model runs '" + modelName + "'");
    }

    /** System, user, assistant (with tool calls) and tool-result turns as engine messages; non-text content is refused. */
    static List<ChatMessage> messages(List<dev.langchain4j.data.message.ChatMessage> in) {
        if (in == null || in.isEmpty()) throw new IllegalArgumentException("the chat request has no messages");
        List<ChatMessage> out = new ArrayList<>(in.size());
        for (dev.langchain4j.data.message.ChatMessage m : in) {
            out.add(switch (m) {
                case SystemMessage s -> ChatMessage.system(s.text());
                case UserMessage u -> ChatMessage.user(text(u));
                case AiMessage a -> {
                    String text = a.text() != null ? a.text() : "";
                    if (!a.hasToolExecutionRequests()) yield ChatMessage.assistant(text);
                    List<ChatMessage.ToolCall> calls = new ArrayList<>();
                    for (ToolExecutionRequest r : a.toolExecutionRequests())
                        calls.add(new ChatMessage.ToolCall(r.id(), r.name(), r.arguments() == null ? "{}" : r.arguments()));
                    yield ChatMessage.assistant(text, calls);
                }
                case ToolExecutionResultMessage r -> ChatMessage.tool(r.id(), r.toolName(), r.text() == null ? "" : r.text());
                default -> throw new UnsupportedFeatureException(m.type() + " messages are not supported by PowerInfer4j models "
                        + "(system, user, assistant and tool results only)");
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
