package org.powerinfer4j.langchain4j;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.langchain4j.agent.tool.P;
import dev.langchain4j.agent.tool.ReturnBehavior;
import dev.langchain4j.agent.tool.Tool;
import dev.langchain4j.agent.tool.ToolExecutionRequest;
import dev.langchain4j.agent.tool.ToolSpecification;
import dev.langchain4j.data.message.ToolExecutionResultMessage;
import dev.langchain4j.data.message.UserMessage;
import dev.langchain4j.model.chat.request.ChatRequest;
import dev.langchain4j.model.chat.request.ChatRequestParameters;
import dev.langchain4j.model.chat.request.ResponseFormat;
import dev.langchain4j.model.chat.request.ToolChoice;
import dev.langchain4j.model.chat.request.json.JsonObjectSchema;
import dev.langchain4j.model.chat.response.ChatResponse;
import dev.langchain4j.model.chat.response.CompleteToolCall;
import dev.langchain4j.model.chat.response.StreamingChatResponseHandler;
import dev.langchain4j.model.output.FinishReason;
import dev.langchain4j.service.AiServices;
import dev.langchain4j.service.Result;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.powerinfer4j.engine.api.Model;

/**
 * Tools and structured output over the in-process model: LangChain4j's {@code @Tool} methods through
 * {@code AiServices}, tool specifications in a plain {@code ChatRequest}, streamed tool calls, and AiServices that
 * return a record from a JSON schema. stories260K writes stories, so the tests check structure and types, not meaning.
 */
class ToolsAndStructuredOutputTest {
    static final ObjectMapper JSON = new ObjectMapper();
    static Model model;
    static PowerInferChatModel chat;

    @BeforeAll
    static void open() {
        model = TestModels.openStories();
        chat = PowerInferChatModel.builder().model(model).temperature(0.0).maxTokens(150).build();
    }

    @AfterAll
    static void close() {
        chat.close();
        model.close();
    }

    static final ToolSpecification WEATHER = ToolSpecification.builder().name("get_weather").description("The weather in a city")
            .parameters(JsonObjectSchema.builder().addStringProperty("city").addIntegerProperty("days").required("city").build()).build();

    @Test
    void aRequiredToolCallComesBackAsAToolExecutionRequest() throws Exception {
        ChatResponse r = chat.chat(ChatRequest.builder().messages(UserMessage.from("Weather in Paris?"))
                .parameters(ChatRequestParameters.builder().toolSpecifications(WEATHER).toolChoice(ToolChoice.REQUIRED).build()).build());
        assertThat(r.finishReason()).isEqualTo(FinishReason.TOOL_EXECUTION);
        assertThat(r.aiMessage().toolExecutionRequests()).isNotEmpty();
        for (ToolExecutionRequest call : r.aiMessage().toolExecutionRequests()) {
            assertThat(call.name()).isEqualTo("get_weather");
            assertThat(call.id()).startsWith("call_");
            JsonNode args = JSON.readTree(call.arguments());
            assertThat(args.get("city").isTextual()).isTrue();
            if (args.has("days")) assertThat(args.get("days").isIntegralNumber()).isTrue();
        }
        // the call and its result in the history: the next answer is a call again or text, under AUTO
        ChatResponse next = chat.chat(ChatRequest.builder().messages(UserMessage.from("Weather in Paris?"), r.aiMessage(),
                        ToolExecutionResultMessage.from(r.aiMessage().toolExecutionRequests().getFirst(), "sunny"))
                .parameters(ChatRequestParameters.builder().toolSpecifications(WEATHER).build()).build());
        assertThat(next.finishReason() == FinishReason.TOOL_EXECUTION ? next.aiMessage().hasToolExecutionRequests() : next.aiMessage().text() != null).isTrue();
    }

    static final class Calculator {
        final List<String> calls = new CopyOnWriteArrayList<>();

        @Tool(value = "Adds two integers", returnBehavior = ReturnBehavior.IMMEDIATE)
        int add(@P("the first number") int a, @P("the second number") int b) {
            calls.add(a + "+" + b);
            return a + b;
        }
    }

    interface Assistant {
        Result<String> ask(String question);
    }

