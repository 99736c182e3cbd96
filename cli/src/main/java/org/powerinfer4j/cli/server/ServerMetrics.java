package org.powerinfer4j.cli.server;

import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

/**
 * {@code GET /metrics} in the Prometheus text exposition format (version 0.0.4): requests answered by endpoint and
 * status, prompt and generated tokens, queue depth, busy slots, decode batching (steps, passes, prompt chunks that
 * rode them) and KV cache use. Counters count from server start.
 */
final class ServerMetrics {
    static final String CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";
    private static final List<String> ENDPOINTS = List.of("/v1/chat/completions", "/v1/completions", "/v1/models", "/health", "/metrics", "/slots");

    private final Map<String, LongAdder> requests = new ConcurrentHashMap<>();   // "endpoint status" → count

    /** Counts one answered request; unknown paths are one label value ({@code other}), so clients cannot grow the series. */
    void request(String path, int status) {
        String endpoint = ENDPOINTS.contains(path) ? path : "other";
        requests.computeIfAbsent(endpoint + " " + status, k -> new LongAdder()).increment();
    }

    String render(SlotScheduler.Stats s, SlotScheduler.KvUsage kv) {
        StringBuilder b = new StringBuilder();
        header(b, "powerinfer4j_requests_total", "counter", "HTTP requests answered, by endpoint and status code.");
        for (Map.Entry<String, LongAdder> e : new TreeMap<>(requests).entrySet()) {
            String[] k = e.getKey().split(" ");
            b.append("powerinfer4j_requests_total{endpoint=\"").append(k[0]).append("\",status=\"").append(k[1]).append("\"} ")
                    .append(e.getValue().sum()).append('\n');
        }
        metric(b, "powerinfer4j_prompt_tokens_total", "counter", "Prompt tokens of the completions run.", s.promptTokens());
        metric(b, "powerinfer4j_prompt_tokens_cached_total", "counter", "Prompt tokens taken from a KV cache instead of evaluated (--cache-prompt).", s.reusedPromptTokens());
        metric(b, "powerinfer4j_prompt_tokens_shared_total", "counter", "Cached prompt tokens copied from another slot's KV cache.", s.sharedPromptTokens());
        metric(b, "powerinfer4j_generated_tokens_total", "counter", "Tokens generated.", s.generatedTokens());
        metric(b, "powerinfer4j_draft_tokens_total", "counter", "Draft tokens speculative decoding proposed.", s.draftedTokens());
        metric(b, "powerinfer4j_draft_accepted_tokens_total", "counter", "Draft tokens the model accepted.", s.acceptedTokens());
        metric(b, "powerinfer4j_requests_completed_total", "counter", "Generations that ran to their end.", s.completed());
        metric(b, "powerinfer4j_requests_cancelled_total", "counter", "Generations cancelled (client gone) or dropped from the queue.", s.cancelled());
        metric(b, "powerinfer4j_queue_depth", "gauge", "Requests waiting for a slot.", s.queued());
        metric(b, "powerinfer4j_slots", "gauge", "Slots (parallel sequences).", s.slots());
        metric(b, "powerinfer4j_slots_busy", "gauge", "Slots generating.", s.slots() - s.idle());
        metric(b, "powerinfer4j_decode_steps_batched_total", "counter", "Decode steps run in shared passes over the weights (--decode-batching).",
                s.decodeSteps());
        metric(b, "powerinfer4j_decode_passes_total", "counter", "Shared decode passes; steps / passes is the mean batch size.", s.decodePasses());
        metric(b, "powerinfer4j_prompt_chunks_batched_total", "counter", "Prompt chunks that rode a decode pass (fast batching, other slots running).",
                s.promptChunksBatched());
        metric(b, "powerinfer4j_kv_cache_tokens", "gauge", "Tokens in the slots' KV caches (a prefix slots share counts in each).", kv.tokens());
        metric(b, "powerinfer4j_kv_cache_used_positions", "gauge", "Positions of the KV cache's blocks in use (a shared block once).", kv.usedPositions());
        metric(b, "powerinfer4j_kv_cache_capacity_tokens", "gauge", "Positions the KV cache has in all (-c, shared by the slots).", kv.capacity());
        header(b, "powerinfer4j_kv_cache_usage_ratio", "gauge", "KV cache use: positions in use / capacity.");
        b.append("powerinfer4j_kv_cache_usage_ratio ")
                .append(String.format(Locale.ROOT, "%.6f", kv.capacity() == 0 ? 0.0 : (double) kv.usedPositions() / kv.capacity())).append('\n');
        return b.toString();
    }

    private static void metric(StringBuilder b, String name, String type, String help, long value) {
        header(b, name, type, help);
        b.append(name).append(' ').append(value).append('\n');
    }

    private static void header(StringBuilder b, String name, String type, String help) {
        b.append("# HELP ").append(name).append(' ').append(help).append('\n');
        b.append("# TYPE ").append(name).append(' ').append(type).append('\n');
    }
}
