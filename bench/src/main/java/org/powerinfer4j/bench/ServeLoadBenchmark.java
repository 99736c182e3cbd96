package org.powerinfer4j.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * Load against any OpenAI-compatible server — ours ({@code serve}) or {@code llama-server} — so the two are measured
 * by the same client: N concurrent streaming {@code /v1/completions} requests of {@code -n} tokens each
 * ({@code ignore_eos}, temperature 0), repeated for each N in {@code -np}, and per N the aggregate tokens/s, each
 * stream's tokens/s and the time to first token (p50/p99) over all requests of all rounds.
 *
 * <pre>
 *   java -cp bench/target/benchmarks.jar org.powerinfer4j.bench.ServeLoadBenchmark URL [-np 1,4,8] [-n 64] [-r 3] [--warmup 2] [--label NAME]
 * </pre>
 * URL is the server's base (e.g. {@code http://127.0.0.1:8080}). Each round sends N requests at once, each with
 * its own prompt (no prefix shared across requests beyond "Once upon a time"), and waits for all. The first
 * round of each N is a warm-up and not counted, and before everything {@code --warmup} rounds of the largest N
 * run uncounted. One line per N, Markdown table rows.
 */
public final class ServeLoadBenchmark {
    private ServeLoadBenchmark() {}

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(10)).build();
    private static final String[] SUBJECTS = {"a little girl", "a big dog", "a small bird", "a brave boy", "a happy cat", "an old man", "a tiny frog", "a red car",
            "a shy fox", "a kind bear", "a young queen", "a lost duck", "a funny clown", "a green tree", "a fast horse", "a sleepy owl"};

    /** One request: when its first token arrived and how many tokens came, both from the moment it was sent. */
    record Stream(long firstTokenNanos, long totalNanos, int tokens) {}

    public static void main(String[] args) throws Exception {
        if (args.length < 1 || args[0].startsWith("-")) {
            System.err.println("usage: ServeLoadBenchmark URL [-np 1,4,8] [-n 64] [-r 3] [--warmup 2] [--label NAME]");
            System.exit(2);
        }
        URI base = URI.create(args[0].endsWith("/") ? args[0] : args[0] + "/");
        int[] parallel = {1, 4, 8};
        int tokens = 64, rounds = 3, warmup = 2;
        String label = base.toString();
        for (int i = 1; i < args.length; i++) {
            switch (args[i]) {
                case "-np" -> parallel = Arrays.stream(args[++i].split(",")).mapToInt(Integer::parseInt).toArray();
                case "-n" -> tokens = Integer.parseInt(args[++i]);
                case "-r" -> rounds = Integer.parseInt(args[++i]);
                case "--label" -> label = args[++i];
                case "--warmup" -> warmup = Integer.parseInt(args[++i]);
                default -> throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        URI uri = base.resolve("v1/completions");
        // a JIT-compiled server before the first measurement (ours compiles its kernels in the first seconds)
        int widest = Arrays.stream(parallel).max().orElse(1);
        for (int w = 0; w < warmup; w++) round(uri, widest, tokens, 100 + w);
        System.out.println("| server | streams | aggregate t/s | per stream t/s | TTFT p50 ms | TTFT p99 ms | requests |");
        System.out.println("| --- | --- | --- | --- | --- | --- | --- |");
        for (int n : parallel) {
            List<Stream> all = new ArrayList<>();
            double wallSum = 0;
            long tokenSum = 0;
            for (int r = 0; r <= rounds; r++) {
                long t0 = System.nanoTime();
                List<Stream> got = round(uri, n, tokens, r);
                double wall = (System.nanoTime() - t0) / 1e9;
                if (r == 0) continue;   // warm-up
                all.addAll(got);
                wallSum += wall;
                for (Stream s : got) tokenSum += s.tokens();
            }
            long[] ttft = all.stream().mapToLong(Stream::firstTokenNanos).sorted().toArray();
            double perStream = all.stream().mapToDouble(s -> s.tokens() / (s.totalNanos() / 1e9)).average().orElse(0);
            System.out.printf(Locale.ROOT, "| %s | %d | %.1f | %.1f | %.0f | %.0f | %d |%n", label, n, tokenSum / wallSum, perStream,
                    percentile(ttft, 0.50) / 1e6, percentile(ttft, 0.99) / 1e6, all.size());
        }
    }

    private static List<Stream> round(URI uri, int n, int tokens, int round) throws Exception {
        CountDownLatch go = new CountDownLatch(1);
        List<Future<Stream>> futures = new ArrayList<>();
        try (var pool = Executors.newVirtualThreadPerTaskExecutor()) {
            for (int i = 0; i < n; i++) {
                String prompt = "Once upon a time, there was " + SUBJECTS[(i + round * 7) % SUBJECTS.length] + " number " + (round * 100 + i) + ".";
                futures.add(pool.submit(() -> {
                    go.await();
                    return stream(uri, prompt, tokens);
                }));
            }
            go.countDown();
        }
        List<Stream> out = new ArrayList<>();
        for (Future<Stream> f : futures) out.add(f.get());
        return out;
    }

    private static Stream stream(URI uri, String prompt, int tokens) throws Exception {
        String body = JSON.writeValueAsString(Map.of("prompt", prompt, "max_tokens", tokens, "temperature", 0, "stream", true, "ignore_eos", true,
                "stream_options", Map.of("include_usage", true)));
        HttpRequest req = HttpRequest.newBuilder(uri).timeout(Duration.ofMinutes(5)).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body)).build();
        long t0 = System.nanoTime();
        HttpResponse<java.util.stream.Stream<String>> r = HTTP.send(req, HttpResponse.BodyHandlers.ofLines());
        if (r.statusCode() != 200) throw new IllegalStateException(uri + " answered " + r.statusCode());
        long first = -1;
        int pieces = 0, usage = -1;
        try (var lines = r.body()) {
            for (String line : (Iterable<String>) lines::iterator) {
                if (!line.startsWith("data: ") || line.equals("data: [DONE]")) continue;
                JsonNode e = JSON.readTree(line.substring(6));
                for (JsonNode c : e.path("choices")) {
                    if (!c.path("text").asText("").isEmpty()) {
                        if (first < 0) first = System.nanoTime() - t0;
                        pieces++;
                    }
                }
                if (e.path("usage").isObject()) usage = e.path("usage").path("completion_tokens").asInt();
            }
        }
        // servers merge or split pieces differently; the usage count is the tokens generated where it is sent
        return new Stream(first < 0 ? System.nanoTime() - t0 : first, System.nanoTime() - t0, usage >= 0 ? usage : pieces);
    }

    static double percentile(long[] sorted, double p) {
        if (sorted.length == 0) return 0;
        int i = (int) Math.ceil(p * sorted.length) - 1;
        return sorted[Math.max(0, Math.min(sorted.length - 1, i))];
    }
}