    @Test
    void anAiServiceCallsAToolMethodWithTypedArguments() {
        Calculator calculator = new Calculator();
        try (PowerInferChatModel required = PowerInferChatModel.builder().model(model).temperature(0.0).maxTokens(80).build()) {
            Assistant assistant = AiServices.builder(Assistant.class).chatModel(new RequiredTools(required)).tools(calculator).build();
            Result<String> result = assistant.ask("What is 2 plus 3?");
            // the @Tool method ran with the integers the model wrote (IMMEDIATE: its result is the answer)
            assertThat(calculator.calls).hasSize(result.toolExecutions().size()).isNotEmpty();
            assertThat(result.toolExecutions().getFirst().request().name()).isEqualTo("add");
            String[] ab = calculator.calls.getFirst().split("\\+");
            assertThat(result.toolExecutions().getFirst().result()).isEqualTo(String.valueOf(Integer.parseInt(ab[0]) + Integer.parseInt(ab[1])));
        }
    }

    /** The chat model with toolChoice REQUIRED on every request that has tools (a tiny story model rarely chooses to call one). */
    record RequiredTools(PowerInferChatModel model) implements dev.langchain4j.model.chat.ChatModel {
        @Override
        public ChatResponse doChat(ChatRequest request) {
            ChatRequestParameters p = request.parameters();
            if (p.toolSpecifications() != null && !p.toolSpecifications().isEmpty())
                request = request.toBuilder().parameters(p.overrideWith(ChatRequestParameters.builder().toolChoice(ToolChoice.REQUIRED).build())).build();
            return model.chat(request);
        }
    }

    record Story(String title, boolean happy, List<String> characters, int year) {}

    interface Writer {
        Story write(String topic);
    }

    @Test
    void aStructuredOutputAiServiceReturnsARecord() {
        // JSON schema capability: AiServices sends the record's schema as the response format, the grammar holds the model to it
        assertThat(chat.supportedCapabilities()).contains(dev.langchain4j.model.chat.Capability.RESPONSE_FORMAT_JSON_SCHEMA);
        // LangChain4j makes every field optional (its schema has "required": []), so any subset of them may come back
        Story story = AiServices.create(Writer.class, chat).write("a cat");
        assertThat(story).isNotNull();
    }

    @Test
    void jsonWithoutASchemaIsAnObject() throws Exception {
        ChatResponse r = chat.chat(ChatRequest.builder().messages(UserMessage.from("JSON please"))
                .parameters(ChatRequestParameters.builder().responseFormat(ResponseFormat.JSON).maxOutputTokens(60).build()).build());
        assertThat(JSON.readTree(r.aiMessage().text()).isObject()).isTrue();
    }

    @Test
    void streamedToolCallsArriveComplete() throws Exception {
        List<CompleteToolCall> calls = new ArrayList<>();
        List<String> partials = new ArrayList<>();
        ChatResponse[] done = {null};
        try (PowerInferStreamingChatModel streaming = PowerInferStreamingChatModel.builder().model(model).temperature(0.0).maxTokens(120).build()) {
            streaming.chat(ChatRequest.builder().messages(UserMessage.from("Weather in Rome?"))
                    .parameters(ChatRequestParameters.builder().toolSpecifications(WEATHER).toolChoice(ToolChoice.REQUIRED).build()).build(),
                    new StreamingChatResponseHandler() {
                        @Override public void onPartialResponse(String text) { partials.add(text); }
                        @Override public void onCompleteToolCall(CompleteToolCall call) { calls.add(call); }
                        @Override public void onCompleteResponse(ChatResponse r) { done[0] = r; }
                        @Override public void onError(Throwable error) { throw new AssertionError(error); }
                    });
        }
        assertThat(partials).isEmpty();
        assertThat(done[0].finishReason()).isEqualTo(FinishReason.TOOL_EXECUTION);
        assertThat(calls).extracting(c -> c.toolExecutionRequest()).containsExactlyElementsOf(done[0].aiMessage().toolExecutionRequests());
        assertThat(JSON.readTree(calls.getFirst().toolExecutionRequest().arguments()).get("city").isTextual()).isTrue();
    }
}
