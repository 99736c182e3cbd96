package org.powerinfer4j.cli.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.powerinfer4j.cli.server.ServerTestSupport.*;

import com.fasterxml.jackson.databind.JsonNode;
import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.core.JsonValue;
import com.openai.core.http.StreamResponse;
import com.openai.errors.BadRequestException;
import com.openai.models.FunctionDefinition;
import com.openai.models.FunctionParameters;
import com.openai.models.ResponseFormatJsonObject;
import com.openai.models.ResponseFormatJsonSchema;
import com.openai.models.chat.completions.ChatCompletion;
import com.openai.models.chat.completions.ChatCompletionChunk;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import com.openai.models.chat.completions.ChatCompletionMessageFunctionToolCall;
import com.openai.models.chat.completions.ChatCompletionMessageToolCall;
import com.openai.models.chat.completions.ChatCompletionNamedToolChoice;
import com.openai.models.chat.completions.ChatCompletionToolChoiceOption;
import com.openai.models.chat.completions.ChatCompletionToolMessageParam;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.powerinfer4j.engine.api.Model;

/**
 * Tool calling and structured output through the official OpenAI Java SDK (and raw HTTP for the error paths):
 * calls come back parsed in {@code tool_calls} with arguments that parse and fit the function's schema, structured
 * content parses and conforms, streamed or not. stories260K writes stories, so only structure is asserted.
 */
@Timeout(180)
class ServerToolsTest {
    static Model model;
    static OpenAiServer server;
    static OpenAIClient openai;

    static final Map<String, Object> WEATHER = Map.of("type", "object",
            "properties", Map.of("city", Map.of("type", "string"), "days", Map.of("type", "integer"),
                    "unit", Map.of("enum", List.of("celsius", "fahrenheit"))),
            "required", List.of("city", "unit"), "additionalProperties", false);
    static final Map<String, Object> STORY = Map.of("type", "object",
            "properties", Map.of("title", Map.of("type", "string", "maxLength", 40), "happy", Map.of("type", "boolean"),
                    "characters", Map.of("type", "array", "items", Map.of("type", "string", "maxLength", 20), "minItems", 1, "maxItems", 3)),
            "required", List.of("title", "happy", "characters"), "additionalProperties", false);

    @BeforeAll
    static void start() throws Exception {
        model = openModel(2048);   // tool descriptions make long prompts
        server = OpenAiServer.start(model, config().withParallel(2, 8));
        openai = OpenAIOkHttpClient.builder().baseUrl(server.baseUri() + "/v1").apiKey("none").maxRetries(0).timeout(Duration.ofSeconds(60)).build();
    }

    @AfterAll
    static void stop() {
        if (openai != null) openai.close();
        if (server != null) server.close();
        if (model != null) model.close();
    }

    static FunctionParameters parameters(Map<String, Object> schema) {
        Map<String, JsonValue> m = new HashMap<>();
        schema.forEach((k, v) -> m.put(k, JsonValue.from(v)));
        return FunctionParameters.builder().additionalProperties(m).build();
    }

    static ChatCompletionCreateParams.Builder weatherRequest() {
        return ChatCompletionCreateParams.builder().model(MODEL_ID).addUserMessage("What is the weather in Paris?").temperature(0.0)
                .maxCompletionTokens(120)
                .addFunctionTool(FunctionDefinition.builder().name("get_weather").description("Current weather of a city").parameters(parameters(WEATHER)).build())
                .addFunctionTool(FunctionDefinition.builder().name("get_time").description("Local time").build());
    }

    static void assertWeatherArguments(String arguments) throws Exception {
        JsonNode a = JSON.readTree(arguments);
        assertThat(a.isObject()).isTrue();
        assertThat(a.get("city").isTextual()).isTrue();
        assertThat(a.get("unit").asText()).isIn("celsius", "fahrenheit");
        if (a.has("days")) assertThat(a.get("days").isIntegralNumber()).isTrue();
        assertThat(a.size()).isLessThanOrEqualTo(3);
    }

    @Test
    void requiredToolChoiceComesBackAsParsedToolCalls() throws Exception {
        ChatCompletion c = openai.chat().completions().create(weatherRequest()
                .toolChoice(ChatCompletionToolChoiceOption.Auto.REQUIRED).parallelToolCalls(false).build());
        c.validate();
        ChatCompletion.Choice choice = c.choices().getFirst();
        assertThat(choice.finishReason()).isEqualTo(ChatCompletion.Choice.FinishReason.TOOL_CALLS);
        assertThat(choice.message().content()).isEmpty();
        List<ChatCompletionMessageToolCall> calls = choice.message().toolCalls().orElseThrow();
        assertThat(calls).hasSize(1);
        ChatCompletionMessageFunctionToolCall call = calls.getFirst().asFunction();
        assertThat(call.id()).startsWith("call_");
        assertThat(call.function().name()).isIn("get_weather", "get_time");
        if (call.function().name().equals("get_weather")) assertWeatherArguments(call.function().arguments());
        else assertThat(JSON.readTree(call.function().arguments()).isObject()).isTrue();

        // the call and its result go back into the conversation (tool_calls on the assistant turn, role tool)
        ChatCompletion next = openai.chat().completions().create(weatherRequest().addMessage(choice.message())
                .addMessage(ChatCompletionToolMessageParam.builder().toolCallId(call.id()).content("21 degrees and sunny").build()).build());
        next.validate();
        ChatCompletion.Choice second = next.choices().getFirst();
        // auto: either more calls or an answer, never anything else
        if (second.finishReason().equals(ChatCompletion.Choice.FinishReason.TOOL_CALLS)) assertThat(second.message().toolCalls().orElseThrow()).isNotEmpty();
        else assertThat(second.message().toolCalls().orElse(List.of())).isEmpty();
    }

