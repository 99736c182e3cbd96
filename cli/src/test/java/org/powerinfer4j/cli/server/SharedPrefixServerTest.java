package org.powerinfer4j.cli.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.powerinfer4j.cli.server.ServerTestSupport.*;

import com.fasterxml.jackson.databind.JsonNode;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.powerinfer4j.engine.api.Model;

/**
 * {@code --cache-prompt} across slots: a request whose prompt starts with what another slot has already evaluated
 * (a shared system prompt) takes those cache rows from that slot instead of evaluating them, and generates what a
 * cold prompt generates.
 */
@Timeout(120)
class SharedPrefixServerTest {
    static final String SHARED = "Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her friends. "
            + "One day, she saw a big red ball under a tree. She ran to the ball and picked it up. Her friend Tom came and said, ";

    @Test
    void aPrefixEvaluatedInAnotherSlotIsSharedNotRecomputed() throws Exception {
        try (Model model = openModel(0); OpenAiServer server = OpenAiServer.start(model, config().withParallel(2, 4).withCachePrompt(true))) {
            int sharedTokens = model.tokenizer().encode(SHARED, true, false).length;
            URI completions = server.baseUri().resolve("/v1/completions");
            long shared = 0;
            for (int attempt = 0; attempt < 6 && shared == 0; attempt++) {
                // A keeps slot 0 busy generating; B arrives meanwhile and gets slot 1, whose cache holds nothing of it
                String a = SHARED + "\"Let us play " + attempt + "\"";
                HttpRequest req = HttpRequest.newBuilder(completions).timeout(Duration.ofSeconds(60)).header("Content-Type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofString(json("prompt", a, "max_tokens", 300, "temperature", 0, "stream", true, "ignore_eos", true)))
                        .build();
                HttpResponse<java.util.stream.Stream<String>> ra = HTTP.send(req, HttpResponse.BodyHandlers.ofLines());
                var lines = ra.body().iterator();
                while (lines.hasNext() && !lines.next().startsWith("data: ")) { }   // A's first token: its prompt is in slot 0's cache
                String b = SHARED + "\"Can I have the ball?\"";
                Reply rb = post(server, "/v1/completions", json("prompt", b, "max_tokens", 16, "temperature", 0));
                CompletableFuture.runAsync(() -> lines.forEachRemaining(l -> {})).get();   // A to its end
                assertThat(rb.status()).isEqualTo(200);
                JsonNode usage = rb.json().path("usage");
                shared = metric(server, "powerinfer4j_prompt_tokens_shared_total");
                if (shared == 0) continue;   // A had finished before B came: B found slot 0 idle (its own cache)
                assertThat(usage.path("prompt_tokens_details").path("cached_tokens").asInt()).isGreaterThanOrEqualTo(sharedTokens - 1);
                assertThat(shared).isGreaterThanOrEqualTo(sharedTokens - 1);
                // the same greedy continuation as the prompt evaluated cold
                assertThat(rb.json().path("choices").get(0).path("text").asText()).isEqualTo(completionReference(model, b, 16).text());
                // the slots share the prefix's whole blocks of the one KV cache: fewer positions than tokens held
                // (without sharing each slot's tokens round up to whole blocks, so there would be at least as many)
                assertThat(metric(server, "powerinfer4j_kv_cache_used_positions")).isLessThanOrEqualTo(metric(server, "powerinfer4j_kv_cache_tokens") - 16);
            }
            assertThat(shared).as("B overlapped A in one of the attempts and took its prefix").isPositive();
        }
    }

    /** Many clients with one system prompt at once: slots copy from each other while they generate, and every answer is its own. */
    @Test
    void concurrentClientsSharingAPrefixEachGetTheirColdAnswer() throws Exception {
        String[] asks = {"\"Can I have the ball?\"", "\"Let us go home.\"", "\"Look at the bird!\"", "\"I am hungry.\"",
                "\"Where is mom?\"", "\"The sun is hot.\"", "\"I like the red ball.\"", "\"Can we play again?\""};
        try (Model model = openModel(0); OpenAiServer server = OpenAiServer.start(model, config().withParallel(4, 32).withCachePrompt(true))) {
            java.util.List<CompletableFuture<Reply>> replies = new java.util.ArrayList<>();
            java.util.List<String> prompts = new java.util.ArrayList<>();
            try (var clients = java.util.concurrent.Executors.newVirtualThreadPerTaskExecutor()) {
                for (int round = 0; round < 2; round++)
                    for (String ask : asks) {
                        String prompt = SHARED + ask;
                        prompts.add(prompt);
                        replies.add(CompletableFuture.supplyAsync(
                                () -> post(server, "/v1/completions", json("prompt", prompt, "max_tokens", 24, "temperature", 0)), clients));
                    }
                for (int i = 0; i < replies.size(); i++) {
                    Reply r = replies.get(i).get();
                    assertThat(r.status()).isEqualTo(200);
                    assertThat(r.json().path("choices").get(0).path("text").asText()).as("client %d", i)
                            .isEqualTo(completionReference(model, prompts.get(i), 24).text());
                }
            }
            assertThat(metric(server, "powerinfer4j_prompt_tokens_cached_total")).isPositive();
        }
    }

    @Test
    void withoutCachePromptNothingIsShared() throws Exception {
        try (Model model = openModel(0); OpenAiServer server = OpenAiServer.start(model, config().withParallel(2, 4))) {
            Reply r1 = post(server, "/v1/completions", json("prompt", SHARED + "A", "max_tokens", 4, "temperature", 0));
            Reply r2 = post(server, "/v1/completions", json("prompt", SHARED + "B", "max_tokens", 4, "temperature", 0));
            assertThat(r1.status()).isEqualTo(200);
            assertThat(r2.json().path("usage").path("prompt_tokens_details").path("cached_tokens").asInt()).isZero();
            assertThat(metric(server, "powerinfer4j_prompt_tokens_cached_total")).isZero();
        }
    }

    private static long metric(OpenAiServer server, String name) {
        for (String line : get(server, "/metrics").response().body().split("\n"))
            if (line.startsWith(name + " ")) return (long) Double.parseDouble(line.substring(name.length() + 1).trim());
        throw new AssertionError("no metric " + name);
    }
}
