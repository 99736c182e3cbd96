package org.powerinfer4j.engine.hub;

import com.sun.net.httpserver.Headers;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A loopback stand-in for the hub: {@code /api/models/OWNER/REPO/revision/REV} listings,
 * {@code /OWNER/REPO/resolve/REV/FILE} answering like the hub (302 with X-Linked-Etag / X-Linked-Size) and
 * {@code /cdn/FILE} serving the bytes with its own ETag and range support, plus switchable faults.
 */
final class HubTestServer implements AutoCloseable {
    static final String REPO = "acme/tiny-GGUF";
    static final String GOOD_TOKEN = "hf_good";

    /** A request seen: the status answered (0 if none) and whether the response was sent in full. */
    record Request(String path, Headers headers, int status, boolean complete) {
        String header(String name) {
            return headers.getFirst(name);
        }
    }

    private final HttpServer server;
    private final ExecutorService executor = Executors.newCachedThreadPool();
    final Map<String, byte[]> files = new ConcurrentHashMap<>();
    final List<Request> requests = new CopyOnWriteArrayList<>();

    // fault switches, read per request
    /** Body bytes sent before the connection is cut, for the next body only; -1 = off. */
    final AtomicLong dropAfter = new AtomicLong(-1);
    /** Body bytes sent before going silent (bounded sleep), for the next body only; -1 = off. */
    final AtomicLong stallAfter = new AtomicLong(-1);
    /** Server errors (503) to answer before behaving. */
    final AtomicInteger failures = new AtomicInteger();
    volatile long extraContentLength;
    volatile boolean ignoreRange, ignoreIfRange, requireToken, omitLinkedSize;
    volatile String announcedSha256;
    volatile long announcedSize = -1;
    /** Host the hub redirects to; null = a relative redirect to the same server. */
    volatile String cdnHost;
    volatile String listingJson;

    HubTestServer() throws IOException {
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        server.setExecutor(executor);
        server.createContext("/", this::handle);
        server.start();
    }

    URI endpoint() {
        return URI.create("http://127.0.0.1:" + server.getAddress().getPort());
    }

    int port() {
        return server.getAddress().getPort();
    }

    /** {@code size} deterministic pseudo-random bytes. */
    static byte[] bytes(int size, long seed) {
        byte[] b = new byte[size];
        new Random(seed).nextBytes(b);
        return b;
    }

    static String sha256(byte[] data) {
        return HexFormat.of().formatHex(HubClient.sha256().digest(data));
    }

    /** The CDN's ETag: deliberately not the SHA-256, so validator and checksum cannot be confused. */
    static String cdnEtag(byte[] data) {
        return "\"cdn-" + sha256(data).substring(0, 20) + "\"";
    }

    /**
     * The recorded requests once at least {@code n} are there (at most 5 s): a request is recorded after its
     * response is sent, so a client can have its answer before the server thread has written the record.
     */
    List<Request> awaitRequests(int n) throws InterruptedException {
        long deadline = System.nanoTime() + 5_000_000_000L;
        while (requests.size() < n && System.nanoTime() < deadline) Thread.sleep(5);
        return requests;
    }

    List<Request> requestsTo(String prefix) {
        return requests.stream().filter(r -> r.path().startsWith(prefix)).toList();
    }

    private void handle(HttpExchange ex) throws IOException {
        String path = ex.getRequestURI().getRawPath();
        STATUS.remove();
        boolean complete = false;
        try (ex) {
            route(ex, path);
            complete = true;
        } catch (IOException aborted) {
            // a deliberately cut or stalled response, or one the client hung up on
        }
        Integer status = STATUS.get();
        requests.add(new Request(path, ex.getRequestHeaders(), status == null ? 0 : status, complete));
    }

    // the status a handler sent, per handler thread: HttpExchange attributes belong to the whole HttpContext, so a
    // request that followed quickly (the resolve's 302) could overwrite the previous one's before it was recorded
    private static final ThreadLocal<Integer> STATUS = new ThreadLocal<>();

