package org.powerinfer4j.cli.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;
import static org.powerinfer4j.cli.server.ServerTestSupport.*;

import com.fasterxml.jackson.databind.JsonNode;
import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.models.chat.completions.ChatCompletion;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import com.openai.models.chat.completions.ChatCompletionTokenLogprob;
import com.openai.models.completions.Completion;
import com.openai.models.completions.CompletionChoice;
import com.openai.models.completions.CompletionCreateParams;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.powerinfer4j.engine.api.Model;
import org.powerinfer4j.engine.api.Session;
import org.powerinfer4j.engine.tokenizer.ChatMessage;
import org.powerinfer4j.engine.tokenizer.ChatPrompt;
import org.powerinfer4j.engine.tokenizer.ChatTemplates;

/**
 * {@code logprobs}/{@code top_logprobs}/{@code n_probs} and prompts of token ids: the reported log-probabilities equal a
 * log-softmax computed here from {@link Session#evaluate}'s logits, over raw HTTP (streamed and not) and the OpenAI SDK.
 */
@Timeout(120)
class ServerLogprobsTest {
    static Model model;
    static OpenAiServer server;
    static OpenAIClient openai;

    @BeforeAll
    static void start() throws Exception {
        model = openModel(0);
        server = OpenAiServer.start(model, config().withParallel(2, 8));
        openai = OpenAIOkHttpClient.builder().baseUrl(server.baseUri() + "/v1").apiKey("none").maxRetries(0).timeout(Duration.ofSeconds(30)).build();
    }

    @AfterAll
    static void stop() {
        if (openai != null) openai.close();
        if (server != null) server.close();
        if (model != null) model.close();
    }

    /** One greedy step computed here: the token chosen and the log-softmax of the logits it came from. */
    record Step(int token, double[] logSoftmax) {
        double logprob() {
            return logSoftmax[token];
        }

        /** Token ids by falling log-probability (ties: lower id first). */
        int[] ranked(int n) {
            Integer[] ids = new Integer[logSoftmax.length];
            for (int i = 0; i < ids.length; i++) ids[i] = i;
            Arrays.sort(ids, (a, b) -> logSoftmax[a] != logSoftmax[b] ? Double.compare(logSoftmax[b], logSoftmax[a]) : Integer.compare(a, b));
            return Arrays.stream(ids).limit(n).mapToInt(Integer::intValue).toArray();
        }
    }

    /** Greedy decoding by hand: evaluate, log-softmax in double, argmax, feed it back. */
    static List<Step> reference(int[] prompt, int steps) {
        List<Step> out = new ArrayList<>();
        try (Session s = model.newSession()) {
            float[] logits = s.evaluate(prompt);
            for (int i = 0; i < steps; i++) {
                double max = Double.NEGATIVE_INFINITY;
                for (float l : logits) max = Math.max(max, l);
                double z = 0;
                for (float l : logits) z += Math.exp(l - max);
                double[] ls = new double[logits.length];
                int best = 0;
                for (int v = 0; v < logits.length; v++) {
                    ls[v] = logits[v] - max - Math.log(z);
                    if (logits[v] > logits[best]) best = v;
                }
                out.add(new Step(best, ls));
                logits = s.evaluate(best);
            }
        }
        return out;
    }

    static String text(int token) {
        return new String(model.tokenizer().tokenBytes(token), StandardCharsets.UTF_8);
    }

    static int[] prompt(String text) {
        return model.tokenizer().encode(text, true, false);
    }

    @Test
    void completionLogprobsEqualTheLogSoftmaxOfTheLogits() {
        List<Step> ref = reference(prompt("Once upon a time"), 8);
        Reply r = post(server, "/v1/completions", json("prompt", "Once upon a time", "max_tokens", 8, "temperature", 0, "logprobs", 3));
        assertThat(r.status()).isEqualTo(200);
        JsonNode c = r.json().path("choices").get(0), lp = c.path("logprobs");
        assertThat(lp.path("tokens")).hasSize(8);
        StringBuilder joined = new StringBuilder();
        for (int i = 0; i < 8; i++) {
            Step s = ref.get(i);
            assertThat(lp.path("tokens").get(i).asText()).isEqualTo(text(s.token()));
            assertThat(lp.path("token_logprobs").get(i).asDouble()).as("token %d", i).isCloseTo(s.logprob(), within(1e-9));
            assertThat(lp.path("text_offset").get(i).asInt()).isEqualTo(joined.length());
            joined.append(text(s.token()));
            JsonNode top = lp.path("top_logprobs").get(i);
            int[] want = s.ranked(3);
            List<String> keys = new ArrayList<>();
            top.fieldNames().forEachRemaining(keys::add);
            assertThat(keys).containsExactly(text(want[0]), text(want[1]), text(want[2]));
            for (int w : want) assertThat(top.path(text(w)).asDouble()).isCloseTo(s.logSoftmax()[w], within(1e-9));
        }
        assertThat(c.path("text").asText()).isEqualTo(joined.toString());
    }

