package org.powerinfer4j.cli.server;

import com.fasterxml.jackson.core.JacksonException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Instant;
import java.util.HexFormat;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.eclipse.jetty.http.HttpFields;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.http.HttpStatus;
import org.eclipse.jetty.io.Content;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.HttpConfiguration;
import org.eclipse.jetty.server.HttpConnectionFactory;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.server.handler.ErrorHandler;
import org.eclipse.jetty.util.Callback;
import org.eclipse.jetty.util.VirtualThreads;
import org.eclipse.jetty.util.thread.QueuedThreadPool;
import org.powerinfer4j.engine.api.Model;
import org.powerinfer4j.engine.tokenizer.ChatTemplates;
import org.powerinfer4j.engine.tools.ToolCalling;

/**
 * An OpenAI-compatible HTTP server for one model: {@code POST /v1/chat/completions}, {@code POST /v1/completions}
 * (streamed as server-sent events or not, with {@code logprobs} on request), {@code GET /v1/models},
 * {@code GET /health}, {@code GET /metrics} (Prometheus text) and {@code GET /slots} (JSON, one object per slot).
 *
 * <p>Threads: Jetty accepts and parses on its selector threads and runs each request on a virtual thread, which
 * validates and tokenizes it, submits it to the {@link SlotScheduler} (or answers 429 when its queue is full) and
 * then blocks on the job's event queue, writing what arrives to the client. Generation itself runs on the
 * scheduler's slot threads, so a slow client never holds up the model. A client that disconnects makes the next
 * write fail; the job is then cancelled and its slot stops at the next token. A streaming request waiting in the
 * queue is probed with SSE comments every {@link ServerConfig#pingInterval()}, so it is dropped from the queue if
 * its client has gone. A non-streaming request only finds out when the answer is written (Jetty does not watch an
 * HTTP/1.1 connection for EOF while a request is being handled), so it runs to its {@code max_tokens} at most.
 */
