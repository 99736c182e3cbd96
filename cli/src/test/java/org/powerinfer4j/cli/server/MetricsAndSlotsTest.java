package org.powerinfer4j.cli.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.powerinfer4j.cli.server.ServerTestSupport.*;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.powerinfer4j.engine.api.Model;

/** {@code GET /metrics} (Prometheus text) and {@code GET /slots} over raw HTTP, on a server of its own so the counts are exact. */
@Timeout(120)
@org.junit.jupiter.api.TestMethodOrder(org.junit.jupiter.api.MethodOrderer.OrderAnnotation.class)
class MetricsAndSlotsTest {
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

    /** Sample lines {@code name{labels} value} → value, checking that every sample has a # TYPE line before it. */
    static Map<String, Double> scrape() {
        return scrape(server);
    }

    static Map<String, Double> scrape(OpenAiServer server) {
        Reply r = get(server, "/metrics");
        assertThat(r.status()).isEqualTo(200);
        assertThat(r.header("content-type")).startsWith("text/plain; version=0.0.4");
        Map<String, Double> out = new HashMap<>();
        java.util.Set<String> typed = new java.util.HashSet<>();
        for (String line : r.response().body().split("\n")) {
            if (line.startsWith("# TYPE ")) typed.add(line.split(" ")[2]);
            if (line.isEmpty() || line.startsWith("#")) continue;
            int sp = line.lastIndexOf(' ');
            String key = line.substring(0, sp);
            String name = key.contains("{") ? key.substring(0, key.indexOf('{')) : key;
            assertThat(typed).as("TYPE before %s", name).contains(name);
            out.put(key, Double.parseDouble(line.substring(sp + 1)));
        }
        return out;
    }

    @Test
    @org.junit.jupiter.api.Order(1)   // first: the slots' caches hold only this test's tokens
    void metricsCountRequestsAndTokensAndSlotsShowTheCache() {
        Map<String, Double> before = scrape();
        assertThat(before.get("powerinfer4j_slots")).isEqualTo(2.0);
        Reference ref = completionReference(model, "Once upon a time", 9);
        Reply r = post(server, "/v1/completions", json("prompt", "Once upon a time", "max_tokens", 9, "temperature", 0));
        assertThat(r.status()).isEqualTo(200);
        assertThat(post(server, "/v1/completions", json("prompt", 5)).status()).isEqualTo(400);
        assertThat(get(server, "/no/such/path").status()).isEqualTo(404);

        Map<String, Double> after = scrape();
        assertThat(after.get("powerinfer4j_requests_total{endpoint=\"/v1/completions\",status=\"200\"}")).isEqualTo(1.0);
        assertThat(after.get("powerinfer4j_requests_total{endpoint=\"/v1/completions\",status=\"400\"}")).isEqualTo(1.0);
        assertThat(after.get("powerinfer4j_requests_total{endpoint=\"other\",status=\"404\"}")).isEqualTo(1.0);
        assertThat(after.get("powerinfer4j_requests_total{endpoint=\"/metrics\",status=\"200\"}")).as("the first scrape").isEqualTo(1.0);
        assertThat(after.get("powerinfer4j_prompt_tokens_total") - before.get("powerinfer4j_prompt_tokens_total")).isEqualTo(ref.promptTokens());
        assertThat(after.get("powerinfer4j_generated_tokens_total") - before.get("powerinfer4j_generated_tokens_total")).isEqualTo(9.0);
        assertThat(after.get("powerinfer4j_queue_depth")).isZero();
        assertThat(after.get("powerinfer4j_slots_busy")).isZero();
        // the reference generation on the same model, then the request, one after the other: 8 decode steps each
        // (9 tokens, the first from the prompt), every one a pass of its own
        assertThat(after.get("powerinfer4j_decode_steps_batched_total") - before.get("powerinfer4j_decode_steps_batched_total")).isEqualTo(16.0);
        assertThat(after.get("powerinfer4j_decode_passes_total") - before.get("powerinfer4j_decode_passes_total")).isEqualTo(16.0);
        assertThat(after.get("powerinfer4j_prompt_chunks_batched_total")).isZero();
        // the last sampled token is never fed back: prompt + generated − 1 tokens sit in the used slot's cache
        int cached = ref.promptTokens() + 9 - 1;
        assertThat(after.get("powerinfer4j_kv_cache_tokens")).isEqualTo(cached);
        // the two slots share one cache of -c positions, held in blocks of 16 (the idle slot's are lent, not freed)
        int blocks = (cached + 15) / 16 * 16;
        assertThat(after.get("powerinfer4j_kv_cache_used_positions")).isEqualTo(blocks);
        assertThat(after.get("powerinfer4j_kv_cache_capacity_tokens")).isEqualTo(model.contextLength());
        assertThat(after.get("powerinfer4j_kv_cache_usage_ratio")).isCloseTo((double) blocks / model.contextLength(),
                org.assertj.core.data.Offset.offset(1e-6));

        Reply slots = get(server, "/slots");
        assertThat(slots.status()).isEqualTo(200);
        JsonNode a = slots.json();
        assertThat(a).hasSize(2);
        int total = 0;
        for (int i = 0; i < 2; i++) {
            assertThat(a.get(i).path("id").asInt()).isEqualTo(i);
            assertThat(a.get(i).path("state").asText()).isEqualTo("idle");
            assertThat(a.get(i).path("is_processing").asBoolean()).isFalse();
            assertThat(a.get(i).path("n_ctx").asInt()).isEqualTo(model.contextLength());
            total += a.get(i).path("tokens_cached").asInt();
        }
        assertThat(total).isEqualTo(cached);
        assertThat(post(server, "/slots", "{}").status()).isEqualTo(405);
    }

    @Test
    @org.junit.jupiter.api.Order(2)
    void slotsShowABusySlotWhileItGenerates() throws Exception {
        Thread t = Thread.ofVirtual().start(() -> post(server, "/v1/completions", json("prompt", "Once upon a time", "max_tokens", 400, "temperature", 0)));
        boolean seen = false;
        for (int i = 0; i < 400 && !seen; i++) {
            for (JsonNode s : get(server, "/slots").json()) if (s.path("state").asText().equals("processing")) seen = true;
            if (!seen) Thread.sleep(5);
        }
        t.join();
        assertThat(seen).as("a slot reported processing during a 400-token generation").isTrue();
    }
}