    @Test
    void aNamedFunctionIsTheOneCalled() throws Exception {
        ChatCompletion c = openai.chat().completions().create(weatherRequest()
                .toolChoice(ChatCompletionNamedToolChoice.builder().function(ChatCompletionNamedToolChoice.Function.builder().name("get_weather").build()).build())
                .build());
        List<ChatCompletionMessageToolCall> calls = c.choices().getFirst().message().toolCalls().orElseThrow();
        assertThat(calls).isNotEmpty().allSatisfy(call -> assertThat(call.asFunction().function().name()).isEqualTo("get_weather"));
        for (ChatCompletionMessageToolCall call : calls) assertWeatherArguments(call.asFunction().function().arguments());
    }

    @Test
    void toolCallsStreamAsDeltas() throws Exception {
        StringBuilder content = new StringBuilder();
        Map<Long, String> names = new HashMap<>(), arguments = new HashMap<>();
        ChatCompletionChunk.Choice.FinishReason[] finish = {null};
        try (StreamResponse<ChatCompletionChunk> s = openai.chat().completions().createStreaming(weatherRequest()
                .toolChoice(ChatCompletionToolChoiceOption.Auto.REQUIRED).build())) {
            s.stream().forEach(chunk -> {
                for (ChatCompletionChunk.Choice ch : chunk.choices()) {
                    ch.delta().content().ifPresent(content::append);
                    for (ChatCompletionChunk.Choice.Delta.ToolCall tc : ch.delta().toolCalls().orElse(List.of())) {
                        tc.function().flatMap(ChatCompletionChunk.Choice.Delta.ToolCall.Function::name).ifPresent(n -> names.merge(tc.index(), n, String::concat));
                        tc.function().flatMap(ChatCompletionChunk.Choice.Delta.ToolCall.Function::arguments).ifPresent(a -> arguments.merge(tc.index(), a, String::concat));
                    }
                    ch.finishReason().ifPresent(f -> finish[0] = f);
                }
            });
        }
        assertThat(finish[0]).isEqualTo(ChatCompletionChunk.Choice.FinishReason.TOOL_CALLS);
        assertThat(content.toString()).isEmpty();
        assertThat(names).isNotEmpty();
        for (long i : names.keySet()) {
            if (names.get(i).equals("get_weather")) assertWeatherArguments(arguments.get(i));
            else assertThat(names.get(i)).isEqualTo("get_time");
        }
    }

    @Test
    void jsonSchemaContentParsesAndConforms() throws Exception {
        for (double temperature : new double[] {0.0, 1.0}) {
            ChatCompletion c = openai.chat().completions().create(ChatCompletionCreateParams.builder().model(MODEL_ID)
                    .addUserMessage("Tell me a story as JSON.").temperature(temperature).seed(7).maxCompletionTokens(150)
                    .responseFormat(ResponseFormatJsonSchema.builder().jsonSchema(ResponseFormatJsonSchema.JsonSchema.builder().name("story").strict(true)
                            .schema(ResponseFormatJsonSchema.JsonSchema.Schema.builder().additionalProperties(values(STORY)).build()).build()).build())
                    .build());
            c.validate();
            assertStory(c.choices().getFirst().message().content().orElseThrow());
            assertThat(c.choices().getFirst().message().toolCalls().orElse(List.of())).isEmpty();
        }
    }

    @Test
    void streamedJsonSchemaContentParsesToo() throws Exception {
        String body = json("model", MODEL_ID, "messages", user("A story, please"), "temperature", 0, "max_tokens", 150, "stream", true,
                "response_format", Map.of("type", "json_schema", "json_schema", Map.of("name", "story", "schema", STORY)));
        Sse sse = stream(server.baseUri().resolve("/v1/chat/completions"), body);
        assertThat(sse.status()).isEqualTo(200);
        assertThat(sse.events().size()).as("content streams in pieces").isGreaterThan(3);
        assertStory(sse.text());
    }

    /** A Java type the SDK derives the schema from (victools) and parses the answer back into. */
    record Story(String title, boolean happy, List<String> characters) {}

