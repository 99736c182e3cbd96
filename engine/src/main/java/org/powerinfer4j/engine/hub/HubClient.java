package org.powerinfer4j.engine.hub;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InterruptedIOException;
import java.net.ConnectException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpHeaders;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpResponse.BodySubscriber;
import java.net.http.HttpResponse.BodySubscribers;
import java.net.http.HttpTimeoutException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Flow;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Talks to a Hugging Face hub: lists a repository's files ({@code /api/models/REPO/revision/REV}) and
 * downloads {@code /REPO/resolve/REV/FILE} into a {@link ModelCache}.
 *
 * <p>A download goes to {@code FILE.part}; an interrupted one is resumed with {@code Range} +
 * {@code If-Range} (restarting from zero when the server ignores the range or the file changed), the
 * SHA-256 the hub announces ({@code X-Linked-Etag}, a SHA-256 {@code ETag}, or the listing's
 * {@code lfs.sha256}) is verified, and the file is renamed into place atomically. Transient failures
 * (connection errors, stalls, 5xx, 429) are retried with exponential backoff. Redirects are followed by
 * hand so that the token is sent to the hub's host only, never to the CDN it redirects to.
 */
public final class HubClient implements AutoCloseable {
    static final int MAX_REDIRECTS = 10;
    private static final int MAX_RESTARTS = 3;
    private static final String USER_AGENT = "powerinfer4j/0.1";
    private static final Pattern SHA256 = Pattern.compile("[0-9a-f]{64}");
    private static final Pattern CONTENT_RANGE = Pattern.compile("bytes\\s+(\\d+)-(\\d+)/(\\d+|\\*)");
    private static final Pattern UNSATISFIED_RANGE = Pattern.compile("bytes\\s+\\*/(\\d+)");

    private final HubConfig config;
    private final HttpClient http;
    private final int maxAttempts;
    private final Duration backoff;
    private final Duration stallTimeout;
    private final Duration responseTimeout;

