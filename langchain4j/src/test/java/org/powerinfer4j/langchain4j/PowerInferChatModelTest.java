package org.powerinfer4j.langchain4j;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.langchain4j.data.message.AiMessage;
import dev.langchain4j.data.message.ImageContent;
import dev.langchain4j.data.message.SystemMessage;
import dev.langchain4j.data.message.TextContent;
import dev.langchain4j.data.message.UserMessage;
import dev.langchain4j.exception.UnsupportedFeatureException;
import dev.langchain4j.model.chat.listener.ChatModelErrorContext;
import dev.langchain4j.model.chat.listener.ChatModelListener;
import dev.langchain4j.model.chat.listener.ChatModelRequestContext;
import dev.langchain4j.model.chat.listener.ChatModelResponseContext;
import dev.langchain4j.model.chat.request.ChatRequest;
import dev.langchain4j.model.chat.request.ChatRequestParameters;
import dev.langchain4j.model.chat.request.ResponseFormat;
import dev.langchain4j.model.chat.response.ChatResponse;
import dev.langchain4j.model.output.FinishReason;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.powerinfer4j.engine.api.DecodeBatching;
import org.powerinfer4j.engine.api.GenerationResult;
import org.powerinfer4j.engine.api.Model;
import org.powerinfer4j.engine.api.ModelOptions;
import org.powerinfer4j.engine.tokenizer.ChatMessage;

class PowerInferChatModelTest {
    private static final String SYSTEM = "You tell short stories.";
    private static final String USER = "Tell me about Lily.";

    private static Model model;
    private static PowerInferChatModel greedy;

    @BeforeAll
    static void open() {
        model = TestModels.openStories();
        greedy = PowerInferChatModel.builder().model(model).temperature(0.0).maxTokens(48).build();
    }

    @AfterAll
    static void close() {
        greedy.close();
        model.close();
    }

    private static ChatRequest request(ChatRequestParameters parameters) {
        return ChatRequest.builder().messages(SystemMessage.from(SYSTEM), UserMessage.from(USER)).parameters(parameters).build();
    }

    private static GenerationResult engineAnswer(int maxTokens) {
        return TestModels.engineGreedyChat(model, List.of(ChatMessage.system(SYSTEM), ChatMessage.user(USER)), maxTokens);
    }

    @Test
    void greedyChatIsTheEnginesOwnGenerationForTheRenderedPrompt() {
        assertThat(model.chatTemplate().name()).isEqualTo("plain");   // stories260K has no template; system turns are supported
        GenerationResult expected = engineAnswer(48);
        ChatResponse r = greedy.chat(ChatRequest.builder().messages(SystemMessage.from(SYSTEM), UserMessage.from(USER)).build());
        assertThat(r.aiMessage().text()).isNotBlank().isEqualTo(expected.text());
        assertThat(r.tokenUsage().inputTokenCount()).isEqualTo(expected.promptTokens().length);
        assertThat(r.tokenUsage().outputTokenCount()).isEqualTo(TestModels.outputTokens(model, expected));
        assertThat(r.finishReason()).isEqualTo(expected.stopReason().equals("eos") ? FinishReason.STOP : FinishReason.LENGTH);
        assertThat(r.modelName()).isEqualTo("stories260K");
    }

    @Test
    void assistantTurnsArePartOfTheRenderedConversation() {
        List<ChatMessage> turns = List.of(ChatMessage.user(USER), ChatMessage.assistant("Lily was a girl."), ChatMessage.user("What next?"));
        GenerationResult expected = TestModels.engineGreedyChat(model, turns, 48);
        ChatResponse r = greedy.chat(UserMessage.from(USER), AiMessage.from("Lily was a girl."), UserMessage.from("What next?"));
        assertThat(r.aiMessage().text()).isEqualTo(expected.text());
        assertThat(r.tokenUsage().inputTokenCount()).isEqualTo(expected.promptTokens().length);
    }

    @Test
    void maxOutputTokensEndsWithLengthAndCountsTheTokens() {
        ChatResponse r = greedy.chat(request(ChatRequestParameters.builder().maxOutputTokens(5).build()));
        assertThat(r.finishReason()).isEqualTo(FinishReason.LENGTH);
        assertThat(r.tokenUsage().outputTokenCount()).isEqualTo(5);
        assertThat(r.tokenUsage().totalTokenCount()).isEqualTo(r.tokenUsage().inputTokenCount() + 5);
        assertThat(r.aiMessage().text()).isEqualTo(engineAnswer(5).text());
    }