    private int route(HttpExchange ex, String rawPath) throws IOException {
        String path = URI.create(rawPath).getPath();
        if (failures.getAndUpdate(n -> Math.max(0, n - 1)) > 0) return empty(ex, 503);
        String apiPrefix = "/api/models/" + REPO + "/revision/";
        if (path.startsWith(apiPrefix)) {
            if (listingJson == null) return empty(ex, 404);
            byte[] body = listingJson.getBytes(StandardCharsets.UTF_8);
            ex.getResponseHeaders().set("Content-Type", "application/json");
            STATUS.set(200);
            ex.sendResponseHeaders(200, body.length);
            ex.getResponseBody().write(body);
            return 200;
        }
        String resolvePrefix = "/" + REPO + "/resolve/";
        if (path.startsWith(resolvePrefix)) {
            String rest = rawPath.substring(resolvePrefix.length()); // raw: the revision may hold an encoded '/'
            String file = URI.create(rest.substring(rest.indexOf('/') + 1)).getPath();
            String auth = ex.getRequestHeaders().getFirst("Authorization");
            if (requireToken && auth == null) return empty(ex, 401);
            if (requireToken && !auth.equals("Bearer " + GOOD_TOKEN)) return empty(ex, 403);
            byte[] data = files.get(file);
            if (data == null) return empty(ex, 404);
            Headers h = ex.getResponseHeaders();
            String sha = announcedSha256 != null ? announcedSha256 : sha256(data);
            h.set("X-Linked-Etag", "\"" + sha + "\"");
            h.set("ETag", "\"" + sha + "\"");
            if (!omitLinkedSize) h.set("X-Linked-Size", Long.toString(announcedSize >= 0 ? announcedSize : data.length));
            String cdnPath = "/cdn/" + file + "?X-Amz-Signature=abc";
            h.set("Location", cdnHost == null ? cdnPath : "http://" + cdnHost + ":" + port() + cdnPath);
            return empty(ex, 302);
        }
        if (path.startsWith("/cdn/")) return serve(ex, files.get(path.substring("/cdn/".length())));
        return empty(ex, 404);
    }

    private int serve(HttpExchange ex, byte[] data) throws IOException {
        if (data == null) return empty(ex, 404);
        String etag = cdnEtag(data);
        Headers h = ex.getResponseHeaders();
        h.set("ETag", etag);
        if (!ignoreRange) h.set("Accept-Ranges", "bytes");
        String range = ex.getRequestHeaders().getFirst("Range");
        String ifRange = ex.getRequestHeaders().getFirst("If-Range");
        int start = 0, status = 200;
        if (range != null && !ignoreRange && (ifRange == null || ignoreIfRange || ifRange.equals(etag))) {
            start = Integer.parseInt(range.substring("bytes=".length(), range.indexOf('-')));
            if (start >= data.length) {
                h.set("Content-Range", "bytes */" + data.length);
                return empty(ex, 416);
            }
            status = 206;
            h.set("Content-Range", "bytes " + start + "-" + (data.length - 1) + "/" + data.length);
        }
        int length = data.length - start;
        STATUS.set(status);
        ex.sendResponseHeaders(status, length + extraContentLength);
        OutputStream out = ex.getResponseBody();
        long drop = dropAfter.getAndSet(-1), stall = stallAfter.getAndSet(-1);
        long cut = drop >= 0 ? drop : stall;
        if (cut >= 0 && cut < length) {
            out.write(data, start, (int) cut);
            out.flush();
            if (stall >= 0) sleepQuietly(3000); // the client gives up long before
            throw new IOException("cut"); // closing with bytes missing makes the server drop the connection
        }
        out.write(data, start, length);
        if (extraContentLength > 0) throw new IOException("short"); // the close cuts the connection short of the declared length
        return status;
    }

    private static int empty(HttpExchange ex, int status) throws IOException {
        STATUS.set(status);
        ex.sendResponseHeaders(status, -1);
        return status;
    }

    private static void sleepQuietly(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public void close() {
        server.stop(0);
        executor.shutdownNow();
    }
}
