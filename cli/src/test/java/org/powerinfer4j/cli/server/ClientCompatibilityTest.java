package org.powerinfer4j.cli.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.powerinfer4j.cli.server.ServerTestSupport.*;

import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.core.http.StreamResponse;
import com.openai.errors.BadRequestException;
import com.openai.errors.UnauthorizedException;
import com.openai.models.chat.completions.ChatCompletion;
import com.openai.models.chat.completions.ChatCompletionChunk;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import com.openai.models.chat.completions.ChatCompletionStreamOptions;
import com.openai.models.completions.Completion;
import com.openai.models.completions.CompletionCreateParams;
import com.openai.models.completions.CompletionUsage;
import dev.langchain4j.data.message.UserMessage;
import dev.langchain4j.model.chat.response.ChatResponse;
import dev.langchain4j.model.chat.response.StreamingChatResponseHandler;
import dev.langchain4j.model.openai.OpenAiChatModel;
import dev.langchain4j.model.openai.OpenAiStreamingChatModel;
import dev.langchain4j.model.output.FinishReason;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.powerinfer4j.engine.api.Model;
import org.powerinfer4j.engine.tokenizer.ChatMessage;

/**
 * Real clients against the server over loopback: the official OpenAI Java SDK and LangChain4j's OpenAI module,
 * streaming and not. Their text must equal the engine's own greedy output and their usage counts must be right.
 */
@Timeout(120)
class ClientCompatibilityTest {
    static final String KEY = "sk-local-test";
    static final String QUESTION = "Tell me a story about a cat";
    static Model model;
    static OpenAiServer server;
    static OpenAIClient openai;

    @BeforeAll
    static void start() throws Exception {
        model = openModel(0);
        server = OpenAiServer.start(model, config().withParallel(2, 8).withApiKey(KEY));
        openai = OpenAIOkHttpClient.builder().baseUrl(server.baseUri() + "/v1").apiKey(KEY).maxRetries(0).timeout(Duration.ofSeconds(30)).build();
    }

    @AfterAll
    static void stop() {
        if (openai != null) openai.close();
        if (server != null) server.close();
        if (model != null) model.close();
    }

    static void assertUsage(CompletionUsage u, Reference ref) {
        assertThat(u.promptTokens()).isEqualTo(ref.promptTokens());
        assertThat(u.completionTokens()).isEqualTo(ref.completionTokens());
        assertThat(u.totalTokens()).isEqualTo(ref.promptTokens() + ref.completionTokens());
    }

    // ---- OpenAI Java SDK ----

    @Test
    void openAiSdkChat() {
        Reference ref = chatReference(model, List.of(ChatMessage.user(QUESTION)), 32);
        ChatCompletion c = openai.chat().completions().create(ChatCompletionCreateParams.builder()
                .model(MODEL_ID).addUserMessage(QUESTION).temperature(0.0).maxCompletionTokens(32).build());
        c.validate(); // every field the SDK requires is there, with the right type
        assertThat(c.choices()).hasSize(1);
        assertThat(c.choices().getFirst().message().content()).hasValue(ref.text());
        assertThat(c.choices().getFirst().finishReason()).isEqualTo(ChatCompletion.Choice.FinishReason.LENGTH);
        assertThat(c.model()).isEqualTo(MODEL_ID);
        assertUsage(c.usage().orElseThrow(), ref);
    }

    @Test
    void openAiSdkChatStreaming() {
        Reference ref = chatReference(model, List.of(ChatMessage.system("You tell stories."), ChatMessage.user(QUESTION)), 40);
        StringBuilder text = new StringBuilder();
        CompletionUsage[] usage = new CompletionUsage[1];
        ChatCompletionChunk.Choice.FinishReason[] finish = new ChatCompletionChunk.Choice.FinishReason[1];
        ChatCompletionCreateParams params = ChatCompletionCreateParams.builder().model(MODEL_ID)
                .addSystemMessage("You tell stories.").addUserMessage(QUESTION).temperature(0.0).maxTokens(40)
                .streamOptions(ChatCompletionStreamOptions.builder().includeUsage(true).build()).build();
        try (StreamResponse<ChatCompletionChunk> stream = openai.chat().completions().createStreaming(params)) {
            stream.stream().forEach(chunk -> {
                chunk.validate();
                chunk.usage().ifPresent(u -> usage[0] = u);
                for (ChatCompletionChunk.Choice ch : chunk.choices()) {
                    ch.delta().content().ifPresent(text::append);
                    ch.finishReason().ifPresent(f -> finish[0] = f);
                }
            });
        }
        assertThat(text.toString()).isEqualTo(ref.text());
        assertThat(finish[0]).isEqualTo(ChatCompletionChunk.Choice.FinishReason.LENGTH);
        assertUsage(usage[0], ref);
    }

