package org.powerinfer4j.cli.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.powerinfer4j.cli.server.ServerTestSupport.*;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.powerinfer4j.engine.api.GenerationParams;
import org.powerinfer4j.engine.api.Model;
import org.powerinfer4j.engine.api.Speculation;

/**
 * {@code serve --lookup}: a server whose defaults speculate (prompt lookup) answers greedy requests with exactly the
 * text plain greedy decoding gives — one request, and several at once on two slots (their steps batched and
 * their drafts verified in the same model). The draft proposals must actually be used, or this test would prove
 * nothing: the repetitive prompt gets them accepted.
 */
@Timeout(120)
class SpeculativeServerTest {
    static Model model;
    static OpenAiServer server;
    static final String PROMPT = "Once upon a time, there was a little girl named Lily. She liked to play. Once upon a time, there was a little";

    @BeforeAll
    static void start() throws Exception {
        model = openModel(0);
        server = OpenAiServer.start(model, ServerConfig.defaults(MODEL_ID, GenerationParams.defaults().withSpeculation(Speculation.promptLookup(6)))
                .withPort(0).withParallel(2, 8));
    }

    @AfterAll
    static void stop() {
        if (server != null) server.close();
        if (model != null) model.close();
    }

    @Test
    void greedyCompletionsEqualPlainDecodingAndTheDraftsAreUsed() {
        Reference ref = completionReference(model, PROMPT, 24);
        double drafted = MetricsAndSlotsTest.scrape(server).get("powerinfer4j_draft_tokens_total");
        double accepted = MetricsAndSlotsTest.scrape(server).get("powerinfer4j_draft_accepted_tokens_total");
        Reply r = post(server, "/v1/completions", json("prompt", PROMPT, "max_tokens", 24, "temperature", 0));
        assertThat(r.status()).isEqualTo(200);
        assertThat(r.json().path("choices").get(0).path("text").asText()).isEqualTo(ref.text());
        assertThat(r.json().path("usage").path("completion_tokens").asInt()).isEqualTo(ref.completionTokens());
        var after = MetricsAndSlotsTest.scrape(server);
        assertThat(after.get("powerinfer4j_draft_tokens_total")).as("drafts proposed").isGreaterThan(drafted);
        assertThat(after.get("powerinfer4j_draft_accepted_tokens_total")).as("drafts accepted").isGreaterThan(accepted);
    }

    @Test
    void concurrentSpeculativeRequestsEachEqualPlainDecoding() {
        String[] prompts = {PROMPT, "Once upon a time", PROMPT + " girl named", "The cat sat on the mat. The cat sat on the"};
        List<CompletableFuture<Reply>> replies = new ArrayList<>();
        for (String p : prompts)
            replies.add(CompletableFuture.supplyAsync(() -> post(server, "/v1/completions", json("prompt", p, "max_tokens", 16, "temperature", 0))));
        for (int i = 0; i < prompts.length; i++) {
            Reply r = replies.get(i).join();
            assertThat(r.status()).isEqualTo(200);
            assertThat(r.json().path("choices").get(0).path("text").asText()).as("prompt %d", i)
                    .isEqualTo(completionReference(model, prompts[i], 16).text());
        }
    }
}