    @Test
    void stopSequenceEndsTheAnswerBeforeIt() {
        String full = engineAnswer(48).text();
        String stop = full.substring(full.length() / 2, full.length() / 2 + 3);
        ChatResponse r = greedy.chat(request(ChatRequestParameters.builder().stopSequences(List.of(stop)).build()));
        assertThat(r.aiMessage().text()).isEqualTo(full.substring(0, full.indexOf(stop))).doesNotContain(stop);
        assertThat(r.finishReason()).isEqualTo(FinishReason.STOP);
        assertThat(r.tokenUsage().outputTokenCount()).isLessThan(48);
        try (PowerInferChatModel withStop = PowerInferChatModel.builder().model(model).temperature(0.0).maxTokens(48)
                .stopSequences(List.of(stop)).build()) {
            assertThat(withStop.chat(request(ChatRequestParameters.builder().build())).aiMessage().text()).isEqualTo(r.aiMessage().text());
        }
    }

    @Test
    void builderDefaultsAreReportedAndOverriddenPerRequest() {
        ChatRequestParameters d = greedy.defaultRequestParameters();
        assertThat(d.temperature()).isZero();
        assertThat(d.maxOutputTokens()).isEqualTo(48);
        assertThat(d.topK()).isEqualTo(40);   // the engine's default
        ChatResponse r = greedy.chat(request(ChatRequestParameters.builder().maxOutputTokens(3).build()));
        assertThat(r.tokenUsage().outputTokenCount()).isEqualTo(3);
    }

    @Test
    void aFixedSeedMakesSampledAnswersRepeatable() {
        try (PowerInferChatModel sampled = PowerInferChatModel.builder().model(model).temperature(1.0).seed(7).maxTokens(24).build()) {
            String a = sampled.chat(USER), b = sampled.chat(USER);
            assertThat(a).isNotEmpty().isEqualTo(b);
        }
    }

    @Test
    void concurrentCallsEachGetTheAnswerTheyGetAlone() throws Exception {
        // EXACT decode batching: a batched pass gives each stream the logits it gets alone (the default, FAST, is within
        // rounding of them, so a near-tie could flip a greedy token)
        try (PowerInferChatModel exact = PowerInferChatModel.builder().modelPath(TestModels.stories())
                .modelOptions(ModelOptions.defaults().withThreads(2).withDecodeBatching(DecodeBatching.EXACT))
                .temperature(0.0).maxTokens(48).maxIdleSessions(3).build()) {
            String alone = exact.chat(USER);
            ExecutorService pool = Executors.newFixedThreadPool(3);
            try {
                for (int round = 0; round < 2; round++) {   // the second round runs on the kept sessions
                    CyclicBarrier start = new CyclicBarrier(3);   // all three generate at once
                    List<Future<String>> answers = new ArrayList<>();
                    for (int i = 0; i < 3; i++) answers.add(pool.submit(() -> {
                        start.await();
                        return exact.chat(USER);
                    }));
                    for (Future<String> f : answers) assertThat(f.get()).isEqualTo(alone);
                }
            } finally {
                pool.shutdown();
            }
        }
    }

    @Test
    void cachedPromptsContinueAConversation() {
        try (PowerInferChatModel cached = PowerInferChatModel.builder().model(model).temperature(0.0).maxTokens(16).cachePrompt(true).build()) {
            ChatResponse first = cached.chat(UserMessage.from(USER));
            ChatResponse second = cached.chat(UserMessage.from(USER), first.aiMessage(), UserMessage.from("And then?"));
            assertThat(second.tokenUsage().inputTokenCount()).isGreaterThan(first.tokenUsage().inputTokenCount());
            assertThat(second.aiMessage().text()).isEqualTo(greedy.chat(ChatRequest.builder()
                    .messages(UserMessage.from(USER), first.aiMessage(), UserMessage.from("And then?"))
                    .parameters(ChatRequestParameters.builder().maxOutputTokens(16).build()).build()).aiMessage().text());
        }
    }

    @Test
    void listenersSeeTheMergedRequestTheResponseAndErrors() {
        List<ChatModelRequestContext> requests = new ArrayList<>();
        List<ChatModelResponseContext> responses = new ArrayList<>();
        List<ChatModelErrorContext> errors = new ArrayList<>();
        ChatModelListener listener = new ChatModelListener() {
            @Override public void onRequest(ChatModelRequestContext c) { requests.add(c); }
            @Override public void onResponse(ChatModelResponseContext c) { responses.add(c); }
            @Override public void onError(ChatModelErrorContext c) { errors.add(c); }
        };
        try (PowerInferChatModel observed = PowerInferChatModel.builder().model(model).temperature(0.0).maxTokens(8)
                .listeners(List.of(listener)).build()) {
            ChatResponse r = observed.chat(UserMessage.from(USER));
            assertThatThrownBy(() -> observed.chat(request(ChatRequestParameters.builder().presencePenalty(1.0).build())))
                    .isInstanceOf(UnsupportedFeatureException.class);
            assertThat(requests).hasSize(2);
            assertThat(requests.getFirst().chatRequest().parameters().maxOutputTokens()).isEqualTo(8);
            assertThat(responses).singleElement().satisfies(c -> assertThat(c.chatResponse()).isEqualTo(r));
            assertThat(errors).singleElement().satisfies(c -> assertThat(c.error()).hasMessageContaining("presencePenalty"));
        }
    }

