package org.powerinfer4j.cli.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.powerinfer4j.cli.server.ServerTestSupport.*;

import java.io.InputStream;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.powerinfer4j.engine.api.GenerationParams;
import org.powerinfer4j.engine.api.Model;
import org.powerinfer4j.engine.sampling.SamplingParams;
import org.powerinfer4j.engine.tokenizer.ChatMessage;

/**
 * Slots and the queue: client disconnects free slots, queued clients that leave are dropped, slots interleave,
 * requests do not see each other's state, long non-streaming requests survive the idle timeout.
 */
@Timeout(120)
class ConcurrencyTest {
    static Model model;

    @BeforeAll
    static void open() throws Exception {
        model = openModel(4096); // a full-context generation takes many seconds: long enough to leave in the middle
    }

    @AfterAll
    static void close() {
        if (model != null) model.close();
    }

    static final String ENDLESS = json("prompt", "Once upon a time", "ignore_eos", true, "stream", true, "temperature", 0);

    static HttpResponse<InputStream> openStream(OpenAiServer server, String body) throws Exception {
        HttpRequest req = request(server, "/v1/completions").POST(HttpRequest.BodyPublishers.ofString(body)).build();
        HttpResponse<InputStream> r = HTTP.send(req, HttpResponse.BodyHandlers.ofInputStream());
        assertThat(r.statusCode()).isEqualTo(200);
        return r;
    }

    /** Reads the stream until {@code n} data events have arrived. */
    static void readEvents(InputStream in, int n) throws Exception {
        StringBuilder sb = new StringBuilder();
        int seen = 0;
        while (seen < n) {
            int c = in.read();
            assertThat(c).as("stream ended early").isNotNegative();
            sb.append((char) c);
            if (sb.toString().endsWith("\n\n")) {
                if (sb.toString().startsWith("data: ")) seen++;
                sb.setLength(0);
            }
        }
    }

    static SlotScheduler.Stats awaitStats(OpenAiServer server, Predicate<SlotScheduler.Stats> condition, Duration within) throws InterruptedException {
        long deadline = System.nanoTime() + within.toNanos();
        SlotScheduler.Stats s = server.stats();
        while (!condition.test(s) && System.nanoTime() < deadline) {
            Thread.sleep(20);
            s = server.stats();
        }
        return s;
    }

    @Test
    void clientThatDisconnectsMidStreamFreesItsSlot() throws Exception {
        try (OpenAiServer server = OpenAiServer.start(model, config().withParallel(1, 2))) {
            HttpResponse<InputStream> r = openStream(server, ENDLESS);
            try (InputStream in = r.body()) {
                readEvents(in, 5);
                assertThat(server.stats().idle()).as("the generation is running").isZero();
            } // closing an unfinished HTTP/1.1 body closes the connection
            long t0 = System.nanoTime();
            // a whole 4096-token generation takes far longer than this; only cancellation frees the slot in time
            SlotScheduler.Stats s = awaitStats(server, st -> st.idle() == 1, Duration.ofSeconds(5));
            assertThat(s.idle()).as("slot freed after %d ms", (System.nanoTime() - t0) / 1_000_000).isEqualTo(1);
            assertThat(s.cancelled()).isEqualTo(1);
            assertThat(s.completed()).isZero();

            Reference ref = completionReference(model, "The dog", 16);
            Reply next = post(server, "/v1/completions", json("prompt", "The dog", "max_tokens", 16, "temperature", 0));
            assertThat(next.status()).isEqualTo(200);
            assertThat(next.json().path("choices").get(0).path("text").asText()).isEqualTo(ref.text());
        }
    }