    @Test
    void chatStreamCarriesEachTokensLogprobsInItsChunk() throws Exception {
        List<ChatMessage> msgs = List.of(ChatMessage.user("Tell me a story"));
        int[] ids = ChatPrompt.tokenize(ChatTemplates.forGGUF(model.file()), model.tokenizer(), msgs, true);
        List<Step> ref = reference(ids, 10);
        Sse sse = stream(server.baseUri().resolve("/v1/chat/completions"),
                json("messages", user("Tell me a story"), "max_tokens", 10, "temperature", 0, "stream", true, "logprobs", true, "top_logprobs", 2));
        assertThat(sse.done()).isTrue();
        List<JsonNode> entries = new ArrayList<>();
        StringBuilder fromEntries = new StringBuilder();
        for (JsonNode e : sse.events())
            for (JsonNode c : e.path("choices")) {
                StringBuilder chunk = new StringBuilder();
                for (JsonNode t : c.path("logprobs").path("content")) {
                    entries.add(t);
                    chunk.append(t.path("token").asText());
                }
                // a chunk's entries are the tokens of its own text
                assertThat(chunk.toString()).isEqualTo(c.path("delta").path("content").asText(""));
                fromEntries.append(chunk);
            }
        assertThat(entries).hasSize(10);
        assertThat(fromEntries.toString()).isEqualTo(sse.text());
        for (int i = 0; i < 10; i++) {
            Step s = ref.get(i);
            JsonNode t = entries.get(i);
            assertThat(t.path("token").asText()).isEqualTo(text(s.token()));
            assertThat(t.path("logprob").asDouble()).isCloseTo(s.logprob(), within(1e-9));
            byte[] bytes = model.tokenizer().tokenBytes(s.token());
            assertThat(t.path("bytes")).hasSize(bytes.length);
            for (int b = 0; b < bytes.length; b++) assertThat(t.path("bytes").get(b).asInt()).isEqualTo(bytes[b] & 0xFF);
            int[] want = s.ranked(2);
            assertThat(t.path("top_logprobs")).hasSize(2);
            for (int k = 0; k < 2; k++) {
                assertThat(t.path("top_logprobs").get(k).path("token").asText()).isEqualTo(text(want[k]));
                assertThat(t.path("top_logprobs").get(k).path("logprob").asDouble()).isCloseTo(s.logSoftmax()[want[k]], within(1e-9));
            }
        }
    }

    @Test
    void logprobsDoNotDependOnTheSamplingSettings() {
        // the distribution before temperature and penalties: a sampled run reports the model's log-probs of what it drew
        Reply r = post(server, "/v1/completions", json("prompt", "Once upon a time", "max_tokens", 6, "temperature", 1.5, "seed", 3,
                "repeat_penalty", 1.3, "top_k", 5, "logprobs", 0));
        assertThat(r.status()).isEqualTo(200);
        JsonNode lp = r.json().path("choices").get(0).path("logprobs");
        int[] p = prompt("Once upon a time");
        try (Session s = model.newSession()) {
            float[] logits = s.evaluate(p);
            for (int i = 0; i < 6; i++) {
                String tok = lp.path("tokens").get(i).asText();
                double got = lp.path("token_logprobs").get(i).asDouble();
                double max = Double.NEGATIVE_INFINITY, z = 0;
                for (float l : logits) max = Math.max(max, l);
                for (float l : logits) z += Math.exp(l - max);
                // the id is not in the response: of the tokens with this text (several may share one), the one whose
                // raw log-softmax is the reported value — there must be one
                int id = -1;
                for (int v = 0; v < logits.length && id < 0; v++)
                    if (text(v).equals(tok) && Math.abs(logits[v] - max - Math.log(z) - got) < 1e-9) id = v;
                assertThat(id).as("a token '%s' with log-prob %s under the raw logits", tok, got).isNotNegative();
                assertThat(lp.path("top_logprobs").get(i).size()).isZero();
                logits = s.evaluate(id);
            }
        }
    }

