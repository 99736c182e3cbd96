package org.powerinfer4j.cli.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.powerinfer4j.cli.server.ServerTestSupport.*;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.powerinfer4j.engine.api.Model;

/**
 * The slots share one KV cache of {@code -c} positions: {@code --ctx-per-slot} bounds one request, generations that
 * together outgrow the cache end as at a full context (never an error mid-stream, never another stream's rows),
 * and idle slots' blocks go to the next request.
 */
@Timeout(120)
class SharedKvServerTest {
    @Test
    void aRequestIsBoundedByTheSlotContext() throws Exception {
        try (Model model = openModel(256); OpenAiServer server = OpenAiServer.start(model, config().withParallel(2, 4).withCtxPerSlot(64))) {
            assertThat(server.slotContext()).isEqualTo(64);
            String longPrompt = "Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her friends. "
                    + "One day, she saw a big red ball under a tree. She ran to the ball and picked it up.";
            assertThat(model.tokenizer().encode(longPrompt, true, false).length).isGreaterThan(64);
            Reply r = post(server, "/v1/completions", json("prompt", longPrompt, "max_tokens", 4));
            assertThat(r.status()).isEqualTo(400);
            assertThat(r.json().path("error").path("message").asText()).contains("context is 64");
            Reply ok = post(server, "/v1/completions", json("prompt", "Once upon a time", "max_tokens", 100, "temperature", 0, "ignore_eos", true));
            assertThat(ok.status()).isEqualTo(200);
            assertThat(ok.json().path("choices").get(0).path("finish_reason").asText()).isEqualTo("length");
            assertThat(ok.json().path("usage").path("prompt_tokens").asInt() + ok.json().path("usage").path("completion_tokens").asInt())
                    .isLessThanOrEqualTo(65);   // the slot's 64 positions and the last sampled token (never fed)
        }
    }

    @Test
    void streamsThatOutgrowTheSharedCacheStopAtItsEndAndIdleSlotsLendTheirBlocks() throws Exception {
        // 4 slots, 128 positions in all (8 blocks): streams of up to 90 tokens each that overlap cannot all finish
        // (how far each gets depends on how they overlap; whichever stops early stops as at a full context)
        try (Model model = openModel(128); OpenAiServer server = OpenAiServer.start(model, config().withParallel(4, 8))) {
            String[] prompts = {"Once upon a time", "The little dog", "Lily and Tom", "One day, the sun"};
            List<CompletableFuture<Reply>> replies = new ArrayList<>();
            try (var clients = java.util.concurrent.Executors.newVirtualThreadPerTaskExecutor()) {
                for (String p : prompts)
                    replies.add(CompletableFuture.supplyAsync(() -> post(server, "/v1/completions",
                            json("prompt", p, "max_tokens", 90, "temperature", 0, "ignore_eos", true)), clients));
                for (int i = 0; i < prompts.length; i++) {
                    Reply r = replies.get(i).get();
                    assertThat(r.status()).as("stream %d", i).isEqualTo(200);
                    JsonNode choice = r.json().path("choices").get(0);
                    assertThat(choice.path("finish_reason").asText()).isEqualTo("length");
                    int n = r.json().path("usage").path("completion_tokens").asInt();
                    // whatever it got, it is its own prompt's greedy continuation
                    assertThat(choice.path("text").asText()).as("stream %d", i).isEqualTo(completionReference(model, prompts[i], n).text());
                }
            }
            // all four slots are idle, their caches parked and holding the blocks: a new request takes them and runs to max_tokens
            Reply again = post(server, "/v1/completions", json("prompt", "Once upon a time", "max_tokens", 100, "temperature", 0, "ignore_eos", true));
            assertThat(again.status()).isEqualTo(200);
            assertThat(again.json().path("usage").path("completion_tokens").asInt()).isEqualTo(100);
            assertThat(again.json().path("choices").get(0).path("text").asText()).isEqualTo(completionReference(model, "Once upon a time", 100).text());
        }
    }
}
