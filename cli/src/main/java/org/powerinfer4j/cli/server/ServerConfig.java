package org.powerinfer4j.cli.server;

import java.time.Duration;
import org.powerinfer4j.engine.api.GenerationParams;

/**
 * How {@link OpenAiServer} runs.
 *
 * @param host          address to bind (127.0.0.1 keeps it local)
 * @param port          TCP port; 0 = any free one ({@link OpenAiServer#port()} tells which)
 * @param parallel      slots: generations that advance concurrently (sharing one KV cache where it is on the host)
 * @param queue         admitted requests that may wait for a slot; beyond that → 429
 * @param apiKey        required {@code Authorization: Bearer} key for {@code /v1/*}; null = open
 * @param maxBodyBytes  request bodies over this → 413
 * @param idleTimeout   a connection with no I/O progress for this long is closed (slow or stalled clients)
 * @param pingInterval  while a stream has nothing to send, an SSE comment goes out this often; it keeps proxies
 *                      from timing out and reveals clients that have gone, so their queued job is dropped
 * @param cachePrompt   keep each slot's KV cache across requests and reuse the longest common prefix
 * @param modelId       the id {@code /v1/models} lists and responses echo when a request names none
 * @param defaults      generation settings used where a request sets nothing (the CLI's sampling flags)
 * @param defaultSeed   sampler seed for requests without {@code seed}; null = a different one per request
 * @param ctxPerSlot    the most tokens one slot's conversation may hold; 0 = the model's whole context ({@code -c},
 *                      which the slots share as one KV cache where the model's caches are on the host)
 */
public record ServerConfig(String host, int port, int parallel, int queue, String apiKey, long maxBodyBytes, Duration idleTimeout,
                           Duration pingInterval, boolean cachePrompt, String modelId, GenerationParams defaults, Long defaultSeed, int ctxPerSlot) {
    public ServerConfig {
        if (port < 0 || port > 65535) throw new IllegalArgumentException("--port must be in 0..65535, is " + port);
        if (parallel < 1) throw new IllegalArgumentException("--parallel must be >= 1, is " + parallel);
        if (queue < 0) throw new IllegalArgumentException("--queue must be >= 0, is " + queue);
        if (maxBodyBytes < 1 || maxBodyBytes > Integer.MAX_VALUE - 16)
            throw new IllegalArgumentException("--max-body must be in 1.." + (Integer.MAX_VALUE - 16) + " bytes, is " + maxBodyBytes);
        if (idleTimeout.isNegative() || idleTimeout.isZero()) throw new IllegalArgumentException("--timeout must be > 0");
        if (pingInterval.isNegative() || pingInterval.isZero()) throw new IllegalArgumentException("ping interval must be > 0");
        if (ctxPerSlot < 0) throw new IllegalArgumentException("--ctx-per-slot must be >= 0, is " + ctxPerSlot);
        if (apiKey != null && apiKey.isEmpty()) apiKey = null;
    }

    /** Defaults for a model id and generation settings: 127.0.0.1:8080, one slot, queue of 4, 4 MiB bodies, 60 s timeout. */
    public static ServerConfig defaults(String modelId, GenerationParams defaults) {
        return new ServerConfig("127.0.0.1", 8080, 1, 4, null, 4L << 20, Duration.ofSeconds(60), Duration.ofSeconds(1), false,
                modelId, defaults, null, 0);
    }

    public ServerConfig withPort(int p) { return new ServerConfig(host, p, parallel, queue, apiKey, maxBodyBytes, idleTimeout, pingInterval, cachePrompt, modelId, defaults, defaultSeed, ctxPerSlot); }
    public ServerConfig withParallel(int n, int q) { return new ServerConfig(host, port, n, q, apiKey, maxBodyBytes, idleTimeout, pingInterval, cachePrompt, modelId, defaults, defaultSeed, ctxPerSlot); }
    public ServerConfig withApiKey(String k) { return new ServerConfig(host, port, parallel, queue, k, maxBodyBytes, idleTimeout, pingInterval, cachePrompt, modelId, defaults, defaultSeed, ctxPerSlot); }
    public ServerConfig withMaxBodyBytes(long b) { return new ServerConfig(host, port, parallel, queue, apiKey, b, idleTimeout, pingInterval, cachePrompt, modelId, defaults, defaultSeed, ctxPerSlot); }
    public ServerConfig withIdleTimeout(Duration t) { return new ServerConfig(host, port, parallel, queue, apiKey, maxBodyBytes, t, pingInterval, cachePrompt, modelId, defaults, defaultSeed, ctxPerSlot); }
    public ServerConfig withPingInterval(Duration t) { return new ServerConfig(host, port, parallel, queue, apiKey, maxBodyBytes, idleTimeout, t, cachePrompt, modelId, defaults, defaultSeed, ctxPerSlot); }
    public ServerConfig withCtxPerSlot(int n) { return new ServerConfig(host, port, parallel, queue, apiKey, maxBodyBytes, idleTimeout, pingInterval, cachePrompt, modelId, defaults, defaultSeed, n); }
    public ServerConfig withCachePrompt(boolean c) { return new ServerConfig(host, port, parallel, queue, apiKey, maxBodyBytes, idleTimeout, pingInterval, c, modelId, defaults, defaultSeed, ctxPerSlot); }
}