    @Test
    void openAiSdkChatLogprobs() {
        List<ChatMessage> msgs = List.of(ChatMessage.user("Tell me a story about a cat"));
        int[] ids = ChatPrompt.tokenize(ChatTemplates.forGGUF(model.file()), model.tokenizer(), msgs, true);
        List<Step> ref = reference(ids, 6);
        ChatCompletion c = openai.chat().completions().create(ChatCompletionCreateParams.builder().model(MODEL_ID)
                .addUserMessage("Tell me a story about a cat").temperature(0.0).maxCompletionTokens(6).logprobs(true).topLogprobs(3).build());
        c.validate();
        List<ChatCompletionTokenLogprob> content = c.choices().getFirst().logprobs().orElseThrow().content().orElseThrow();
        assertThat(content).hasSize(6);
        for (int i = 0; i < 6; i++) {
            assertThat(content.get(i).token()).isEqualTo(text(ref.get(i).token()));
            assertThat(content.get(i).logprob()).isCloseTo(ref.get(i).logprob(), within(1e-9));
            assertThat(content.get(i).topLogprobs()).hasSize(3);
            assertThat(content.get(i).topLogprobs().getFirst().token()).isEqualTo(text(ref.get(i).ranked(1)[0]));
        }
    }

    @Test
    void openAiSdkCompletionFromTokenIdsWithLogprobs() {
        int[] ids = prompt("The little dog");
        List<Step> ref = reference(ids, 5);
        Completion c = openai.completions().create(CompletionCreateParams.builder().model(MODEL_ID)
                .prompt(CompletionCreateParams.Prompt.ofArrayOfTokens(Arrays.stream(ids).mapToObj(i -> (long) i).toList()))
                .maxTokens(5).temperature(0.0).logprobs(2).build());
        c.validate();
        CompletionChoice choice = c.choices().getFirst();
        assertThat(choice.text()).isEqualTo(ref.stream().map(s -> text(s.token())).reduce("", String::concat));
        assertThat(c.usage().orElseThrow().promptTokens()).isEqualTo(ids.length);
        CompletionChoice.Logprobs lp = choice.logprobs().orElseThrow();
        assertThat(lp.tokenLogprobs().orElseThrow()).hasSize(5);
        for (int i = 0; i < 5; i++) assertThat(lp.tokenLogprobs().orElseThrow().get(i)).isCloseTo(ref.get(i).logprob(), within(1e-9));
    }

    @Test
    void nProbsAsksForLogprobsToo() {
        Reply r = post(server, "/v1/completions", json("prompt", "Once upon a time", "max_tokens", 3, "temperature", 0, "n_probs", 4));
        assertThat(r.status()).isEqualTo(200);
        JsonNode lp = r.json().path("choices").get(0).path("logprobs");
        assertThat(lp.path("tokens")).hasSize(3);
        assertThat(lp.path("top_logprobs").get(0).size()).isEqualTo(4);
        Reply none = post(server, "/v1/completions", json("prompt", "Once upon a time", "max_tokens", 3, "temperature", 0));
        assertThat(none.json().path("choices").get(0).path("logprobs").isNull()).isTrue();
    }

    @Test
    void tokenIdPromptsAndTheirErrors() {
        int[] ids = prompt("Once upon a time");
        Reference want = ServerTestSupport.reference(model, ids, 6);
        Reply r = post(server, "/v1/completions", json("prompt", ids, "max_tokens", 6, "temperature", 0));
        assertThat(r.status()).isEqualTo(200);
        assertThat(r.json().path("choices").get(0).path("text").asText()).isEqualTo(want.text());
        Reply nested = post(server, "/v1/completions", json("prompt", List.of(ids), "max_tokens", 6, "temperature", 0));
        assertThat(nested.json().path("choices").get(0).path("text").asText()).as("[[ids]]: one prompt").isEqualTo(want.text());
        for (Object bad : List.of(List.of(ids, ids), List.of(1, 2, 100_000), List.of(1, -1), List.of(1, 2.5))) {
            Reply e = post(server, "/v1/completions", json("prompt", bad, "max_tokens", 2));
            assertThat(e.status()).as("prompt %s", bad).isEqualTo(400);
            assertThat(e.json().path("error").path("param").asText()).startsWith("prompt");
        }
        for (Map<String, Object> bad : List.of(Map.<String, Object>of("top_logprobs", 2), Map.<String, Object>of("logprobs", true, "top_logprobs", 21),
                Map.<String, Object>of("logprobs", "yes"))) {
            var body = JSON.createObjectNode();
            body.set("messages", JSON.valueToTree(user("hi")));
            bad.forEach((k, v) -> body.set(k, JSON.valueToTree(v)));
            Reply e = post(server, "/v1/chat/completions", body.toString());
            assertThat(e.status()).as("%s", bad).isEqualTo(400);
        }
        assertThat(post(server, "/v1/completions", json("prompt", "x", "logprobs", true)).status()).as("completions: an integer").isEqualTo(400);
    }
}
