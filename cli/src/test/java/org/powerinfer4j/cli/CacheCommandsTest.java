package org.powerinfer4j.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** pull, list, rm and -m name resolution end to end, against a loopback stand-in for the hub. */
@Timeout(20)
class CacheCommandsTest {
    static final String REPO = "acme/m-GGUF";
    static final String FILE = "m-Q4_K_M.gguf";

    @TempDir Path tmp;
    HttpServer server;
    byte[] content;
    Path cacheDir;

    record Result(int code, String out, String err) {}

    @BeforeEach
    void start() throws Exception {
        content = new byte[300_000];
        new Random(1).nextBytes(content);
        String sha = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(content));
        cacheDir = tmp.resolve("cache");
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        server.createContext("/api/models/" + REPO + "/revision/main", ex -> send(ex, 200,
                ("{\"siblings\":[{\"rfilename\":\"m-Q8_0.gguf\"},{\"rfilename\":\"" + FILE + "\"},{\"rfilename\":\"README.md\"}]}")
                        .getBytes(StandardCharsets.UTF_8)));
        server.createContext("/" + REPO + "/resolve/main/" + FILE, ex -> {
            ex.getResponseHeaders().set("Location", "/cdn/blob?sig=1");
            ex.getResponseHeaders().set("X-Linked-Etag", "\"" + sha + "\"");
            ex.getResponseHeaders().set("X-Linked-Size", Integer.toString(content.length));
            send(ex, 302, null);
        });
        server.createContext("/cdn/blob", ex -> {
            ex.getResponseHeaders().set("ETag", "\"blob-1\"");
            send(ex, 200, content);
        });
        server.createContext("/", ex -> send(ex, 404, null));
        server.start();
    }

    private static void send(HttpExchange ex, int status, byte[] body) throws IOException {
        try (ex) {
            ex.sendResponseHeaders(status, body == null ? -1 : body.length);
            if (body != null) ex.getResponseBody().write(body);
        }
    }

    @AfterEach
    void stop() {
        server.stop(0);
    }

    Result run(String... args) {
        CommandLine cl = Main.commandLine();
        StringWriter out = new StringWriter(), err = new StringWriter();
        cl.setOut(new PrintWriter(out, true));
        cl.setErr(new PrintWriter(err, true));
        int code = cl.execute(args);
        return new Result(code, out.toString(), err.toString());
    }

    Result pull(String what) {
        return run("pull", what, "--cache-dir", cacheDir.toString(), "--endpoint", "http://127.0.0.1:" + server.getAddress().getPort(), "--retries", "0");
    }

    @Test
    void pullPicksTheQ4KMFilePrintsItsPathAndThenReportsItCached() throws IOException {
        Result r = pull(REPO);

        Path expected = cacheDir.resolve("models").resolve(REPO).resolve(FILE).toAbsolutePath();
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(r.out().strip()).isEqualTo(expected.toString());
        assertThat(r.err()).contains("pulled " + REPO + "/" + FILE + ": 300 kB");
        assertThat(Files.readAllBytes(expected)).isEqualTo(content);

        Result again = pull(REPO + "/" + FILE);
        assertThat(again.code()).isZero();
        assertThat(again.err()).startsWith("already cached: " + REPO + "/" + FILE);
        assertThat(again.out().strip()).isEqualTo(expected.toString());
    }

    @Test
    void pullErrorsAreOneLineWithANonZeroExit() {
        Result missing = pull("acme/other/x.gguf");
        assertThat(missing.code()).isNotZero();
        assertThat(missing.err().strip()).isEqualTo("error: not found: acme/other/x.gguf");
        assertThat(missing.out()).isEmpty();

        Result bad = pull("just-a-name");
        assertThat(bad.code()).isNotZero();
        assertThat(bad.err()).contains("error: expected OWNER/REPO[/FILE]");
    }

    @Test
    void listAndRmManageTheCache() {
        assertThat(pull(REPO).code()).isZero();
        Result empty = run("list", "--cache-dir", tmp.resolve("empty").toString());
        assertThat(empty.err()).startsWith("no models cached in ");

        Result list = run("list", "--cache-dir", cacheDir.toString());
        assertThat(list.code()).isZero();
        assertThat(list.out().lines().toList()).hasSize(2);
        assertThat(list.out()).contains("NAME").contains(REPO + "/" + FILE).contains("300 kB")
                .contains(cacheDir.resolve("models").resolve(REPO).resolve(FILE).toAbsolutePath().toString());

        Result unknown = run("rm", "nothing.gguf", "--cache-dir", cacheDir.toString());
        assertThat(unknown.code()).isNotZero();
        assertThat(unknown.err()).startsWith("error: no cached model matches nothing.gguf");

        Result rm = run("rm", FILE, "--cache-dir", cacheDir.toString());
        assertThat(rm.code()).as(rm.err()).isZero();
        assertThat(rm.out()).startsWith("removed " + REPO + "/" + FILE);
        assertThat(cacheDir.resolve("models").resolve(REPO)).doesNotExist();
    }

    @Test
    void rmRefusesAnAmbiguousName() throws IOException {
        assertThat(pull(REPO).code()).isZero();
        // the same file name cached under a second repository
        Path other = cacheDir.resolve("models/other/m-GGUF/" + FILE);
        Files.createDirectories(other.getParent());
        Files.copy(cacheDir.resolve("models").resolve(REPO).resolve(FILE), other);
        Files.copy(cacheDir.resolve("models").resolve(REPO).resolve(FILE + ".meta.json"), other.resolveSibling(FILE + ".meta.json"));

        Result rm = run("rm", FILE, "--cache-dir", cacheDir.toString());

        assertThat(rm.code()).isNotZero();
        assertThat(rm.err()).contains("ambiguous").contains(REPO + "/" + FILE).contains("other/m-GGUF/" + FILE);
        assertThat(other).exists();
    }

    @Test
    void modelOptionAcceptsACachedNameButAnExistingPathWins() throws IOException {
        assertThat(pull(REPO).code()).isZero();
        Path cached = cacheDir.resolve("models").resolve(REPO).resolve(FILE).toAbsolutePath();
        Path local = Files.write(tmp.resolve(FILE), new byte[4]);
        String previous = System.getProperty("powerinfer4j.cache");
        System.setProperty("powerinfer4j.cache", cacheDir.toString());
        try {
            ModelOptionsMixin m = new ModelOptionsMixin();
            m.model = FILE; // not a path relative to the working directory: a cached name
            assertThat(m.checkedPath()).isEqualTo(cached);
            m.model = REPO;
            assertThat(m.checkedPath()).isEqualTo(cached);
            m.model = local.toString();
            assertThat(m.checkedPath()).isEqualTo(local);
            m.model = tmp.resolve("absent.gguf").toString();
            assertThatThrownBy(m::checkedPath).hasMessageStartingWith("no such file or cached model: ");
            m.model = tmp.toString();
            assertThatThrownBy(m::checkedPath).hasMessageContaining("is a directory");
        } finally {
            if (previous == null) System.clearProperty("powerinfer4j.cache");
            else System.setProperty("powerinfer4j.cache", previous);
        }
    }
}
