package org.powerinfer4j.cli.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.powerinfer4j.cli.server.ServerTestSupport.*;

import java.net.InetSocketAddress;
import java.net.Socket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.powerinfer4j.engine.api.Model;

/**
 * Hostile sizes (#17): a 10 MB prompt, 10,000 messages, {@code max_tokens} of 10^9 and 1,000 connections that never
 * send. Each is refused with a clear 4xx or served within the context, and the server keeps answering others.
 * The model's context is 64 tokens, so a generation that runs to the end of it is short.
 */
@Timeout(180)
class ServerLimitsTest {
    static final int CONTEXT = 64;
    static Model model;
    /** The default body limit (4 MiB, {@code --max-body}). */
    static OpenAiServer server;

    @BeforeAll
    static void start() throws Exception {
        model = openModel(CONTEXT);
        server = OpenAiServer.start(model, config().withParallel(1, 4));
    }

    @AfterAll
    static void stop() {
        if (server != null) server.close();
        if (model != null) model.close();
    }

    private static void assertStillServes(OpenAiServer s) {
        Reply ok = post(s, "/v1/completions", json("prompt", "Once upon a time", "max_tokens", 2, "temperature", 0));
        assertThat(ok.status()).as(ok.response().body()).isEqualTo(200);
        assertThat(ok.json().path("usage").path("completion_tokens").asInt()).isEqualTo(2);
    }

    private static void assertError(Reply r, int status, String code, String messagePart) {
        assertThat(r.status()).as(r.response().body()).isEqualTo(status);
        var err = r.json().path("error");
        assertThat(err.path("code").asText()).isEqualTo(code);
        assertThat(err.path("message").asText()).contains(messagePart).doesNotContain("\n");
        assertThat(r.response().body()).doesNotContain("Exception", "\tat ");
    }

    @Test
    void tenMegabytePromptIsRefusedAndTheServerStaysUp() throws Exception {
        String prompt = "the cat sat on the mat. ".repeat(10_000_000 / 24);
        // over the default body limit: 413 before the body is parsed
        assertError(post(server, "/v1/completions", json("prompt", prompt)), 413, "request_too_large", "exceeds the limit of 4194304 bytes");
        assertStillServes(server);
        // with the limit raised it is parsed, and is far longer than the context: 400, quickly
        try (OpenAiServer roomy = OpenAiServer.start(model, config().withMaxBodyBytes(16L << 20))) {
            long t0 = System.nanoTime();
            assertError(post(roomy, "/v1/completions", json("prompt", prompt)), 400, "context_length_exceeded", "the context is " + CONTEXT + " tokens");
            assertThat(Duration.ofNanos(System.nanoTime() - t0)).isLessThan(Duration.ofSeconds(30));
            assertStillServes(roomy);
        }
    }

    @Test
    void tenThousandMessagesAreRefusedAsLongerThanTheContext() {
        List<Map<String, String>> messages = new ArrayList<>();
        for (int i = 0; i < 10_000; i++) messages.add(Map.of("role", i % 2 == 0 ? "user" : "assistant", "content", "hi " + i));
        long t0 = System.nanoTime();
        Reply r = post(server, "/v1/chat/completions", json("messages", messages));
        assertError(r, 400, "context_length_exceeded", "the context is " + CONTEXT + " tokens");
        assertThat(Duration.ofNanos(System.nanoTime() - t0)).isLessThan(Duration.ofSeconds(30));
        assertStillServes(server);
    }

    /** As llama-server: a max_tokens beyond the context is accepted and generation stops when the context is full. */
    @Test
    void billionMaxTokensIsCappedByTheContext() {
        Reply r = post(server, "/v1/completions", json("prompt", "Once upon a time", "max_tokens", 1_000_000_000, "ignore_eos", true, "temperature", 0));
        assertThat(r.status()).as(r.response().body()).isEqualTo(200);
        var usage = r.json().path("usage");
        // every cache position is used; the last token is sampled from the full context and needs no position of its own
        assertThat(usage.path("prompt_tokens").asInt() + usage.path("completion_tokens").asInt()).isEqualTo(CONTEXT + 1);
        assertThat(r.json().path("choices").path(0).path("finish_reason").asText()).isEqualTo("length");
    }

    @Test
    void thousandSilentConnectionsDoNotStarveOtherClients() throws Exception {
        List<Socket> idle = new ArrayList<>();
        try {
            for (int i = 0; i < 1000; i++) {
                Socket s = new Socket();
                s.connect(new InetSocketAddress("127.0.0.1", server.port()), 5_000);
                idle.add(s);
            }
            long t0 = System.nanoTime();
            assertStillServes(server);
            assertThat(get(server, "/health").status()).isEqualTo(200);
            assertThat(Duration.ofNanos(System.nanoTime() - t0)).isLessThan(Duration.ofSeconds(5));
        } finally {
            for (Socket s : idle) s.close();
        }
    }
}
