package org.powerinfer4j.cli.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.powerinfer4j.cli.server.ServerTestSupport.*;

import java.io.ByteArrayInputStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.powerinfer4j.engine.api.Model;

/**
 * Every error path over raw HTTP: OpenAI-shaped JSON bodies with the right status, never a stack trace, never a
 * hung connection. The server requires an API key, has one slot and no queue, and a 64 KiB body limit.
 */
@Timeout(120)
class ServerErrorsTest {
    static final String KEY = "sk-test-123";
    static Model model;
    static OpenAiServer server;

    @BeforeAll
    static void start() throws Exception {
        model = openModel(4096); // room for a generation long enough to hold the only slot
        server = OpenAiServer.start(model, config().withParallel(1, 0).withApiKey(KEY).withMaxBodyBytes(64 * 1024));
    }

    @AfterAll
    static void stop() {
        if (server != null) server.close();
        if (model != null) model.close();
    }

    static Reply postWithKey(String path, String body) {
        return send(request(server, path).header("Authorization", "Bearer " + KEY).POST(HttpRequest.BodyPublishers.ofString(body)).build());
    }

    /** The OpenAI error shape, and nothing that looks like a Java stack trace. */
    static void assertError(Reply r, int status, String param) {
        assertThat(r.status()).as(r.response().body()).isEqualTo(status);
        assertThat(r.header("content-type")).startsWith("application/json");
        var err = r.json().path("error");
        assertThat(err.path("message").asText()).isNotBlank();
        assertThat(err.path("type").asText()).isNotBlank();
        assertThat(err.has("param")).isTrue();
        assertThat(err.has("code")).isTrue();
        if (param != null) assertThat(err.path("param").asText()).isEqualTo(param);
        assertThat(r.response().body()).doesNotContain("\tat ", "Exception", "org.powerinfer4j", "org.eclipse");
    }

    @Test
    void malformedJson() {
        assertError(postWithKey("/v1/chat/completions", "{\"messages\": [}"), 400, null);
        assertError(postWithKey("/v1/completions", "{\"prompt\":\"a\"} trailing"), 400, null);
    }

    @Test
    void emptyOrNonObjectBody() {
        assertError(postWithKey("/v1/completions", ""), 400, null);
        assertError(postWithKey("/v1/completions", "[1,2]"), 400, null);
        assertError(postWithKey("/v1/completions", "\"text\""), 400, null);
    }