    @Test
    void clientThatStopsReadingIsTimedOutAndItsGenerationCancelled() throws Exception {
        try (OpenAiServer server = OpenAiServer.start(model, config().withIdleTimeout(Duration.ofMillis(500)));
             java.net.Socket socket = new java.net.Socket()) {
            server.setAcceptedSendBufferSize(4096); // with small buffers on both ends, the server's writes block soon
            socket.setReceiveBufferSize(4096);
            socket.connect(new java.net.InetSocketAddress("127.0.0.1", server.port()));
            byte[] body = ENDLESS.getBytes(StandardCharsets.UTF_8);
            socket.getOutputStream().write(("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "
                    + body.length + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            socket.getOutputStream().write(body);
            socket.getOutputStream().flush();
            assertThat(awaitStats(server, st -> st.idle() == 0, Duration.ofSeconds(5)).idle()).as("generating").isZero();
            // never read: once the socket buffers are full, a write makes no progress for the idle timeout and fails
            long t0 = System.nanoTime();
            SlotScheduler.Stats s = awaitStats(server, st -> st.idle() == 1, Duration.ofSeconds(30));
            System.out.printf("a client that stopped reading was dropped after %d ms%n", (System.nanoTime() - t0) / 1_000_000);
            assertThat(s.idle()).isEqualTo(1);
            assertThat(s.cancelled()).as("the generation was cut short, not completed").isEqualTo(1);
        }
    }

    @Test
    void queuedStreamingClientThatLeavesIsDroppedFromTheQueue() throws Exception {
        try (OpenAiServer server = OpenAiServer.start(model, config().withParallel(1, 1).withPingInterval(Duration.ofMillis(100)))) {
            HttpResponse<InputStream> running = openStream(server, ENDLESS);
            try (InputStream in = running.body()) {
                readEvents(in, 1);
                HttpResponse<InputStream> queued = openStream(server, ENDLESS);
                assertThat(server.stats().queued()).isEqualTo(1);
                queued.body().close();
                // the next ping to the departed client fails, and the job leaves the queue without running
                SlotScheduler.Stats s = awaitStats(server, st -> st.queued() == 0, Duration.ofSeconds(5));
                assertThat(s.queued()).isZero();
                assertThat(s.cancelled()).isEqualTo(1);
                assertThat(s.idle()).as("the first stream still runs").isZero();
            }
            assertThat(awaitStats(server, st -> st.idle() == 1, Duration.ofSeconds(5)).cancelled()).isEqualTo(2);
        }
    }

    @Test
    void slotsAdvanceTokenByTokenSoNoneIsStarved() throws Exception {
        try (SlotScheduler scheduler = new SlotScheduler(model, 2, 0, false)) {
            GenerationParams params = GenerationParams.defaults().withMaxTokens(300).withSampling(SamplingParams.GREEDY)
                    .withStopAtEndOfGeneration(false);
            GenerationJob a = new GenerationJob(model.tokenizer().encode("Once upon a time", true, false), params, List.of());
            GenerationJob b = new GenerationJob(model.tokenizer().encode("The dog", true, false), params, List.of());
            assertThat(scheduler.submit(a)).isTrue();
            assertThat(scheduler.submit(b)).isTrue();
            assertThat(scheduler.submit(new GenerationJob(new int[]{1}, params, List.of()))).as("both slots busy, no queue").isFalse();
            // one consumer per job, so each event is seen as it is produced
            long[] ta, tb; // {first text, done}, in nanos
            try (var consumers = java.util.concurrent.Executors.newVirtualThreadPerTaskExecutor()) {
                var fa = consumers.submit(() -> times(a));
                var fb = consumers.submit(() -> times(b));
                ta = fa.get(60, TimeUnit.SECONDS);
                tb = fb.get(60, TimeUnit.SECONDS);
            }
            // interleaved: each produced its first token before the other finished
            assertThat(ta[0]).isLessThan(tb[1]);
            assertThat(tb[0]).isLessThan(ta[1]);
        }
    }

    /** Drains a job; returns when its first text and its end arrived. */
    private static long[] times(GenerationJob job) {
        long first = -1;
        while (true) {
            GenerationJob.Event e;
            try {
                e = job.poll(30, TimeUnit.SECONDS);
            } catch (InterruptedException ex) {
                throw new IllegalStateException(ex);
            }
            assertThat(e).as("job stalled").isNotNull();
            if (e instanceof GenerationJob.Text && first < 0) first = System.nanoTime();
            if (e instanceof GenerationJob.Done) return new long[]{first, System.nanoTime()};
            assertThat(e).isNotInstanceOf(GenerationJob.Failed.class);
        }
    }

    @Test
    void requestsOnOneSlotDoNotSeeEachOther() throws Exception {
        try (OpenAiServer server = OpenAiServer.start(model, config().withParallel(1, 4))) {
            for (String prompt : List.of("Once upon a time", "The cat", "Once upon a time", "Once upon a", "The cat")) {
                Reference ref = completionReference(model, prompt, 24);
                Reply r = post(server, "/v1/completions", json("prompt", prompt, "max_tokens", 24, "temperature", 0));
                assertThat(r.json().path("choices").get(0).path("text").asText()).as(prompt).isEqualTo(ref.text());
                assertThat(r.json().path("usage").path("prompt_tokens").asInt()).isEqualTo(ref.promptTokens());
            }
        }
    }

    @Test
    void promptCacheReusesTheConversationPrefix() throws Exception {
        try (OpenAiServer server = OpenAiServer.start(model, config().withParallel(2, 4).withCachePrompt(true))) {
            List<ChatMessage> turn1 = List.of(ChatMessage.user("Tell me a story"));
            Reply r1 = post(server, "/v1/chat/completions", json("messages", user("Tell me a story"), "max_tokens", 20, "temperature", 0));
            String answer = r1.json().path("choices").get(0).path("message").path("content").asText();
            assertThat(answer).isEqualTo(chatReference(model, turn1, 20).text());
            List<ChatMessage> turn2 = List.of(ChatMessage.user("Tell me a story"), ChatMessage.assistant(answer), ChatMessage.user("More"));
            Reply r2 = post(server, "/v1/chat/completions", json("max_tokens", 20, "temperature", 0, "messages", List.of(
                    java.util.Map.of("role", "user", "content", "Tell me a story"), java.util.Map.of("role", "assistant", "content", answer),
                    java.util.Map.of("role", "user", "content", "More"))));
            Reference ref2 = chatReference(model, turn2, 20);
            assertThat(r2.json().path("usage").path("prompt_tokens").asInt()).isEqualTo(ref2.promptTokens());
            assertThat(r2.json().path("choices").get(0).path("message").path("content").asText()).isEqualTo(ref2.text());
            // an unrelated prompt afterwards is not affected by what the slots hold
            Reference ref3 = completionReference(model, "The cat", 20);
            Reply r3 = post(server, "/v1/completions", json("prompt", "The cat", "max_tokens", 20, "temperature", 0));
            assertThat(r3.json().path("choices").get(0).path("text").asText()).isEqualTo(ref3.text());
        }
    }

    @Test
    void longNonStreamingRequestOutlivesTheIdleTimeout() throws Exception {
        try (OpenAiServer server = OpenAiServer.start(model, config().withIdleTimeout(Duration.ofMillis(300)))) {
            long t0 = System.nanoTime();
            Reply r = post(server, "/v1/completions", json("prompt", "Once upon a time", "max_tokens", 700, "ignore_eos", true, "temperature", 0));
            long ms = (System.nanoTime() - t0) / 1_000_000;
            assertThat(r.status()).isEqualTo(200);
            assertThat(r.json().path("usage").path("completion_tokens").asInt()).isEqualTo(700);
            System.out.printf("700 tokens without I/O for %d ms against a 300 ms idle timeout%n", ms);
        }
    }

    @Test
    void streamingUtf8IsNeverSplit() throws Exception {
        try (OpenAiServer server = OpenAiServer.start(model, config())) {
            // whatever the model generates, every chunk must be valid standalone JSON text (the client parses each)
            Sse s = stream(server.baseUri().resolve("/v1/completions"), json("prompt", "Ünïcödé ✓ 猫", "max_tokens", 40, "temperature", 0,
                    "stream", true));
            assertThat(s.done()).isTrue();
            Reference ref = completionReference(model, "Ünïcödé ✓ 猫", 40);
            assertThat(s.text()).isEqualTo(ref.text());
            assertThat(s.text().getBytes(StandardCharsets.UTF_8)).isNotEmpty();
        }
    }
}