    @Test
    void theSdksStructuredOutputParsesIntoARecord() {
        var c = openai.chat().completions().create(ChatCompletionCreateParams.builder().model(MODEL_ID).addUserMessage("A story as JSON")
                .temperature(0.0).maxCompletionTokens(200).responseFormat(Story.class).build());
        Story story = c.choices().getFirst().message().content().orElseThrow();
        assertThat(story.title()).isNotNull();
        assertThat(story.characters()).isNotNull();
    }

    @Test
    void jsonObjectModeGivesAnObject() throws Exception {
        ChatCompletion c = openai.chat().completions().create(ChatCompletionCreateParams.builder().model(MODEL_ID)
                .addUserMessage("JSON please").temperature(0.0).maxCompletionTokens(60).responseFormat(ResponseFormatJsonObject.builder().build()).build());
        assertThat(JSON.readTree(c.choices().getFirst().message().content().orElseThrow()).isObject()).isTrue();
        Reply r = post(server, "/v1/completions", json("model", MODEL_ID, "prompt", "Once", "max_tokens", 60, "temperature", 0,
                "response_format", Map.of("type", "json_object")));
        assertThat(JSON.readTree(r.json().at("/choices/0/text").asText()).isObject()).isTrue();
    }

    static Map<String, JsonValue> values(Map<String, Object> schema) {
        Map<String, JsonValue> m = new HashMap<>();
        schema.forEach((k, v) -> m.put(k, JsonValue.from(v)));
        return m;
    }

    static void assertStory(String content) throws Exception {
        JsonNode s = JSON.readTree(content);
        assertThat(s.get("title").isTextual()).as(content).isTrue();
        assertThat(s.get("title").asText().codePointCount(0, s.get("title").asText().length())).isLessThanOrEqualTo(40);
        assertThat(s.get("happy").isBoolean()).isTrue();
        assertThat(s.get("characters").isArray()).isTrue();
        assertThat(s.get("characters").size()).isBetween(1, 3);
        for (JsonNode ch : s.get("characters")) assertThat(ch.isTextual()).isTrue();
        assertThat(s.size()).isEqualTo(3);
    }

    @Test
    void badSchemasAndChoicesAre400s() {
        assertThatThrownBy(() -> openai.chat().completions().create(ChatCompletionCreateParams.builder().model(MODEL_ID).addUserMessage("x")
                .responseFormat(ResponseFormatJsonSchema.builder().jsonSchema(ResponseFormatJsonSchema.JsonSchema.builder().name("s")
                        .schema(ResponseFormatJsonSchema.JsonSchema.Schema.builder().additionalProperties(values(Map.of("type", "string", "pattern", "^a+$"))).build())
                        .build()).build()).build()))
                .isInstanceOf(BadRequestException.class).hasMessageContaining("unsupported JSON schema keyword 'pattern' at #");
        Reply r = post(server, "/v1/chat/completions", json("messages", user("x"), "tools",
                List.of(Map.of("type", "function", "function", Map.of("name", "f", "parameters", Map.of("type", "object")))),
                "tool_choice", Map.of("type", "function", "function", Map.of("name", "g"))));
        assertThat(r.status()).isEqualTo(400);
        assertThat(r.json().at("/error/message").asText()).contains("'g', which is not among the tools");
        assertThat(r.json().at("/error/param").asText()).isEqualTo("tool_choice");
        assertThat(post(server, "/v1/chat/completions", json("messages", user("x"), "tool_choice", "required")).json().at("/error/message").asText())
                .contains("no 'tools'");
        assertThat(post(server, "/v1/chat/completions", json("messages", user("x"), "tool_choice", "sometimes",
                "tools", List.of(Map.of("type", "function", "function", Map.of("name", "f"))))).status()).isEqualTo(400);
        Reply badTool = post(server, "/v1/chat/completions", json("messages", user("x"), "tools",
                List.of(Map.of("type", "function", "function", Map.of("name", "f", "parameters", Map.of("type", "object", "properties",
                        Map.of("n", Map.of("type", "integer", "minimum", 1))))))));
        assertThat(badTool.status()).isEqualTo(400);
        assertThat(badTool.json().at("/error/message").asText()).contains("'minimum' at #/properties/n").contains("tools[0]");
        assertThat(post(server, "/v1/chat/completions", json("messages", user("x"), "response_format", Map.of("type", "xml"))).status()).isEqualTo(400);
        Reply wrapped = post(server, "/v1/chat/completions", json("messages", user("x"), "tools", List.of(Map.of("type", "function", "function", Map.of("name", "f"))),
                "response_format", Map.of("type", "json_schema", "json_schema", Map.of("name", "s", "schema", Map.of("not", Map.of())))));
        assertThat(wrapped.status()).isEqualTo(400);
        assertThat(wrapped.json().at("/error/param").asText()).isEqualTo("response_format");
        assertThat(wrapped.json().at("/error/message").asText()).contains("unsupported JSON schema keyword 'not'");
        assertThat(post(server, "/v1/chat/completions", json("messages", List.of(Map.of("role", "tool", "content", "1")))).json().at("/error/message").asText())
                .contains("tool_call_id");
    }
}