public final class OpenAiServer implements AutoCloseable {
    // trailing garbage after the JSON value is malformed input, not something to ignore
    private static final ObjectMapper JSON = new ObjectMapper().enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);

    private final ServerConfig config;
    private final SlotScheduler scheduler;
    private final RequestParser parser;
    private final org.powerinfer4j.engine.tokenizer.Tokenizer tokenizer;
    private final ServerMetrics metrics = new ServerMetrics();
    private final Server server;
    private final ServerConnector connector;
    private final long created = Instant.now().getEpochSecond();

    private OpenAiServer(Model model, ServerConfig config) {
        this.config = config;
        this.scheduler = new SlotScheduler(model, config.parallel(), config.queue(), config.cachePrompt(), config.ctxPerSlot());
        this.parser = new RequestParser(model.tokenizer(), ChatTemplates.forGGUF(model.file()), scheduler.slotContext(), config.modelId(),
                config.defaults(), config.defaultSeed());
        this.tokenizer = model.tokenizer();

        QueuedThreadPool threads = new QueuedThreadPool();
        threads.setName("serve-http");
        threads.setVirtualThreadsExecutor(VirtualThreads.getNamedVirtualThreadsExecutor("serve-request-"));
        server = new Server(threads);
        HttpConfiguration http = new HttpConfiguration();
        http.setSendServerVersion(false);
        http.setSendDateHeader(true);
        connector = new ServerConnector(server, 1, 1, new HttpConnectionFactory(http));
        connector.setHost(config.host());
        connector.setPort(config.port());
        connector.setIdleTimeout(config.idleTimeout().toMillis());
        server.addConnector(connector);
        server.setHandler(new ApiHandler());
        server.setErrorHandler(new JsonErrorHandler());
        server.setStopTimeout(2_000);
    }

    /** Binds and starts serving; the model must outlive the server. */
    public static OpenAiServer start(Model model, ServerConfig config) throws Exception {
        OpenAiServer s = new OpenAiServer(model, config);
        try {
            s.server.start();
        } catch (Exception e) {
            s.close();
            throw e;
        }
        return s;
    }

    /** The port actually bound (useful with port 0). */
    public int port() {
        return connector.getLocalPort();
    }

    /** {@code http://host:port} */
    /** The most tokens one request's prompt and generation may hold ({@code --ctx-per-slot}, else {@code -c}). */
    public int slotContext() {
        return scheduler.slotContext();
    }

    public URI baseUri() {
        String host = config.host().contains(":") ? "[" + config.host() + "]" : config.host();
        return URI.create("http://" + host + ":" + port());
    }

    /** Tests: a small kernel send buffer for new connections, so that a client that stops reading blocks writes soon. */
    void setAcceptedSendBufferSize(int bytes) {
        connector.setAcceptedSendBufferSize(bytes);
    }

    SlotScheduler.Stats stats() {
        return scheduler.stats();
    }

    /** Blocks until the server stops. */
    public void join() throws InterruptedException {
        server.join();
    }

    @Override
    public void close() {
        scheduler.close(); // first: ends generations, so the request threads can finish their responses
        try {
            server.stop();
        } catch (Exception e) {
            // stopping is best effort: the connector is closed either way
        }
    }

    // ---- HTTP ----

    private final class ApiHandler extends Handler.Abstract {
        @Override
        public boolean handle(Request request, Response response, Callback callback) {
            try {
                route(request, response, callback);
            } catch (ApiException e) {
                writeError(response, callback, e);
            } catch (Throwable t) {
                // a bug or an exhausted resource: a short message, never a stack trace
                writeError(response, callback, new ApiException(500, "server_error", "internal error: " + t.getClass().getSimpleName(), null, null));
            }
            String path = request.getHttpURI().getPath();
            metrics.request(path == null ? "/" : path, response.getStatus());
            return true;
        }
    }

    private void route(Request request, Response response, Callback callback) throws Exception {
        String path = request.getHttpURI().getPath();
        String method = request.getMethod();
        if (path == null) path = "/";
        if (path.startsWith("/v1/")) authorize(request);
        String allowed = switch (path) {
            case "/health", "/v1/models", "/metrics", "/slots" -> "GET";
            case "/v1/chat/completions", "/v1/completions" -> "POST";
            default -> null;
        };
        if (allowed == null)
            throw new ApiException(404, "invalid_request_error", "unknown URL: " + method + " " + path, null, "not_found");
        if (!allowed.equals(method)) {
            response.getHeaders().put(HttpHeader.ALLOW, allowed);
            throw new ApiException(405, "invalid_request_error", "method " + method + " is not allowed on " + path + " (use " + allowed + ")",
                    null, "method_not_allowed");
        }
        switch (path) {
            case "/health" -> health(response, callback);
            case "/v1/models" -> models(response, callback);
            case "/metrics" -> {
                byte[] text = metrics.render(scheduler.stats(), scheduler.kvUsage()).getBytes(StandardCharsets.UTF_8);
                response.setStatus(200);
                response.getHeaders().put(HttpHeader.CONTENT_TYPE, ServerMetrics.CONTENT_TYPE);
                response.write(true, ByteBuffer.wrap(text), callback);
            }
            case "/slots" -> slots(response, callback);
            case "/v1/chat/completions" -> generate(request, response, callback, true);
            default -> generate(request, response, callback, false);
        }
    }

    private void authorize(Request request) {
        if (config.apiKey() == null) return;
        String header = request.getHeaders().get(HttpHeader.AUTHORIZATION);
        String given = header != null && header.regionMatches(true, 0, "Bearer ", 0, 7) ? header.substring(7).trim() : null;
        if (given == null)
            throw new ApiException(401, "invalid_request_error", "missing API key: send 'Authorization: Bearer KEY'", null, "invalid_api_key");
        // constant time: the comparison must not reveal how much of the key was right
        if (!MessageDigest.isEqual(given.getBytes(StandardCharsets.UTF_8), config.apiKey().getBytes(StandardCharsets.UTF_8)))
            throw new ApiException(401, "invalid_request_error", "incorrect API key", null, "invalid_api_key");
    }

    private void health(Response response, Callback callback) {
        SlotScheduler.Stats s = scheduler.stats();
        ObjectNode o = JSON.createObjectNode().put("status", "ok")
                .put("slots_idle", s.idle()).put("slots_processing", s.slots() - s.idle()).put("requests_queued", s.queued())
                .put("requests_completed", s.completed()).put("requests_cancelled", s.cancelled());
        writeJson(response, callback, 200, o);
    }

    /** llama-server's {@code GET /slots}: per slot its id, state, context size and the tokens in its KV cache. */
    private void slots(Response response, Callback callback) {
        ArrayNode a = JSON.createArrayNode();
        for (SlotScheduler.SlotInfo i : scheduler.slotInfo())
            a.addObject().put("id", i.id()).put("state", i.processing() ? "processing" : "idle").put("is_processing", i.processing())
                    .put("n_ctx", i.contextLength()).put("tokens_cached", i.tokensCached());
        writeJson(response, callback, 200, a);
    }

    private void models(Response response, Callback callback) {
        ObjectNode o = JSON.createObjectNode().put("object", "list");
        o.putArray("data").addObject().put("id", config.modelId()).put("object", "model").put("created", created).put("owned_by", "powerinfer4j");
        writeJson(response, callback, 200, o);
    }

    private void generate(Request request, Response response, Callback callback, boolean chat) throws InterruptedException {
        JsonNode body;
        try {
            body = JSON.readTree(readBody(request));
        } catch (JacksonException e) {
            throw ApiException.invalid("malformed JSON: " + e.getOriginalMessage(), null);
        } catch (IOException e) { // not thrown for an in-memory array, but declared
            throw ApiException.invalid("malformed JSON", null);
        }
        if (body == null || body.isMissingNode()) throw ApiException.invalid("the request body is empty; expected a JSON object", null);
        RequestParser.Parsed p = parser.parse(body, chat);
        GenerationJob job = new GenerationJob(p.prompt(), p.params(), p.stop(), tokenizer, p.topLogprobs());
        if (!scheduler.submit(job)) {
            response.getHeaders().put(HttpHeader.RETRY_AFTER, "1");
            throw new ApiException(429, "rate_limit_error", "all " + config.parallel() + " slots are busy and the queue of " + config.queue()
                    + " is full; retry later", null, "rate_limit_exceeded");
        }
        request.addFailureListener(t -> scheduler.cancel(job)); // whatever Jetty notices (a failed write, a reset)
        // Waiting for a slot or for tokens is no I/O: generation time must not count as an idle connection. Jetty
        // still fails a write that makes no progress for the idle timeout (a client that stopped reading), and
        // that failure cancels the job.
        request.addIdleTimeoutListener(t -> false);
        String id = (chat ? "chatcmpl-" : "cmpl-") + HexFormat.of().formatHex(randomBytes());
        long now = Instant.now().getEpochSecond();
        if (p.stream()) stream(response, callback, job, p, id, now);
        else complete(response, callback, job, p, id, now);
    }

    private byte[] readBody(Request request) {
        long max = config.maxBodyBytes();
        long declared = request.getLength();
        try (InputStream in = Content.Source.asInputStream(request)) {
            if (declared > max) {
                // a declared oversize is refused without buffering, but a bounded body is still read and dropped:
                // closing with unread bytes makes the kernel send a reset, which can destroy the 413 before the
                // client reads it
                if (declared <= DRAIN_LIMIT) drain(in);
                throw tooLarge(declared);
            }
            byte[] body = in.readNBytes((int) max + 1);
            if (body.length > max) { // chunked: the limit is found while reading; drop a bounded rest the same way
                drain(in);
                throw tooLarge(-1);
            }
            return body;
        } catch (IOException e) {
            throw new ApiException(408, "invalid_request_error", "the request body did not arrive in time (or the connection failed)", null, "timeout");
        }
    }

    private static void drain(InputStream in) throws IOException {
        long drained = 0;
        for (int n; drained < DRAIN_LIMIT && (n = in.read(DRAIN_BUFFER.get())) >= 0; ) drained += n;
    }

    /** How much of an oversized body is read and dropped so the 413 arrives intact. */
    private static final long DRAIN_LIMIT = 16L << 20;
    private static final ThreadLocal<byte[]> DRAIN_BUFFER = ThreadLocal.withInitial(() -> new byte[16384]);

    private ApiException tooLarge(long declared) {
        return new ApiException(413, "invalid_request_error", "the request body" + (declared > 0 ? " (" + declared + " bytes)" : "")
                + " exceeds the limit of " + config.maxBodyBytes() + " bytes", null, "request_too_large");
    }

    private void complete(Response response, Callback callback, GenerationJob job, RequestParser.Parsed p, String id, long now)
            throws InterruptedException {
        StringBuilder text = new StringBuilder();
        java.util.List<LogProbs.Entry> logprobs = new java.util.ArrayList<>();
        while (true) {
            GenerationJob.Event e = job.poll(1, TimeUnit.MINUTES);
            switch (e) {
                case null -> {}
                case GenerationJob.Text t -> {
                    text.append(t.text());
                    logprobs.addAll(t.logprobs());
                }
                case GenerationJob.Failed f -> throw f.error();
                case GenerationJob.Done d -> {
                    ObjectNode o = header(p, id, now, p.chat() ? "chat.completion" : "text_completion");
                    ObjectNode choice = o.putArray("choices").addObject().put("index", 0);
                    String finish = d.finishReason();
                    if (p.chat()) {
                        ObjectNode message = choice.putObject("message").put("role", "assistant");
                        ToolCalling.Reply reply = p.toolCalls() ? ToolCalling.parse(text.toString()) : null;
                        if (reply != null && reply.hasToolCalls()) {
                            message.putNull("content");
                            message.set("tool_calls", toolCalls(reply, false));
                            finish = "tool_calls";
                        } else {
                            message.put("content", reply != null ? reply.content() : text.toString());
                        }
                        message.putNull("refusal");
                    } else choice.put("text", text.toString());
                    putLogprobs(choice, p, logprobs);
                    choice.put("finish_reason", finish);
                    o.set("usage", usage(d));
                    writeJson(response, callback, 200, o);
                    return;
                }
            }
        }
    }

    private void stream(Response response, Callback callback, GenerationJob job, RequestParser.Parsed p, String id, long now) {
        response.setStatus(200);
        response.getHeaders().put(HttpHeader.CONTENT_TYPE, "text/event-stream; charset=utf-8");
        response.getHeaders().put(HttpHeader.CACHE_CONTROL, "no-cache");
        String object = p.chat() ? "chat.completion.chunk" : "text_completion";
        try (OutputStream out = new BufferedOutputStream(Content.Sink.asOutputStream(response), 8192)) {
            if (p.chat()) {
                ObjectNode first = chunk(p, id, now, object);
                ((ArrayNode) first.get("choices")).addObject().put("index", 0).putNull("logprobs").putNull("finish_reason")
                        .putObject("delta").put("role", "assistant").put("content", "");
                event(out, first);
            }
            out.flush(); // headers go out now, so clients see the stream start even while the job waits for a slot
            long ping = config.pingInterval().toMillis();
            boolean done = false;
            StringBuilder toolAnswer = new StringBuilder();   // with tools, the answer is known to be a call or content only at its end
            while (!done) {
                GenerationJob.Event e = job.poll(ping, TimeUnit.MILLISECONDS);
                if (e == null) {
                    out.write(": ping\n\n".getBytes(StandardCharsets.US_ASCII)); // an SSE comment: clients skip it
                    out.flush();
                    continue;
                }
                for (; e != null && !done; e = done ? null : job.pollNow()) { // batch what is already there into one flush
                    switch (e) {
                        case GenerationJob.Text t -> {
                            if (p.toolCalls()) toolAnswer.append(t.text());
                            else event(out, textChunk(p, id, now, object, t.text(), null, t.logprobs()));
                        }
                        case GenerationJob.Failed f -> {
                            event(out, errorBody(f.error()));
                            done = true;
                        }
                        case GenerationJob.Done d -> {
                            String finish = d.finishReason();
                            if (p.toolCalls()) {
                                ToolCalling.Reply reply = ToolCalling.parse(toolAnswer.toString());
                                if (reply.hasToolCalls()) {
                                    ObjectNode c = chunk(p, id, now, object);
                                    ObjectNode choice = ((ArrayNode) c.get("choices")).addObject().put("index", 0);
                                    choice.putObject("delta").set("tool_calls", toolCalls(reply, true));
                                    choice.putNull("logprobs").putNull("finish_reason");
                                    event(out, c);
                                    finish = "tool_calls";
                                } else if (!reply.content().isEmpty()) {
                                    event(out, textChunk(p, id, now, object, reply.content(), null, java.util.List.of()));
                                }
                            }
                            event(out, textChunk(p, id, now, object, p.chat() ? null : "", finish, java.util.List.of()));
                            if (p.includeUsage()) {
                                ObjectNode u = chunk(p, id, now, object);
                                u.putArray("choices");
                                u.set("usage", usage(d));
                                event(out, u);
                            }
                            out.write("data: [DONE]\n\n".getBytes(StandardCharsets.US_ASCII));
                            done = true;
                        }
                    }
                }
                out.flush();
            }
        } catch (IOException | RuntimeException e) {
            // the client has gone (or the connection failed): stop generating for it and free the slot
            scheduler.cancel(job);
            callback.failed(e);
            return;
        } catch (InterruptedException e) {
            scheduler.cancel(job);
            Thread.currentThread().interrupt();
            callback.failed(e);
            return;
        }
        callback.succeeded();
    }

    /** OpenAI's {@code tool_calls}: id, type function, name and the arguments as a JSON string; streamed deltas carry an index. */
    private static ArrayNode toolCalls(ToolCalling.Reply reply, boolean indexed) {
        ArrayNode a = JSON.createArrayNode();
        for (int i = 0; i < reply.toolCalls().size(); i++) {
            var call = reply.toolCalls().get(i);
            ObjectNode c = a.addObject();
            if (indexed) c.put("index", i);
            c.put("id", call.id()).put("type", "function");
            c.putObject("function").put("name", call.name()).put("arguments", call.arguments());
        }
        return a;
    }

    private ObjectNode header(RequestParser.Parsed p, String id, long now, String object) {
        return JSON.createObjectNode().put("id", id).put("object", object).put("created", now).put("model", p.model())
                .put("system_fingerprint", "powerinfer4j");
    }

    private ObjectNode chunk(RequestParser.Parsed p, String id, long now, String object) {
        ObjectNode o = header(p, id, now, object);
        o.putArray("choices");
        if (p.includeUsage()) o.putNull("usage"); // as OpenAI: present on every chunk, filled on the last
        return o;
    }

    /** A chat delta (null text: the empty closing delta) or a completion text piece. */
    private ObjectNode textChunk(RequestParser.Parsed p, String id, long now, String object, String text, String finishReason,
                                 java.util.List<LogProbs.Entry> logprobs) {
        ObjectNode o = chunk(p, id, now, object);
        ObjectNode c = ((ArrayNode) o.get("choices")).addObject().put("index", 0);
        if (p.chat()) {
            ObjectNode delta = c.putObject("delta");
            if (text != null) delta.put("content", text);
        } else c.put("text", text);
        putLogprobs(c, p, logprobs);
        if (finishReason == null) c.putNull("finish_reason");
        else c.put("finish_reason", finishReason);
        return o;
    }

    /** {@code choice.logprobs}: null unless asked for; else the chat or the completions shape. */
    private static void putLogprobs(ObjectNode choice, RequestParser.Parsed p, java.util.List<LogProbs.Entry> entries) {
        if (p.topLogprobs() < 0) choice.putNull("logprobs");
        else choice.set("logprobs", p.chat() ? LogProbs.chat(entries) : LogProbs.completion(entries, 0));
    }

    private static ObjectNode usage(GenerationJob.Done d) {
        return JSON.createObjectNode().put("prompt_tokens", d.promptTokens()).put("completion_tokens", d.completionTokens())
                .put("total_tokens", d.promptTokens() + d.completionTokens())
                .set("prompt_tokens_details", JSON.createObjectNode().put("cached_tokens", d.cachedTokens()));
    }

    private static void event(OutputStream out, JsonNode data) throws IOException {
        out.write("data: ".getBytes(StandardCharsets.US_ASCII));
        out.write(JSON.writeValueAsBytes(data));
        out.write("\n\n".getBytes(StandardCharsets.US_ASCII));
    }

    private static byte[] randomBytes() {
        byte[] b = new byte[12];
        ThreadLocalRandom.current().nextBytes(b);
        return b;
    }

    private static void writeJson(Response response, Callback callback, int status, JsonNode body) {
        byte[] bytes;
        try {
            bytes = JSON.writeValueAsBytes(body);
        } catch (JacksonException e) {
            callback.failed(e);
            return;
        }
        response.setStatus(status);
        response.getHeaders().put(HttpHeader.CONTENT_TYPE, "application/json");
        response.write(true, ByteBuffer.wrap(bytes), callback);
    }

    private static void writeError(Response response, Callback callback, ApiException e) {
        if (response.isCommitted()) {
            callback.failed(e);
            return;
        }
        writeJson(response, callback, e.status, errorBody(e));
    }

    static ObjectNode errorBody(ApiException e) {
        ObjectNode o = JSON.createObjectNode();
        ObjectNode err = o.putObject("error").put("message", e.getMessage()).put("type", e.type);
        if (e.param == null) err.putNull("param");
        else err.put("param", e.param);
        if (e.code == null) err.putNull("code");
        else err.put("code", e.code);
        return o;
    }

    /** Errors Jetty answers itself (malformed HTTP, oversized headers, ...) in the same JSON shape as ours. */
    private static final class JsonErrorHandler extends ErrorHandler {
        @Override
        protected void generateResponse(Request request, Response response, int code, String message, Throwable cause, Callback callback) {
            writeJson(response, callback, code, errorBody(jettyError(code, message)));
        }

        @Override
        public ByteBuffer badMessageError(int status, String reason, HttpFields.Mutable fields) {
            fields.put(HttpHeader.CONTENT_TYPE, "application/json");
            try {
                return ByteBuffer.wrap(JSON.writeValueAsBytes(errorBody(jettyError(status, reason))));
            } catch (JacksonException e) {
                return null;
            }
        }

        private static ApiException jettyError(int code, String message) {
            String m = message == null || message.isBlank() ? HttpStatus.getMessage(code) : message;
            return new ApiException(code, code >= 500 ? "server_error" : "invalid_request_error", m, null, null);
        }
    }
}
