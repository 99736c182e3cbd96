package org.powerinfer4j.cli.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.powerinfer4j.cli.server.ServerTestSupport.*;

import java.lang.management.ManagementFactory;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.powerinfer4j.engine.api.Model;

/**
 * 64 concurrent streaming clients against 4 slots and a queue of 8, on loopback. Each client has its own prompt
 * whose greedy continuation is known from a sequential run of the engine, so a token that leaked from one stream
 * into another would show. Clients that get 429 retry after a short random pause until they are served: every one
 * of the 64 must complete (within the test's time limit), and each gets exactly its own continuation.
 */
@Timeout(120)
class LoadTest {
    static final int CLIENTS = 64, PARALLEL = 4, QUEUE = 8, MAX_TOKENS = 32;
    /** How long a client keeps retrying after 429s before it counts as not served (the test's limit is 120 s). */
    static final long RETRY_NANOS = 80_000_000_000L;

    record Outcome(int client, boolean completed, String text, int completionTokens, long latencyNanos, long firstTokenNanos, int attempts) {}

    @Test
    void sixtyFourStreamingClients() throws Exception {
        String[] who = {"a little girl", "a big dog", "a small bird", "a brave boy", "a happy cat", "an old man", "a tiny frog", "a red car"};
        String[] what = {"liked to sing", "found a ball", "lost a toy", "saw the sun", "went to the park", "ate a cake", "had a box", "wanted to fly"};
        List<String> prompts = new ArrayList<>();
        for (String w : who) for (String x : what) prompts.add("Once upon a time, there was " + w + " who " + x + ".");

        try (Model model = openModel(0)) {
            // the sequential reference: the engine alone, one prompt after the other
            List<Reference> refs = new ArrayList<>();
            for (String p : prompts) refs.add(completionReference(model, p, MAX_TOKENS));
            assertThat(refs.stream().map(Reference::text).distinct().count()).as("distinct continuations").isGreaterThan(CLIENTS / 2);

            try (OpenAiServer server = OpenAiServer.start(model, config().withParallel(PARALLEL, QUEUE))) {
                URI uri = server.baseUri().resolve("/v1/completions");
                stream(uri, json("prompt", "warm up", "max_tokens", 4, "stream", true)); // classes loaded, JIT started
                long heapBefore = usedHeapAfterGc();

                Map<Integer, AtomicInteger> statuses = new ConcurrentHashMap<>();
                CountDownLatch go = new CountDownLatch(1);
                List<Future<Outcome>> futures = new ArrayList<>();
                long t0;
                try (var clients = Executors.newVirtualThreadPerTaskExecutor()) {
                    for (int i = 0; i < CLIENTS; i++) {
                        int c = i;
                        futures.add(clients.submit(() -> {
                            go.await();
                            return client(uri, c, prompts.get(c), statuses);
                        }));
                    }
                    t0 = System.nanoTime();
                    go.countDown();
                }
                long wallNanos = System.nanoTime() - t0;

                List<Outcome> outcomes = new ArrayList<>();
                for (Future<Outcome> f : futures) outcomes.add(f.get(1, TimeUnit.SECONDS));
                assertThat(statuses.keySet()).as("every response was a stream or a 429").isSubsetOf(200, 429);
                List<Long> latencies = new ArrayList<>(), firstTokens = new ArrayList<>();
                long tokens = 0;
                int completed = 0;
                for (Outcome o : outcomes) {
                    if (!o.completed()) continue; // counted below: every client must be served
                    completed++;
                    Reference ref = refs.get(o.client());
                    assertThat(o.text()).as("client %d's stream holds exactly its own continuation", o.client()).isEqualTo(ref.text());
                    assertThat(o.completionTokens()).isEqualTo(ref.completionTokens());
                    latencies.add(o.latencyNanos());
                    firstTokens.add(o.firstTokenNanos());
                    tokens += o.completionTokens();
                }
                assertThat(completed).as("every client is served (after 429s and retries)").isEqualTo(CLIENTS);

                // a client has its last byte a moment before its slot thread marks itself idle
                SlotScheduler.Stats stats = ConcurrencyTest.awaitStats(server, st -> st.idle() == PARALLEL, java.time.Duration.ofSeconds(2));
                assertThat(stats.idle()).isEqualTo(PARALLEL);
                assertThat(stats.queued()).isZero();
                Reply health = get(server, "/health");
                assertThat(health.status()).isEqualTo(200);
                assertThat(health.json().path("status").asText()).isEqualTo("ok");

                long heapAfter = usedHeapAfterGc();
                Collections.sort(latencies);
                Collections.sort(firstTokens);
                System.out.printf("load: %d clients, --parallel %d --queue %d: %d completed (%d 429s in all, at most %d attempts), "
                                + "%.1f s, %.0f tokens/s, latency p50 %d ms, p99 %d ms, first token p50 %d ms, p99 %d ms (served attempt), heap after GC %d -> %d MiB%n",
                        CLIENTS, PARALLEL, QUEUE, completed, statuses.getOrDefault(429, new AtomicInteger()).get(),
                        outcomes.stream().mapToInt(Outcome::attempts).max().orElse(0),
                        wallNanos / 1e9, tokens / (wallNanos / 1e9), percentile(latencies, 50) / 1_000_000, percentile(latencies, 99) / 1_000_000,
                        percentile(firstTokens, 50) / 1_000_000, percentile(firstTokens, 99) / 1_000_000, heapBefore >> 20, heapAfter >> 20);
                assertThat(heapAfter - heapBefore).as("heap growth after GC, bytes").isLessThan(32L << 20);
            }
        }
    }