    @Test
    void openAiSdkCompletion() {
        Reference ref = completionReference(model, "Once upon a time", 32);
        Completion c = openai.completions().create(CompletionCreateParams.builder()
                .model(MODEL_ID).prompt("Once upon a time").maxTokens(32).temperature(0.0).build());
        c.validate();
        assertThat(c.choices().getFirst().text()).isEqualTo(ref.text());
        assertUsage(c.usage().orElseThrow(), ref);
    }

    @Test
    void openAiSdkCompletionStreamingWithStop() {
        Reference ref = completionReference(model, "Once upon a time", 32);
        String expected = ref.text().substring(0, ref.text().indexOf("Lily"));
        StringBuilder text = new StringBuilder();
        try (StreamResponse<Completion> stream = openai.completions().createStreaming(CompletionCreateParams.builder()
                .model(MODEL_ID).prompt("Once upon a time").maxTokens(32).temperature(0.0).stop("Lily").build())) {
            stream.stream().forEach(chunk -> chunk.choices().forEach(ch -> text.append(ch.text())));
        }
        assertThat(text.toString()).isEqualTo(expected).endsWith("named ");
    }

    @Test
    void openAiSdkSeesApiErrors() {
        assertThatThrownBy(() -> openai.chat().completions().create(ChatCompletionCreateParams.builder()
                .model(MODEL_ID).addUserMessage(QUESTION).n(3).build()))
                .isInstanceOf(BadRequestException.class).hasMessageContaining("n = 1");
        OpenAIClient wrongKey = OpenAIOkHttpClient.builder().baseUrl(server.baseUri() + "/v1").apiKey("nope").maxRetries(0).build();
        try {
            assertThatThrownBy(() -> wrongKey.models().list()).isInstanceOf(UnauthorizedException.class);
        } finally {
            wrongKey.close();
        }
        assertThat(openai.models().list().data()).anySatisfy(m -> assertThat(m.id()).isEqualTo(MODEL_ID));
    }

    // ---- LangChain4j ----

    @Test
    void langChain4jChat() {
        Reference ref = chatReference(model, List.of(ChatMessage.user(QUESTION)), 24);
        OpenAiChatModel chat = OpenAiChatModel.builder().baseUrl(server.baseUri() + "/v1").apiKey(KEY).modelName(MODEL_ID)
                .temperature(0.0).maxTokens(24).maxRetries(0).timeout(Duration.ofSeconds(30)).build();
        ChatResponse r = chat.chat(UserMessage.from(QUESTION));
        assertThat(r.aiMessage().text()).isEqualTo(ref.text());
        assertThat(r.finishReason()).isEqualTo(FinishReason.LENGTH);
        assertThat(r.tokenUsage().inputTokenCount()).isEqualTo(ref.promptTokens());
        assertThat(r.tokenUsage().outputTokenCount()).isEqualTo(ref.completionTokens());
        assertThat(r.tokenUsage().totalTokenCount()).isEqualTo(ref.promptTokens() + ref.completionTokens());
    }

    @Test
    void langChain4jStreamingChat() throws Exception {
        Reference ref = chatReference(model, List.of(ChatMessage.user(QUESTION)), 36);
        OpenAiStreamingChatModel chat = OpenAiStreamingChatModel.builder().baseUrl(server.baseUri() + "/v1").apiKey(KEY).modelName(MODEL_ID)
                .temperature(0.0).maxTokens(36).timeout(Duration.ofSeconds(30)).build();
        StringBuilder partial = new StringBuilder();
        CompletableFuture<ChatResponse> done = new CompletableFuture<>();
        chat.chat(QUESTION, new StreamingChatResponseHandler() {
            @Override
            public void onPartialResponse(String text) {
                partial.append(text);
            }

            @Override
            public void onCompleteResponse(ChatResponse response) {
                done.complete(response);
            }

            @Override
            public void onError(Throwable error) {
                done.completeExceptionally(error);
            }
        });
        ChatResponse r = done.get(30, TimeUnit.SECONDS);
        assertThat(partial.toString()).isEqualTo(ref.text());
        assertThat(r.aiMessage().text()).isEqualTo(ref.text());
        assertThat(r.finishReason()).isEqualTo(FinishReason.LENGTH);
        // LangChain4j asks for stream_options.include_usage and reads the last chunk
        assertThat(r.tokenUsage().inputTokenCount()).isEqualTo(ref.promptTokens());
        assertThat(r.tokenUsage().outputTokenCount()).isEqualTo(ref.completionTokens());
    }
}