    @Test
    void missingRequiredFields() {
        assertError(postWithKey("/v1/chat/completions", "{\"model\":\"x\"}"), 400, "messages");
        assertError(postWithKey("/v1/completions", "{\"model\":\"x\"}"), 400, "prompt");
        assertError(postWithKey("/v1/chat/completions", "{\"messages\":[]}"), 400, "messages");
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "/v1/completions      | {\"prompt\":5}                                              | prompt",
            "/v1/completions      | {\"prompt\":[\"a\",\"b\"]}                                  | prompt",
            "/v1/completions      | {\"prompt\":\"a\",\"max_tokens\":\"ten\"}                   | max_tokens",
            "/v1/completions      | {\"prompt\":\"a\",\"max_tokens\":1.5}                       | max_tokens",
            "/v1/completions      | {\"prompt\":\"a\",\"max_tokens\":0}                         | max_tokens",
            "/v1/completions      | {\"prompt\":\"a\",\"max_completion_tokens\":-3}             | max_completion_tokens",
            "/v1/completions      | {\"prompt\":\"a\",\"temperature\":\"hot\"}                  | temperature",
            "/v1/completions      | {\"prompt\":\"a\",\"temperature\":3}                        | temperature",
            "/v1/completions      | {\"prompt\":\"a\",\"top_p\":1.5}                            | top_p",
            "/v1/completions      | {\"prompt\":\"a\",\"seed\":\"x\"}                           | seed",
            "/v1/completions      | {\"prompt\":\"a\",\"stream\":\"yes\"}                       | stream",
            "/v1/completions      | {\"prompt\":\"a\",\"stop\":5}                               | stop",
            "/v1/completions      | {\"prompt\":\"a\",\"stop\":[\"a\",\"b\",\"c\",\"d\",\"e\"]} | stop",
            "/v1/completions      | {\"prompt\":\"a\",\"n\":2}                                  | n",
            "/v1/completions      | {\"prompt\":\"a\",\"model\":7}                              | model",
            "/v1/completions      | {\"prompt\":\"a\",\"stream_options\":{\"include_usage\":1}} | stream_options.include_usage",
            "/v1/chat/completions | {\"messages\":\"hi\"}                                       | messages",
            "/v1/chat/completions | {\"messages\":[\"hi\"]}                                     | messages[0]",
            "/v1/chat/completions | {\"messages\":[{\"content\":\"hi\"}]}                       | messages[0].role",
            "/v1/chat/completions | {\"messages\":[{\"role\":\"user\",\"content\":5}]}          | messages[0].content",
            "/v1/chat/completions | {\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\"}]}]} | messages[0].content[0]",
    })
    void wrongTypesAndValuesNameTheField(String path, String body, String param) {
        Reply r = postWithKey(path, body);
        assertError(r, 400, param);
        assertThat(r.json().path("error").path("type").asText()).isEqualTo("invalid_request_error");
    }

    @Test
    void promptLongerThanTheContext() {
        String prompt = "the cat sat on the mat. ".repeat(800); // far over 4096 tokens, under the body limit
        Reply r = postWithKey("/v1/completions", json("prompt", prompt));
        assertError(r, 400, "prompt");
        assertThat(r.json().path("error").path("code").asText()).isEqualTo("context_length_exceeded");
        Reply c = postWithKey("/v1/chat/completions", json("messages", user(prompt)));
        assertError(c, 400, "messages");
    }

    @Test
    void apiKeyRequiredOnV1ButNotOnHealth() {
        Reply none = post(server, "/v1/completions", json("prompt", "a", "max_tokens", 1));
        assertError(none, 401, null);
        assertThat(none.json().path("error").path("code").asText()).isEqualTo("invalid_api_key");
        Reply wrong = send(request(server, "/v1/models").header("Authorization", "Bearer sk-wrong").GET().build());
        assertError(wrong, 401, null);
        Reply right = send(request(server, "/v1/models").header("Authorization", "Bearer " + KEY).GET().build());
        assertThat(right.status()).isEqualTo(200);
        assertThat(get(server, "/health").status()).isEqualTo(200);
    }

    @Test
    void unknownRoute() {
        assertError(send(request(server, "/v1/embeddings").header("Authorization", "Bearer " + KEY)
                .POST(HttpRequest.BodyPublishers.ofString("{}")).build()), 404, null);
        assertError(get(server, "/"), 404, null);
        assertError(get(server, "/index.html"), 404, null);
    }

    @Test
    void wrongMethod() {
        Reply r = send(request(server, "/v1/chat/completions").header("Authorization", "Bearer " + KEY).GET().build());
        assertError(r, 405, null);
        assertThat(r.header("allow")).isEqualTo("POST");
        Reply d = send(request(server, "/health").DELETE().build());
        assertError(d, 405, null);
        assertThat(d.header("allow")).isEqualTo("GET");
    }

    @Test
    void bodyOverTheLimit() {
        String big = json("prompt", "x".repeat(100 * 1024));
        assertError(postWithKey("/v1/completions", big), 413, null);
        // without a Content-Length (chunked), the limit is enforced while reading
        byte[] bytes = big.getBytes(StandardCharsets.UTF_8);
        Reply chunked = send(request(server, "/v1/completions").header("Authorization", "Bearer " + KEY)
                .POST(HttpRequest.BodyPublishers.ofInputStream(() -> new ByteArrayInputStream(bytes))).build());
        assertError(chunked, 413, null);
    }

    @Test
    void busySlotAndFullQueueGive429WithRetryAfter() throws Exception {
        // hold the only slot with a long generation, then ask again
        HttpRequest longOne = request(server, "/v1/completions").header("Authorization", "Bearer " + KEY)
                .POST(HttpRequest.BodyPublishers.ofString(json("prompt", "Once upon a time", "ignore_eos", true, "stream", true))).build();
        HttpResponse<InputStream> held = HTTP.send(longOne, HttpResponse.BodyHandlers.ofInputStream());
        try (InputStream in = held.body()) {
            assertThat(held.statusCode()).isEqualTo(200);
            assertThat(new String(in.readNBytes(64), StandardCharsets.UTF_8)).startsWith("data: ");
            Reply r = postWithKey("/v1/completions", json("prompt", "Hello", "max_tokens", 2));
            assertError(r, 429, null);
            assertThat(r.header("retry-after")).isEqualTo("1");
        }
        // the held stream was abandoned: its generation is cancelled and the slot serves again
        long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        Reply ok;
        do {
            Thread.sleep(50);
            ok = postWithKey("/v1/completions", json("prompt", "Hello", "max_tokens", 2));
        } while (ok.status() == 429 && System.nanoTime() < deadline);
        assertThat(ok.status()).isEqualTo(200);
    }

    @Test
    void stalledRequestBodyIsTimedOut() throws Exception {
        try (OpenAiServer quick = OpenAiServer.start(model, config().withIdleTimeout(Duration.ofMillis(500)));
             Socket s = new Socket("127.0.0.1", quick.port())) {
            s.setSoTimeout(10_000); // the server must end it long before this
            OutputStream out = s.getOutputStream();
            out.write(("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"prompt\":")
                    .getBytes(StandardCharsets.US_ASCII));
            out.flush();
            long t0 = System.nanoTime();
            byte[] answer = s.getInputStream().readAllBytes(); // returns when the server closes the connection
            assertThat(Duration.ofNanos(System.nanoTime() - t0)).isLessThan(Duration.ofSeconds(8));
            String text = new String(answer, StandardCharsets.UTF_8);
            if (!text.isEmpty()) assertThat(text).startsWith("HTTP/1.1 4").doesNotContain("Exception");
        }
    }

    @Test
    void malformedHttpGetsJsonError() throws Exception {
        try (Socket s = new Socket("127.0.0.1", server.port())) {
            s.setSoTimeout(10_000);
            s.getOutputStream().write("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: nope\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            String text = new String(s.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertThat(text).startsWith("HTTP/1.1 400").contains("application/json").contains("\"error\"").doesNotContain("<html");
        }
    }
}
