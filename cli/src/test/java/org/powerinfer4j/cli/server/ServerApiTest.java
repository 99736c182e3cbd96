package org.powerinfer4j.cli.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.powerinfer4j.cli.server.ServerTestSupport.*;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.powerinfer4j.engine.api.Model;
import org.powerinfer4j.engine.tokenizer.ChatMessage;

/** The endpoints over raw HTTP: response shapes, text equal to the engine's greedy output, usage, stop sequences. */
@Timeout(120)
class ServerApiTest {
    static Model model;
    static OpenAiServer server;

    @BeforeAll
    static void start() throws Exception {
        model = openModel(0);
        server = OpenAiServer.start(model, config().withParallel(2, 8));
    }

    @AfterAll
    static void stop() {
        if (server != null) server.close();
        if (model != null) model.close();
    }

    @Test
    void healthAndModels() {
        Reply h = get(server, "/health");
        assertThat(h.status()).isEqualTo(200);
        assertThat(h.json().path("status").asText()).isEqualTo("ok");
        assertThat(h.json().path("slots_idle").asInt()).isEqualTo(2);
        Reply m = get(server, "/v1/models");
        assertThat(m.status()).isEqualTo(200);
        assertThat(m.json().path("object").asText()).isEqualTo("list");
        assertThat(m.json().path("data").get(0).path("id").asText()).isEqualTo(MODEL_ID);
        assertThat(m.json().path("data").get(0).path("object").asText()).isEqualTo("model");
    }

    @Test
    void completionMatchesTheEngineAndCountsTokens() {
        Reference ref = completionReference(model, "Once upon a time", 32);
        Reply r = post(server, "/v1/completions", json("model", "my-model", "prompt", "Once upon a time", "max_tokens", 32, "temperature", 0));
        assertThat(r.status()).isEqualTo(200);
        JsonNode j = r.json();
        assertThat(j.path("object").asText()).isEqualTo("text_completion");
        assertThat(j.path("id").asText()).startsWith("cmpl-");
        assertThat(j.path("model").asText()).as("the requested model is echoed").isEqualTo("my-model");
        assertThat(j.path("created").asLong()).isPositive();
        JsonNode c = j.path("choices").get(0);
        assertThat(c.path("text").asText()).isEqualTo(ref.text()).startsWith(", there was a little girl named Lily.");
        assertThat(c.path("finish_reason").asText()).isEqualTo("length");
        assertThat(j.path("usage").path("prompt_tokens").asInt()).isEqualTo(ref.promptTokens()).isEqualTo(5);
        assertThat(j.path("usage").path("completion_tokens").asInt()).isEqualTo(32);
        assertThat(j.path("usage").path("total_tokens").asInt()).isEqualTo(37);
    }

    @Test
    void promptAsArrayOfOneStringAndMaxCompletionTokens() {
        Reference ref = completionReference(model, "Once upon a time", 7);
        Reply r = post(server, "/v1/completions", json("prompt", List.of("Once upon a time"), "max_tokens", 50, "max_completion_tokens", 7,
                "temperature", 0));
        assertThat(r.status()).isEqualTo(200);
        assertThat(r.json().path("choices").get(0).path("text").asText()).isEqualTo(ref.text());
        assertThat(r.json().path("usage").path("completion_tokens").asInt()).isEqualTo(7);
        assertThat(r.json().path("model").asText()).as("no model named: the server's id").isEqualTo(MODEL_ID);
    }

    @Test
    void withoutMaxTokensGenerationRunsToTheFullContext() {
        Reference ref = completionReference(model, "Once upon a time", -1);
        assertThat(ref.promptTokens() + ref.completionTokens()).as("greedy stories260K never ends its story: it fills the context")
                .isEqualTo(model.contextLength() + 1);
        Reply r = post(server, "/v1/completions", json("prompt", "Once upon a time", "temperature", 0));
        assertThat(r.json().path("choices").get(0).path("text").asText()).isEqualTo(ref.text());
        assertThat(r.json().path("choices").get(0).path("finish_reason").asText()).isEqualTo("length");
        assertThat(r.json().path("usage").path("completion_tokens").asInt()).isEqualTo(ref.completionTokens());
    }

    @Test
    void chatUsesTheChatTemplate() {
        Reference ref = chatReference(model, List.of(ChatMessage.system("Tell a story."), ChatMessage.user("Hello")), 24);
        Reply r = post(server, "/v1/chat/completions", json("model", MODEL_ID, "max_tokens", 24, "temperature", 0.0,
                "messages", List.of(Map.of("role", "system", "content", "Tell a story."), Map.of("role", "user", "content", "Hello"))));
        assertThat(r.status()).isEqualTo(200);
        JsonNode j = r.json();
        assertThat(j.path("object").asText()).isEqualTo("chat.completion");
        assertThat(j.path("id").asText()).startsWith("chatcmpl-");
        JsonNode c = j.path("choices").get(0);
        assertThat(c.path("message").path("role").asText()).isEqualTo("assistant");
        assertThat(c.path("message").path("content").asText()).isEqualTo(ref.text()).isNotBlank();
        assertThat(j.path("usage").path("prompt_tokens").asInt()).isEqualTo(ref.promptTokens());
        assertThat(j.path("usage").path("completion_tokens").asInt()).isEqualTo(ref.completionTokens());
    }