    private HubClient(Builder b) {
        this.config = b.config;
        this.maxAttempts = b.maxAttempts;
        this.backoff = b.backoff;
        this.stallTimeout = b.stallTimeout;
        this.responseTimeout = b.responseTimeout;
        // HTTP/1.1: one connection per transfer, as the hub's own clients use
        this.http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).followRedirects(HttpClient.Redirect.NEVER)
                .connectTimeout(b.connectTimeout).build();
    }

    public static Builder builder(HubConfig config) {
        return new Builder(config);
    }

    /** Settings with production defaults; tests shorten the waits. */
    public static final class Builder {
        private final HubConfig config;
        private int maxAttempts = 5;
        private Duration backoff = Duration.ofSeconds(1);
        private Duration stallTimeout = Duration.ofSeconds(60);
        private Duration connectTimeout = Duration.ofSeconds(30);
        private Duration responseTimeout = Duration.ofSeconds(60);

        private Builder(HubConfig config) {
            this.config = config;
        }

        /** Attempts per request, the first included (1 = no retries). */
        public Builder maxAttempts(int n) {
            if (n < 1) throw new IllegalArgumentException("attempts must be at least 1");
            this.maxAttempts = n;
            return this;
        }

        /** Wait before the first retry; doubles with each further one (capped at 30 s). */
        public Builder backoff(Duration d) {
            this.backoff = d;
            return this;
        }

        /** How long a transfer may receive nothing before it is abandoned (and retried). */
        public Builder stallTimeout(Duration d) {
            this.stallTimeout = d;
            return this;
        }

        public Builder connectTimeout(Duration d) {
            this.connectTimeout = d;
            return this;
        }

        /** How long to wait for a response's headers. */
        public Builder responseTimeout(Duration d) {
            this.responseTimeout = d;
            return this;
        }

        public HubClient build() {
            return new HubClient(this);
        }
    }

    public HubConfig config() {
        return config;
    }

    @Override
    public void close() {
        http.shutdownNow();
    }

    // ---- listing ----

    /** The files of {@code repo} at {@code revision}, with sizes and LFS SHA-256s where the hub gives them. */
    public List<RepoFile> listFiles(String repo, String revision) throws IOException {
        new ModelRef(repo, null, revision); // validates the name before it goes into a URL
        URI uri = URI.create(config.endpoint() + "/api/models/" + encodePath(repo) + "/revision/" + encodeSegment(revision) + "?blobs=true");
        String what = describe(repo, revision);
        byte[] body = retrying(ProgressListener.NONE, () -> {
            Exchange<byte[]> ex = open(uri, Map.of(), BodySubscribers::ofByteArray);
            if (ex.status() / 100 != 2) throw statusError(ex.status(), what);
            return ex.response().body();
        });
        JsonNode siblings;
        try {
            siblings = ModelCache.JSON.readTree(body).path("siblings");
        } catch (IOException e) {
            throw new HubException("unreadable file listing for " + what + " from " + uri.getHost(), e);
        }
        if (!siblings.isArray()) throw new HubException("unexpected file listing for " + what + " from " + uri.getHost() + ": no siblings");
        List<RepoFile> files = new ArrayList<>();
        for (JsonNode s : siblings) {
            String name = s.path("rfilename").asText(null);
            if (name == null) continue;
            JsonNode lfs = s.path("lfs");
            long size = s.has("size") ? s.get("size").asLong(-1) : lfs.path("size").asLong(-1);
            files.add(new RepoFile(name, size, sha256Of(lfs.path("sha256").asText(null))));
        }
        return files;
    }

    /**
     * The GGUF file to pull from a repository: the only one, else the only {@code Q4_K_M} one.
     *
     * @throws HubException when there is none, or several and none or several are Q4_K_M (lists them)
     */
    public static String chooseGguf(String repo, List<RepoFile> files) throws HubException {
        List<String> ggufs = files.stream().map(RepoFile::path).filter(p -> p.toLowerCase(Locale.ROOT).endsWith(".gguf")).sorted().toList();
        if (ggufs.isEmpty()) throw new HubException("no GGUF file in " + repo);
        if (ggufs.size() == 1) return ggufs.get(0);
        List<String> q4km = ggufs.stream().filter(p -> p.toUpperCase(Locale.ROOT).contains("Q4_K_M")).toList();
        if (q4km.size() == 1) return q4km.get(0);
        throw new HubException(repo + " has " + ggufs.size() + " GGUF files" + (q4km.isEmpty() ? "" : ", " + q4km.size() + " of them Q4_K_M")
                + "; name one as " + repo + "/FILE: " + String.join(", ", ggufs));
    }

    // ---- pulling ----

    /**
     * Brings {@code ref} into {@code cache}: picks the repository's GGUF file when {@code ref} names none,
     * returns at once when the file is already complete in the cache for that revision, and downloads it
     * (resuming a partial download) otherwise.
     */
    public PullResult pull(ModelRef ref, ModelCache cache, ProgressListener progress) throws IOException {
        long t0 = System.nanoTime();
        RepoFile listed = null;
        if (ref.file() == null) {
            List<RepoFile> files = listFiles(ref.repo(), ref.revision());
            String chosen = chooseGguf(ref.repo(), files);
            listed = files.stream().filter(f -> f.path().equals(chosen)).findFirst().orElseThrow();
            ref = ref.withFile(chosen);
        }
        Optional<CachedModel> cached = cache.lookup(ref.repo(), ref.file());
        if (cached.isPresent() && isCurrent(cached.get().metadata(), ref, listed))
            return new PullResult(cached.get(), true, false, 0, System.nanoTime() - t0);
        return new Download(ref, cache.pathOf(ref.repo(), ref.file()), listed, progress).run(t0);
    }

    /** Same revision asked for, and no newer content announced by the listing. */
    private static boolean isCurrent(CacheMetadata meta, ModelRef ref, RepoFile listed) {
        if (!ref.revision().equals(meta.revision())) return false;
        return listed == null || listed.sha256() == null || meta.sha256() == null || listed.sha256().equals(meta.sha256());
    }

    /** What the data of one finished transfer is supposed to be. */
    private record Outcome(String expectedSha256, String validator, long size) {}

    /** One file's download into {@code FILE.part}, across attempts. */
    private final class Download {
        private final ModelRef ref;
        private final Path target, part, partMeta;
        private final RepoFile listed;
        private final ProgressListener progress;
        private final URI uri;
        private final String what;
        private final byte[] buffer = new byte[1 << 16];
        /** How to resume the part file; null when it cannot be trusted (then it is started over). */
        private CacheMetadata state;
        /** SHA-256 of the part's first {@link #digested} bytes, kept across attempts to avoid re-reading. */
        private MessageDigest digest;
        private long digested;
        private long received;
        private boolean resumed;

        Download(ModelRef ref, Path target, RepoFile listed, ProgressListener progress) {
            this.ref = ref;
            this.target = target;
            this.part = ModelCache.partPath(target);
            this.partMeta = ModelCache.metadataPath(part);
            this.listed = listed;
            this.progress = progress;
            this.uri = URI.create(config.endpoint() + "/" + encodePath(ref.repo()) + "/resolve/" + encodeSegment(ref.revision())
                    + "/" + encodePath(ref.file()));
            this.what = describe(ref.name(), ref.revision());
        }

        PullResult run(long t0) throws IOException {
            Files.createDirectories(target.getParent());
            Outcome outcome;
            boolean locked = false;
            try (FileOutputStream out = new FileOutputStream(part.toFile(), true)) {
                FileLock lock;
                try {
                    lock = out.getChannel().tryLock();
                } catch (OverlappingFileLockException sameProcess) {
                    lock = null;
                }
                if (lock == null) throw new HubException("another pull of " + ref.name() + " is in progress");
                locked = true;
                state = ModelCache.readMetadata(partMeta);
                FileChannel ch = out.getChannel();
                outcome = retrying(progress, () -> {
                    for (int restarts = 0; ; restarts++) {
                        Outcome o = attempt(out, ch);
                        if (o != null) return o;
                        if (restarts >= MAX_RESTARTS) throw new HubException(what + " keeps changing on the server; try again later");
                    }
                });
                out.getFD().sync(); // the data is on disk before the rename makes it visible
            } catch (IOException e) {
                // a failure before any data (404, 401, no network) leaves no empty part file behind
                if (locked && Files.isRegularFile(part) && Files.size(part) == 0) {
                    Files.deleteIfExists(part);
                    Files.deleteIfExists(partMeta);
                }
                throw e;
            }
            String actual = HexFormat.of().formatHex(digestOfPart(outcome.size()).digest());
            if (outcome.expectedSha256() != null && !outcome.expectedSha256().equals(actual)) {
                Files.deleteIfExists(part);
                Files.deleteIfExists(partMeta);
                throw new HubException("sha256 mismatch for " + what + ": expected " + outcome.expectedSha256() + ", got " + actual
                        + "; the download was deleted");
            }
            CacheMetadata meta = new CacheMetadata(ref.repo(), ref.file(), ref.revision(), uri.toString(), outcome.validator(), actual,
                    outcome.size(), Instant.now().toString());
            Path metaFile = ModelCache.metadataPath(target);
            Files.deleteIfExists(metaFile); // an older copy's metadata must not vouch for the new file
            Files.move(part, target, StandardCopyOption.ATOMIC_MOVE);
            ModelCache.writeMetadata(metaFile, meta);
            Files.deleteIfExists(partMeta);
            CachedModel model = new CachedModel(ref.name(), ref.repo(), ref.file(), target, outcome.size(), true, meta);
            return new PullResult(model, false, resumed, received, System.nanoTime() - t0);
        }

        /** One request; returns null when the part must be started over with a fresh request. */
        private Outcome attempt(FileOutputStream out, FileChannel ch) throws IOException {
            long have = ch.size();
            boolean resuming = have > 0 && state != null && uri.toString().equals(state.url())
                    && (state.etag() != null || state.sha256() != null);
            if (have > 0 && !resuming) have = restartPart(ch);
            Map<String, String> headers = new LinkedHashMap<>();
            if (resuming) {
                headers.put("Range", "bytes=" + have + "-");
                // without a validator the final SHA-256 check is what guards against mixing two versions
                if (state.etag() != null) headers.put("If-Range", state.etag());
            }
            Exchange<Flow.Publisher<List<ByteBuffer>>> ex = open(uri, headers, BodySubscribers::ofPublisher);
            int sc = ex.status();
            String validator = ex.validator();
            String sha = ex.sha256() != null ? ex.sha256() : listed != null ? listed.sha256() : null;
            long expectedSize = ex.linkedSize() >= 0 ? ex.linkedSize() : listed != null ? listed.size() : -1;
            long total;
            if (sc == 416 && resuming) {
                long announced = ex.unsatisfiedRangeTotal();
                if ((expectedSize >= 0 ? expectedSize : announced) == have) // the part already holds the whole file
                    return new Outcome(sha != null ? sha : state.sha256(), validator != null ? validator : state.etag(), have);
                progress.message("cannot resume " + ref.name() + " (range rejected); restarting");
                restartPart(ch);
                return null;
            } else if (sc == 206 && resuming) {
                long[] range = ex.contentRange();
                boolean changed = range == null || range[0] != have
                        || (state.etag() != null && validator != null && !state.etag().equals(validator))
                        || (state.sha256() != null && sha != null && !state.sha256().equals(sha));
                if (changed) {
                    ex.discard();
                    progress.message(ref.name() + " changed on the server; restarting");
                    restartPart(ch);
                    return null;
                }
                total = range[2];
                resumed = true;
                progress.message("resuming " + ref.name() + " at " + TerminalProgress.formatBytes(have));
            } else if (sc == 200) {
                if (have > 0) {
                    progress.message("the server sent all of " + ref.name() + " (no resume: range unsupported or file changed); restarting");
                    have = restartPart(ch);
                }
                total = ex.response().headers().firstValueAsLong("Content-Length").orElse(-1);
            } else {
                ex.discard();
                throw statusError(sc, what);
            }
            if (expectedSize >= 0 && total >= 0 && total != expectedSize) {
                ex.discard();
                throw new HubException("size mismatch for " + what + ": the server sends " + total + " bytes, the hub announced " + expectedSize);
            }
            long size = expectedSize >= 0 ? expectedSize : total;
            // record how to resume before the first byte lands, so an interrupted run can continue
            state = new CacheMetadata(ref.repo(), ref.file(), ref.revision(), uri.toString(), validator, sha, size, null);
            ModelCache.writeMetadata(partMeta, state);
            MessageDigest md = digestOfPart(have);
            long pos = have;
            progress.start(ref.name(), have, size);
            try (BodyStream body = new BodyStream(stallTimeout.toNanos())) {
                ex.response().body().subscribe(body);
                for (List<ByteBuffer> chunk; (chunk = body.next()) != null; ) {
                    for (ByteBuffer b : chunk) {
                        while (b.hasRemaining()) {
                            int n = Math.min(b.remaining(), buffer.length);
                            b.get(buffer, 0, n);
                            out.write(buffer, 0, n);
                            md.update(buffer, 0, n);
                            pos += n;
                            digested = pos;
                            received += n;
                        }
                    }
                    if (size >= 0 && pos > size) {
                        restartPart(ch);
                        throw new HubException("the server sent more than the announced " + size + " bytes of " + what + "; the download was discarded");
                    }
                    progress.advance(pos);
                }
            } catch (HubException e) {
                if (!e.retryable()) throw e;
                throw interrupted(pos, size, e);
            } catch (InterruptedIOException e) {
                throw e;
            } catch (IOException e) {
                throw interrupted(pos, size, e);
            } finally {
                progress.stop();
            }
            if (size >= 0 && pos < size)
                throw new HubException("download of " + what + " incomplete: got " + pos + " of " + size
                        + " bytes; the partial file is kept, run pull again to resume", true, null);
            return new Outcome(sha, validator, pos);
        }

        private HubException interrupted(long pos, long size, IOException cause) {
            return new HubException("download of " + what + " interrupted at " + TerminalProgress.formatBytes(pos)
                    + (size >= 0 ? " of " + TerminalProgress.formatBytes(size) : "") + " (" + describe(cause)
                    + "); the partial file is kept, run pull again to resume", true, cause);
        }

        /** Empties the part file and forgets its validator; returns the new length, 0. */
        private long restartPart(FileChannel ch) throws IOException {
            ch.truncate(0);
            state = null;
            digest = null;
            digested = 0;
            Files.deleteIfExists(partMeta);
            return 0;
        }

        /** A digest of the part's first {@code length} bytes, continuing the running one when it covers exactly that. */
        private MessageDigest digestOfPart(long length) throws IOException {
            if (digest != null && digested == length) return digest;
            digest = sha256();
            try (InputStream in = Files.newInputStream(part)) {
                long left = length;
                for (int n; left > 0 && (n = in.read(buffer, 0, (int) Math.min(buffer.length, left))) > 0; left -= n) digest.update(buffer, 0, n);
                if (left > 0) throw new IOException(part + " is shorter than expected");
            }
            digested = length;
            return digest;
        }
    }

    // ---- HTTP plumbing ----

    @FunctionalInterface
    private interface IOCall<T> {
        T call() throws IOException;
    }

    /** Runs {@code call}, repeating it after retryable failures with exponential backoff. */
    private <T> T retrying(ProgressListener progress, IOCall<T> call) throws IOException {
        for (int attempt = 1; ; attempt++) {
            try {
                return call.call();
            } catch (HubException e) {
                if (!e.retryable() || attempt >= maxAttempts) throw e;
                long wait = Math.min(backoff.toMillis() << Math.min(attempt - 1, 20), 30_000L);
                progress.message("attempt " + attempt + " of " + maxAttempts + " failed (" + e.getMessage() + "); retrying in "
                        + String.format(Locale.ROOT, "%.1f s", wait / 1000.0));
                try {
                    Thread.sleep(wait);
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    throw new InterruptedIOException("interrupted while waiting to retry");
                }
            }
        }
    }

    /** A final (non-redirect) response and the headers of the redirects that led to it, hub first. */
    private record Exchange<T>(HttpResponse<T> response, List<HttpHeaders> hops) {
        int status() {
            return response.statusCode();
        }

        /** All headers named {@code name}, hub hop first: the hub announces LFS metadata on its redirect. */
        private List<String> all(String name) {
            List<String> out = new ArrayList<>();
            for (HttpHeaders h : hops) h.firstValue(name).ifPresent(out::add);
            response.headers().firstValue(name).ifPresent(out::add);
            return out;
        }

        /** The SHA-256 the hub announced for the content (X-Linked-Etag, or an ETag that is one). */
        String sha256() {
            for (String v : all("X-Linked-Etag")) if (sha256Of(v) != null) return sha256Of(v);
            for (String v : all("ETag")) if (sha256Of(v) != null) return sha256Of(v);
            return null;
        }

        long linkedSize() {
            for (String v : all("X-Linked-Size")) {
                try {
                    return Long.parseLong(v.strip());
                } catch (NumberFormatException ignored) {
                    // a malformed header is as good as none
                }
            }
            return -1;
        }

        /** The serving host's validator for If-Range: a strong ETag, else Last-Modified. */
        String validator() {
            Optional<String> etag = response.headers().firstValue("ETag");
            if (etag.isPresent() && !etag.get().startsWith("W/")) return etag.get();
            return response.headers().firstValue("Last-Modified").orElse(null);
        }

        /** {start, end, total} of a 206's Content-Range ({@code total} -1 when given as *), or null. */
        long[] contentRange() {
            Matcher m = CONTENT_RANGE.matcher(response.headers().firstValue("Content-Range").orElse(""));
            if (!m.matches()) return null;
            return new long[]{Long.parseLong(m.group(1)), Long.parseLong(m.group(2)), m.group(3).equals("*") ? -1 : Long.parseLong(m.group(3))};
        }

        /** The complete length a 416 announces ({@code bytes * /N}), or -1. */
        long unsatisfiedRangeTotal() {
            Matcher m = UNSATISFIED_RANGE.matcher(response.headers().firstValue("Content-Range").orElse(""));
            return m.matches() ? Long.parseLong(m.group(1)) : -1;
        }

        /** Drops a body the caller will not read, closing the connection instead of draining it. */
        @SuppressWarnings("unchecked")
        void discard() {
            if (response.body() instanceof Flow.Publisher<?> p) BodyStream.discard((Flow.Publisher<List<ByteBuffer>>) p);
        }
    }

    /**
     * Sends a GET, following redirects by hand (the token only ever goes to the hub's host). Success bodies
     * (2xx) go to {@code success}; other bodies are dropped. Connection failures are retryable.
     */
    private <T> Exchange<T> open(URI uri, Map<String, String> headers, Supplier<BodySubscriber<T>> success) throws IOException {
        List<HttpHeaders> hops = new ArrayList<>();
        URI current = uri;
        for (int hop = 0; ; hop++) {
            HttpRequest.Builder rb = HttpRequest.newBuilder(current).timeout(responseTimeout).header("User-Agent", USER_AGENT);
            if (config.token() != null && current.getHost().equalsIgnoreCase(config.endpoint().getHost()))
                rb.header("Authorization", "Bearer " + config.token());
            headers.forEach(rb::header);
            HttpResponse<T> r;
            try {
                r = http.send(rb.build(), info -> info.statusCode() / 100 == 2 ? success.get() : BodySubscribers.replacing(null));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new InterruptedIOException("interrupted while contacting " + current.getHost());
            } catch (IOException e) {
                throw new HubException("cannot reach " + current.getHost() + ": " + describe(e), true, e);
            }
            int sc = r.statusCode();
            if (sc != 301 && sc != 302 && sc != 303 && sc != 307 && sc != 308) return new Exchange<>(r, hops);
            hops.add(r.headers());
            if (hop >= MAX_REDIRECTS) throw new HubException("too many redirects from " + uri);
            String location = r.headers().firstValue("Location")
                    .orElseThrow(() -> new HubException("redirect without a Location from " + r.uri().getHost()));
            try {
                current = current.resolve(location);
            } catch (IllegalArgumentException e) {
                throw new HubException("invalid redirect from " + r.uri().getHost() + ": " + location);
            }
        }
    }

    private HubException statusError(int sc, String what) {
        return switch (sc) {
            case 401, 403 -> config.token() == null
                    ? new HubException("authentication required: set HF_TOKEN to access " + what
                            + " (the hub also answers this way for repositories that do not exist)")
                    : new HubException("access denied to " + what + " (HTTP " + sc + "): HF_TOKEN was rejected or lacks access; "
                            + "gated repositories need their terms accepted on the hub");
            case 404 -> new HubException("not found: " + what);
            case 408, 429, 500, 502, 503, 504 -> new HubException("server error (HTTP " + sc + ") for " + what, true, null);
            default -> new HubException("unexpected HTTP " + sc + " for " + what, sc >= 500, null);
        };
    }

    private static String describe(String name, String revision) {
        return ModelRef.DEFAULT_REVISION.equals(revision) ? name : name + " (revision " + revision + ")";
    }

    /** A short cause for messages; several JDK network exceptions carry no message. */
    private static String describe(IOException e) {
        if (e instanceof HttpConnectTimeoutException) return "connection timed out";
        if (e instanceof HttpTimeoutException) return "no response in time";
        if (e instanceof ConnectException && (e.getMessage() == null || e.getMessage().isBlank())) return "connection refused";
        String m = e.getMessage();
        return m == null || m.isBlank() ? e.getClass().getSimpleName() : m;
    }

    /** The lowercase SHA-256 hex in an ETag-style value ({@code "abc…"}, {@code W/"abc…"}), or null. */
    static String sha256Of(String value) {
        if (value == null) return null;
        String v = value.strip();
        if (v.startsWith("W/")) v = v.substring(2);
        if (v.length() >= 2 && v.startsWith("\"") && v.endsWith("\"")) v = v.substring(1, v.length() - 1);
        v = v.toLowerCase(Locale.ROOT);
        return SHA256.matcher(v).matches() ? v : null;
    }

    static String encodeSegment(String s) {
        return URLEncoder.encode(s, StandardCharsets.UTF_8).replace("+", "%20");
    }

    static String encodePath(String path) {
        StringBuilder sb = new StringBuilder();
        for (String seg : path.split("/")) sb.append(sb.isEmpty() ? "" : "/").append(encodeSegment(seg));
        return sb.toString();
    }

    static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JDK has SHA-256", e);
        }
    }
}