    @Test
    void parametersTheEngineCannotHonourAreRefused() {
        assertThatThrownBy(() -> greedy.chat(request(ChatRequestParameters.builder()
                .toolChoice(dev.langchain4j.model.chat.request.ToolChoice.REQUIRED).build())))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("toolChoice REQUIRED needs toolSpecifications");
        assertThatThrownBy(() -> greedy.chat(request(ChatRequestParameters.builder().responseFormat(ResponseFormat.builder()
                .type(dev.langchain4j.model.chat.request.ResponseFormatType.JSON).jsonSchema(dev.langchain4j.model.chat.request.json.JsonSchema.builder()
                        .name("s").rootElement(dev.langchain4j.model.chat.request.json.JsonRawSchema.from("{\"type\":\"string\",\"pattern\":\"a\"}")).build())
                .build()).build())))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("unsupported JSON schema keyword 'pattern'");
        assertThatThrownBy(() -> greedy.chat(request(ChatRequestParameters.builder().frequencyPenalty(0.5).build())))
                .isInstanceOf(UnsupportedFeatureException.class).hasMessageContaining("frequencyPenalty");
        assertThatThrownBy(() -> greedy.chat(request(ChatRequestParameters.builder().modelName("gpt-4o").build())))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'gpt-4o'").hasMessageContaining("'stories260K'");
        assertThatThrownBy(() -> greedy.chat(request(ChatRequestParameters.builder().temperature(-1.0).build())))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("temperature must be a finite number >= 0, is -1.0");
    }

    @Test
    void messagesTheEngineCannotTakeAreRefused() {
        assertThatThrownBy(() -> greedy.chat(UserMessage.from(TextContent.from("look"), ImageContent.from("https://example.com/cat.png"))))
                .isInstanceOf(UnsupportedFeatureException.class).hasMessageContaining("IMAGE content is not supported");
        assertThatThrownBy(() -> greedy.chat(UserMessage.from(USER), dev.langchain4j.data.message.CustomMessage.from(java.util.Map.of("k", "v"))))
                .isInstanceOf(UnsupportedFeatureException.class).hasMessageContaining("CUSTOM messages are not supported");
    }

    @Test
    void severalTextPartsAreJoinedByNewlines() {
        ChatResponse parts = greedy.chat(UserMessage.from(TextContent.from("Tell me"), TextContent.from("about Lily.")));
        assertThat(parts.aiMessage().text()).isEqualTo(greedy.chat("Tell me\nabout Lily."));
    }

    @Test
    void aModelOpenedFromAPathIsOwnedAndClosedWithIt() {
        PowerInferChatModel owned = PowerInferChatModel.builder().modelPath(TestModels.stories()).temperature(0.0).maxTokens(8).build();
        assertThat(owned.chat(USER)).isEqualTo(greedy.chat(ChatRequest.builder().messages(UserMessage.from(USER))
                .parameters(ChatRequestParameters.builder().maxOutputTokens(8).build()).build()).aiMessage().text());
        owned.close();
        assertThatThrownBy(() -> owned.chat(USER)).isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
        assertThatThrownBy(() -> owned.model().newSession().evaluate(1)).isInstanceOf(IllegalStateException.class)
                .hasMessage("the model is closed");
    }

    @Test
    void badBuilderSettingsFailAtBuild() {
        assertThatThrownBy(() -> PowerInferChatModel.builder().build())
                .isInstanceOf(IllegalArgumentException.class).hasMessage("give exactly one of model(Model) or modelPath(Path)");
        assertThatThrownBy(() -> PowerInferChatModel.builder().model(model).topP(1.5).build())
                .isInstanceOf(IllegalArgumentException.class).hasMessage("topP must be in [0, 1], is 1.5");
        assertThatThrownBy(() -> PowerInferChatModel.builder().model(model).maxTokens(0).build())
                .isInstanceOf(IllegalArgumentException.class).hasMessage("maxOutputTokens must be >= 1, is 0");
        assertThatThrownBy(() -> PowerInferChatModel.builder().modelPath(TestModels.stories().resolveSibling("missing.gguf")).build())
                .hasMessageContaining("missing.gguf");
    }
}
