package org.powerinfer4j.cli.server;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.powerinfer4j.engine.api.GenerationParams;
import org.powerinfer4j.engine.api.GenerationResult;
import org.powerinfer4j.engine.api.Model;
import org.powerinfer4j.engine.api.ModelOptions;
import org.powerinfer4j.engine.api.Session;
import org.powerinfer4j.engine.sampling.SamplingParams;
import org.powerinfer4j.engine.tokenizer.ChatMessage;
import org.powerinfer4j.engine.tokenizer.ChatPrompt;
import org.powerinfer4j.engine.tokenizer.ChatTemplates;

/** Shared pieces of the server tests: the test model, servers on free loopback ports, engine references, raw HTTP. */
final class ServerTestSupport {
    static final Path STORIES = Path.of(System.getProperty("powerinfer4j.testdata")).resolve("models/stories260K.gguf");
    static final String MODEL_ID = "stories260K";
    static final ObjectMapper JSON = new ObjectMapper();

    private ServerTestSupport() {}

    /** stories260K on one compute thread (the test machine's cores are shared); {@code ctx} 0 = the model's 512. */
    static Model openModel(int ctx) throws IOException {
        return Model.open(STORIES, ModelOptions.defaults().withThreads(1).withContextLength(ctx));
    }

    /** Loopback, any free port, the engine's default sampling (requests ask for temperature 0 where they compare). */
    static ServerConfig config() {
        return ServerConfig.defaults(MODEL_ID, GenerationParams.defaults()).withPort(0);
    }

    /** What the engine itself generates greedily from these tokens in a fresh session. */
    record Reference(String text, int promptTokens, int completionTokens, String finishReason) {}

    static Reference reference(Model model, int[] prompt, int maxTokens) {
        try (Session s = model.newSession()) {
            GenerationResult r = s.generate(prompt, GenerationParams.defaults().withMaxTokens(maxTokens).withSampling(SamplingParams.GREEDY), null);
            boolean eos = r.stopReason().equals("eos");
            // the end-of-generation token is sampled but is not part of the completion
            return new Reference(r.text(), prompt.length, r.generatedTokens().length - (eos ? 1 : 0), eos ? "stop" : "length");
        }
    }

    static Reference completionReference(Model model, String prompt, int maxTokens) {
        return reference(model, model.tokenizer().encode(prompt, true, false), maxTokens);
    }

    static Reference chatReference(Model model, List<ChatMessage> messages, int maxTokens) {
        int[] ids = ChatPrompt.tokenize(ChatTemplates.forGGUF(model.file()), model.tokenizer(), messages, true);
        return reference(model, ids, maxTokens);
    }

    // ---- raw HTTP ----

    static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(5)).build();

    record Reply(int status, HttpResponse<String> response, JsonNode json) {
        String header(String name) {
            return response.headers().firstValue(name).orElse(null);
        }
    }

    static Reply send(HttpRequest request) {
        try {
            HttpResponse<String> r = HTTP.send(request, HttpResponse.BodyHandlers.ofString());
            JsonNode json = null;
            String ct = r.headers().firstValue("content-type").orElse("");
            if (ct.startsWith("application/json")) json = JSON.readTree(r.body());
            return new Reply(r.statusCode(), r, json);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    static HttpRequest.Builder request(OpenAiServer server, String path) {
        return HttpRequest.newBuilder(server.baseUri().resolve(path)).timeout(Duration.ofSeconds(30));
    }

    static Reply post(OpenAiServer server, String path, String body) {
        return send(request(server, path).header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body)).build());
    }

    static Reply get(OpenAiServer server, String path) {
        return send(request(server, path).GET().build());
    }

    /** A streamed response read to its end: the parsed {@code data:} events (without [DONE]), and whether [DONE] came. */
    record Sse(int status, List<JsonNode> events, boolean done) {
        /** Concatenated chat deltas or completion texts. */
        String text() {
            StringBuilder sb = new StringBuilder();
            for (JsonNode e : events) {
                for (JsonNode c : e.path("choices")) {
                    if (c.has("delta")) sb.append(c.path("delta").path("content").asText(""));
                    else sb.append(c.path("text").asText(""));
                }
            }
            return sb.toString();
        }
    }

    static Sse stream(URI uri, String body) throws IOException, InterruptedException {
        HttpRequest req = HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(60)).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body)).build();
        HttpResponse<java.util.stream.Stream<String>> r = HTTP.send(req, HttpResponse.BodyHandlers.ofLines());
        List<JsonNode> events = new ArrayList<>();
        boolean done = false;
        try (java.util.stream.Stream<String> lines = r.body()) {
            for (String line : (Iterable<String>) lines::iterator) {
                if (!line.startsWith("data: ")) continue; // blank separators and ": ping" comments
                String data = line.substring(6);
                if (data.equals("[DONE]")) done = true;
                else events.add(JSON.readTree(data));
            }
        }
        return new Sse(r.statusCode(), events, done);
    }

    static String json(Object... keyValues) {
        var o = JSON.createObjectNode();
        for (int i = 0; i < keyValues.length; i += 2) o.set((String) keyValues[i], JSON.valueToTree(keyValues[i + 1]));
        return o.toString();
    }

    static List<java.util.Map<String, String>> user(String content) {
        return List.of(java.util.Map.of("role", "user", "content", content));
    }
}