    /** One client: stream its prompt, retrying after 429; the latency is that of the attempt that was served. */
    private static Outcome client(URI uri, int client, String prompt, Map<Integer, AtomicInteger> statuses) throws Exception {
        String body = json("prompt", prompt, "max_tokens", MAX_TOKENS, "temperature", 0, "stream", true,
                "stream_options", Map.of("include_usage", true));
        long deadline = System.nanoTime() + RETRY_NANOS;
        for (int attempt = 1; System.nanoTime() < deadline; attempt++) {
            long t = System.nanoTime();
            HttpRequest req = HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(60)).POST(HttpRequest.BodyPublishers.ofString(body)).build();
            HttpResponse<java.util.stream.Stream<String>> r = HTTP.send(req, HttpResponse.BodyHandlers.ofLines());
            statuses.computeIfAbsent(r.statusCode(), k -> new AtomicInteger()).incrementAndGet();
            if (r.statusCode() == 429) {
                r.body().close();
                Thread.sleep(ThreadLocalRandom.current().nextInt(20, 120));
                continue;
            }
            StringBuilder text = new StringBuilder();
            int completionTokens = -1;
            long first = -1;
            boolean done = false;
            try (var lines = r.body()) {
                for (String line : (Iterable<String>) lines::iterator) {
                    if (!line.startsWith("data: ")) continue;
                    if (line.equals("data: [DONE]")) {
                        done = true;
                        continue;
                    }
                    var e = JSON.readTree(line.substring(6));
                    for (var c : e.path("choices")) {
                        String piece = c.path("text").asText("");
                        if (!piece.isEmpty() && first < 0) first = System.nanoTime() - t;
                        text.append(piece);
                    }
                    if (e.path("usage").isObject()) completionTokens = e.path("usage").path("completion_tokens").asInt();
                }
            }
            assertThat(done).as("client %d's stream ended with [DONE]", client).isTrue();
            return new Outcome(client, true, text.toString(), completionTokens, System.nanoTime() - t, first, attempt);
        }
        return new Outcome(client, false, null, 0, 0, 0, -1);
    }

    private static long usedHeapAfterGc() {
        for (int i = 0; i < 3; i++) System.gc();
        return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
    }

    private static long percentile(List<Long> sorted, int p) {
        if (sorted.isEmpty()) return 0;
        int i = (int) Math.ceil(p / 100.0 * sorted.size()) - 1;
        return sorted.get(Math.max(0, Math.min(sorted.size() - 1, i)));
    }
}