    @Test
    void contentPartsAndDeveloperRoleAreAccepted() {
        Reference ref = chatReference(model, List.of(ChatMessage.system("Be brief."), ChatMessage.user("Hi\nthere")), 12);
        Reply r = post(server, "/v1/chat/completions", json("max_tokens", 12, "temperature", 0, "messages", List.of(
                Map.of("role", "developer", "content", "Be brief."),
                Map.of("role", "user", "content", List.of(Map.of("type", "text", "text", "Hi"), Map.of("type", "text", "text", "there"))))));
        assertThat(r.status()).isEqualTo(200);
        assertThat(r.json().path("choices").get(0).path("message").path("content").asText()).isEqualTo(ref.text());
    }

    @Test
    void chatStreamHasOpenAiChunksAndUsage() throws Exception {
        Reference ref = chatReference(model, List.of(ChatMessage.user("Tell me a story")), 40);
        Sse s = stream(server.baseUri().resolve("/v1/chat/completions"), json("max_tokens", 40, "temperature", 0, "stream", true,
                "stream_options", Map.of("include_usage", true), "messages", user("Tell me a story")));
        assertThat(s.status()).isEqualTo(200);
        assertThat(s.done()).isTrue();
        assertThat(s.text()).isEqualTo(ref.text());
        List<JsonNode> ev = s.events();
        String id = ev.get(0).path("id").asText();
        for (JsonNode e : ev) {
            assertThat(e.path("object").asText()).isEqualTo("chat.completion.chunk");
            assertThat(e.path("id").asText()).isEqualTo(id);
        }
        assertThat(ev.get(0).path("choices").get(0).path("delta").path("role").asText()).isEqualTo("assistant");
        JsonNode last = ev.get(ev.size() - 2).path("choices").get(0);
        assertThat(last.path("finish_reason").asText()).isEqualTo(ref.finishReason());
        JsonNode usage = ev.getLast();
        assertThat(usage.path("choices")).isEmpty();
        assertThat(usage.path("usage").path("prompt_tokens").asInt()).isEqualTo(ref.promptTokens());
        assertThat(usage.path("usage").path("completion_tokens").asInt()).isEqualTo(ref.completionTokens());
        assertThat(usage.path("usage").path("total_tokens").asInt()).isEqualTo(ref.promptTokens() + ref.completionTokens());
        // every content chunk before the end carries no usage yet
        assertThat(ev.get(1).path("usage").isNull()).isTrue();
    }

    @Test
    void completionStreamWithoutUsage() throws Exception {
        Reference ref = completionReference(model, "The cat", 30);
        Sse s = stream(server.baseUri().resolve("/v1/completions"), json("prompt", "The cat", "max_tokens", 30, "temperature", 0, "stream", true));
        assertThat(s.done()).isTrue();
        assertThat(s.text()).isEqualTo(ref.text());
        assertThat(s.events()).allSatisfy(e -> {
            assertThat(e.path("object").asText()).isEqualTo("text_completion");
            assertThat(e.has("usage")).isFalse();
        });
        assertThat(s.events().getLast().path("choices").get(0).path("finish_reason").asText()).isEqualTo("length");
    }

    @Test
    void stopSequenceSpanningTokensEndsTheTextBeforeIt() throws Exception {
        Reference ref = completionReference(model, "Once upon a time", 32);
        int at = ref.text().indexOf("little girl");
        assertThat(at).isPositive();
        String expected = ref.text().substring(0, at);
        String body = json("prompt", "Once upon a time", "max_tokens", 32, "temperature", 0, "stop", List.of("nothing like this", "little girl"));
        Reply r = post(server, "/v1/completions", body);
        assertThat(r.json().path("choices").get(0).path("text").asText()).isEqualTo(expected);
        assertThat(r.json().path("choices").get(0).path("finish_reason").asText()).isEqualTo("stop");
        Sse s = stream(server.baseUri().resolve("/v1/completions"), body.replace("}", ",\"stream\":true}"));
        assertThat(s.text()).isEqualTo(expected);
        assertThat(s.events().getLast().path("choices").get(0).path("finish_reason").asText()).isEqualTo("stop");
    }

    @Test
    void stopSequenceThatNeverAppearsChangesNothing() {
        Reference ref = completionReference(model, "Once upon a time", 20);
        Reply r = post(server, "/v1/completions", json("prompt", "Once upon a time", "max_tokens", 20, "temperature", 0, "stop", "zebra!"));
        assertThat(r.json().path("choices").get(0).path("text").asText()).isEqualTo(ref.text());
        assertThat(r.json().path("choices").get(0).path("finish_reason").asText()).isEqualTo("length");
    }

    @Test
    void aSeedMakesSamplingReproducible() {
        String body = json("prompt", "Once upon a time", "max_tokens", 24, "temperature", 1.0, "seed", 1234);
        String a = post(server, "/v1/completions", body).json().path("choices").get(0).path("text").asText();
        String b = post(server, "/v1/completions", body).json().path("choices").get(0).path("text").asText();
        assertThat(a).isEqualTo(b).isNotEmpty();
    }

    @Test
    void unknownFieldsAreTolerated() {
        Reply r = post(server, "/v1/chat/completions", json("messages", user("Hi"), "max_tokens", 4, "n", 1, "logit_bias", Map.of(),
                "user", "someone", "frequency_penalty", 0, "response_format", Map.of("type", "text"), "stream", false));
        assertThat(r.status()).isEqualTo(200);
        assertThat(r.json().path("usage").path("completion_tokens").asInt()).isBetween(1, 4);
    }
}
