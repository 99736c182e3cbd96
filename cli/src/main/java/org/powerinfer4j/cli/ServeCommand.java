package org.powerinfer4j.cli;

import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import org.powerinfer4j.cli.server.OpenAiServer;
import org.powerinfer4j.cli.server.ServerConfig;
import org.powerinfer4j.engine.api.GenerationParams;
import org.powerinfer4j.engine.api.Model;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code serve}: an OpenAI-compatible HTTP server for one model. */
@Command(name = "serve", mixinStandardHelpOptions = true,
        description = {"Serve a model over an OpenAI-compatible HTTP API: POST /v1/chat/completions, POST /v1/completions "
                + "(streaming or not), GET /v1/models, GET /health.",
                "The sampling flags are defaults; requests override them (temperature, top_p, seed, max_tokens, stop)."})
public final class ServeCommand implements Callable<Integer> {
    @Mixin ModelOptionsMixin model;
    @Mixin SamplingMixin sampling;
    @Mixin SpeculationMixin speculation;

    @Option(names = "--host", defaultValue = "127.0.0.1", description = "Address to listen on (default: ${DEFAULT-VALUE}; 0.0.0.0 = every interface).")
    String host;

    @Option(names = "--port", defaultValue = "8080", description = "TCP port; 0 = any free port (default: ${DEFAULT-VALUE}).")
    int port;

    @Option(names = {"-np", "--parallel"}, defaultValue = "1", paramLabel = "N",
            description = "Slots: requests generated concurrently, their decode steps batched into shared passes; they share one KV cache of -c tokens in all (default: ${DEFAULT-VALUE}).")
    int parallel;

    @Option(names = "--ctx-per-slot", paramLabel = "N", defaultValue = "0",
            description = "The most tokens one slot's prompt and generation may hold; 0 = all of -c (default: ${DEFAULT-VALUE}).")
    int ctxPerSlot;

    @Option(names = "--queue", paramLabel = "Q", description = "Requests that may wait for a free slot; more get 429 (default: 4 x --parallel).")
    Integer queue;

    @Option(names = "--api-key", paramLabel = "KEY", description = "Require 'Authorization: Bearer KEY' on /v1/* (default: the POWERINFER4J_API_KEY environment variable, else none).")
    String apiKey;

    @Option(names = "--max-body", paramLabel = "BYTES", defaultValue = "4194304", description = "Largest request body accepted; larger → 413 (default: ${DEFAULT-VALUE}).")
    long maxBody;

    @Option(names = "--timeout", paramLabel = "SECONDS", defaultValue = "60",
            description = "Close connections that make no progress reading a request or taking a response for this long (default: ${DEFAULT-VALUE}).")
    int timeoutSeconds;

    @Option(names = {"-n", "--n-predict"}, paramLabel = "N", defaultValue = "-1",
            description = "Default max_tokens for requests that set none; -1 = until end of text or full context (default: ${DEFAULT-VALUE}).")
    int nPredict;

    @Option(names = "--cache-prompt", description = "Keep each slot's KV cache between requests and reuse the longest common prefix "
            + "(faster multi-turn chat; results may differ from a fresh evaluation in the last bits).")
    boolean cachePrompt;

    @Option(names = "--no-warmup",
            description = "Listen at once, without the warm-up (short throwaway generations for about 3 s that let the JIT compile the kernels before the first request).")
    boolean noWarmup;

    @Option(names = {"-a", "--alias"}, paramLabel = "NAME", description = "Model id in /v1/models and responses (default: the file name without .gguf).")
    String alias;

    @Override
    public Integer call() throws Exception {
        if (timeoutSeconds < 1) throw new IllegalArgumentException("--timeout must be >= 1 second, is " + timeoutSeconds);
        if (nPredict < -1 || nPredict == 0) throw new IllegalArgumentException("--n-predict must be -1 or >= 1, is " + nPredict);
        GenerationParams base = GenerationParams.defaults().withMaxTokens(nPredict).withSampling(sampling.toParams()); // checked before the load
        speculation.checkFlags();
        String key = apiKey != null ? apiKey : System.getenv("POWERINFER4J_API_KEY");
        java.nio.file.Path path = model.checkedPath();
        String id = alias != null ? alias : path.getFileName().toString().replaceFirst("(?i)\\.gguf$", "");
        try (Model m = Model.open(path, model.toOptions()); Model draft = speculation.openDraft(model, m)) {
            // every request's parameters start from these, so each slot speculates (its own draft session on one draft model)
            GenerationParams defaults = speculation.apply(base, draft);
            ServerConfig config = new ServerConfig(host, port, parallel, queue != null ? queue : 4 * parallel, key, maxBody,
                    Duration.ofSeconds(timeoutSeconds), Duration.ofSeconds(1), cachePrompt, id, defaults, sampling.seed, ctxPerSlot);
            if (!noWarmup) System.err.printf("warm-up: %d ms%n", m.warmUp());   // llama-server warms up before it listens too
            OpenAiServer server = OpenAiServer.start(m, config);
            CountDownLatch stopped = new CountDownLatch(1);
            Thread hook = new Thread(() -> {
                server.close();
                try {
                    stopped.await(); // keep the model open until the serving thread has left
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }, "serve-shutdown");
            Runtime.getRuntime().addShutdownHook(hook);
            System.err.printf("serving %s on %s/v1 (%d slot%s of up to %d tokens, %s, queue %d%s)%n", id, server.baseUri(), parallel,
                    parallel == 1 ? "" : "s", server.slotContext(), m.hostKvCache() ? "sharing a KV cache of " + m.contextLength() + " tokens"
                            : "each with a KV cache on the device", config.queue(), key != null ? ", API key required" : "");
            try {
                server.join();
            } finally {
                server.close();
                stopped.countDown();
            }
        }
        return 0;
    }
}
