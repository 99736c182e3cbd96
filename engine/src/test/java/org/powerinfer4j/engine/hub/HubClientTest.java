package org.powerinfer4j.engine.hub;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(20)
class HubClientTest {
    static final String FILE = "tiny-Q4_K_M.gguf";
    static final int SIZE = 3 * 1024 * 1024 + 123; // several HTTP chunks, not a round number
    static final byte[] CONTENT = HubTestServer.bytes(SIZE, 42);

    @TempDir Path tmp;
    HubTestServer server;
    ModelCache cache;
    Path target, part;

    @BeforeEach
    void start() throws IOException {
        server = new HubTestServer();
        server.files.put(FILE, CONTENT);
        cache = new ModelCache(tmp.resolve("cache"));
        target = cache.pathOf(HubTestServer.REPO, FILE);
        part = ModelCache.partPath(target);
    }

    @AfterEach
    void stop() {
        server.close();
    }

    HubClient client(int attempts, String token) {
        return HubClient.builder(new HubConfig(server.endpoint(), token)).maxAttempts(attempts).backoff(Duration.ofMillis(10))
                .stallTimeout(Duration.ofMillis(400)).connectTimeout(Duration.ofSeconds(2)).responseTimeout(Duration.ofSeconds(5)).build();
    }

    PullResult pull(int attempts) throws IOException {
        try (HubClient c = client(attempts, null)) {
            return c.pull(ModelRef.parse(HubTestServer.REPO + "/" + FILE, "main"), cache, ProgressListener.NONE);
        }
    }

    List<HubTestServer.Request> cdnRequests() {
        return server.requestsTo("/cdn/");
    }

    @Test
    void downloadsThroughTheRedirectVerifiesAndCaches() throws IOException {
        PullResult r = pull(1);

        assertThat(r.alreadyCached()).isFalse();
        assertThat(r.model().path()).isEqualTo(target);
        assertThat(Files.readAllBytes(target)).isEqualTo(CONTENT);
        assertThat(part).doesNotExist();
        assertThat(ModelCache.metadataPath(part)).doesNotExist();
        CacheMetadata meta = ModelCache.readMetadata(ModelCache.metadataPath(target));
        assertThat(meta.sha256()).isEqualTo(HubTestServer.sha256(CONTENT));
        assertThat(meta.size()).isEqualTo(SIZE);
        assertThat(meta.revision()).isEqualTo("main");
        assertThat(meta.url()).isEqualTo(server.endpoint() + "/" + HubTestServer.REPO + "/resolve/main/" + FILE);
        assertThat(meta.etag()).isEqualTo(HubTestServer.cdnEtag(CONTENT));
        assertThat(server.requestsTo("/" + HubTestServer.REPO + "/resolve/main/")).extracting(HubTestServer.Request::status).containsExactly(302);
        assertThat(cdnRequests()).extracting(HubTestServer.Request::status).containsExactly(200);
        assertThat(r.bytesTransferred()).isEqualTo(SIZE);
    }

    @Test
    void aCompleteCachedFileIsNotDownloadedAgain() throws IOException {
        pull(1);
        int before = server.requests.size();

        PullResult again = pull(1);

        assertThat(again.alreadyCached()).isTrue();
        assertThat(again.model().path()).isEqualTo(target);
        assertThat(server.requests).hasSize(before);
    }

    @Test
    void aDroppedConnectionKeepsThePartAndTheNextPullResumesWithARange() throws IOException {
        server.dropAfter.set(1_000_000);

        assertThatThrownBy(() -> pull(1)).isInstanceOf(HubException.class)
                .hasMessageContaining("interrupted").hasMessageContaining("run pull again to resume");
        long kept = Files.size(part);
        assertThat(kept).isBetween(1L, 1_000_000L);
        assertThat(target).doesNotExist();

        PullResult r = pull(1);

        assertThat(r.resumed()).isTrue();
        assertThat(r.bytesTransferred()).isEqualTo(SIZE - kept);
        HubTestServer.Request resume = cdnRequests().getLast();
        assertThat(resume.header("Range")).isEqualTo("bytes=" + kept + "-");
        assertThat(resume.header("If-Range")).isEqualTo(HubTestServer.cdnEtag(CONTENT));
        assertThat(resume.status()).isEqualTo(206);
        assertThat(Files.readAllBytes(target)).isEqualTo(CONTENT);
        assertThat(part).doesNotExist();
    }

    @Test
    void aDroppedConnectionIsRetriedWithinOnePull() throws IOException {
        server.dropAfter.set(700_000);

        PullResult r = pull(3);

        assertThat(Files.readAllBytes(target)).isEqualTo(CONTENT);
        assertThat(r.resumed()).isTrue();
        assertThat(cdnRequests()).extracting(HubTestServer.Request::status).containsExactly(200, 206);
        assertThat(cdnRequests()).extracting(HubTestServer.Request::complete).containsExactly(false, true);
    }

    @Test
    void transientServerErrorsAreRetriedAndThenReported() throws IOException {
        server.failures.set(2);
        assertThat(Files.readAllBytes(pull(3).model().path())).isEqualTo(CONTENT);

        Files.delete(target);
        server.failures.set(5);
        assertThatThrownBy(() -> pull(2)).hasMessageContaining("HTTP 503");
    }

    @Test
    void aShortBodyUnderALargerContentLengthKeepsThePartForResume() throws IOException {
        server.omitLinkedSize = true; // as for files outside LFS: the Content-Length is all the client knows
        server.extraContentLength = 1000; // declares more than it sends, then closes

        assertThatThrownBy(() -> pull(1)).isInstanceOf(HubException.class).hasMessageContaining("run pull again to resume");
        assertThat(Files.size(part)).isEqualTo(SIZE);
        assertThat(target).doesNotExist();

        server.extraContentLength = 0;
        PullResult r = pull(1);

        // the part already held every byte: the range is unsatisfiable and nothing more is transferred
        assertThat(cdnRequests().getLast().status()).isEqualTo(416);
        assertThat(r.bytesTransferred()).isZero();
        assertThat(Files.readAllBytes(target)).isEqualTo(CONTENT);
    }

    @Test
    void aContentLengthDisagreeingWithTheAnnouncedSizeIsRejected() {
        server.announcedSize = SIZE - 10;

        assertThatThrownBy(() -> pull(1)).hasMessageContaining("size mismatch").hasMessageContaining(String.valueOf(SIZE - 10));
        assertThat(target).doesNotExist();
    }

    @Test
    void aStalledTransferIsAbandonedAndKeepsThePart() throws IOException {
        server.stallAfter.set(500_000);

        assertThatThrownBy(() -> pull(1)).hasMessageContaining("no data received");
        assertThat(Files.size(part)).isBetween(1L, 500_000L);

        assertThat(Files.readAllBytes(pull(1).model().path())).isEqualTo(CONTENT);
        assertThat(cdnRequests().getLast().status()).isEqualTo(206);
    }

    @Test
    void aWrongSha256IsRejectedAndThePartDeleted() {
        server.announcedSha256 = HubTestServer.sha256(new byte[]{1, 2, 3});

        assertThatThrownBy(() -> pull(3)).isInstanceOf(HubException.class).hasMessageContaining("sha256 mismatch")
                .hasMessageContaining(server.announcedSha256).hasMessageContaining(HubTestServer.sha256(CONTENT));
        assertThat(part).doesNotExist();
        assertThat(ModelCache.metadataPath(part)).doesNotExist();
        assertThat(target).doesNotExist();
        assertThat(cdnRequests()).hasSize(1); // a checksum failure is not retried
    }

    @Test
    void aServerIgnoringRangesMakesThePullStartOver() throws IOException {
        server.dropAfter.set(1_000_000);
        assertThatThrownBy(() -> pull(1)).isInstanceOf(HubException.class);
        server.ignoreRange = true;

        PullResult r = pull(1);

        HubTestServer.Request last = cdnRequests().getLast();
        assertThat(last.header("Range")).isNotNull();
        assertThat(last.status()).isEqualTo(200);
        assertThat(r.resumed()).isFalse();
        assertThat(r.bytesTransferred()).isEqualTo(SIZE);
        assertThat(Files.readAllBytes(target)).isEqualTo(CONTENT);
    }

    @Test
    void aFileChangedBetweenAttemptsIsDownloadedAfreshThroughIfRange() throws IOException {
        server.dropAfter.set(1_000_000);
        assertThatThrownBy(() -> pull(1)).isInstanceOf(HubException.class);
        byte[] updated = HubTestServer.bytes(SIZE + 77, 7);
        server.files.put(FILE, updated);

        PullResult r = pull(1);

        HubTestServer.Request last = cdnRequests().getLast();
        assertThat(last.header("If-Range")).isEqualTo(HubTestServer.cdnEtag(CONTENT));
        assertThat(last.status()).isEqualTo(200);
        assertThat(Files.readAllBytes(target)).isEqualTo(updated);
        assertThat(r.model().metadata().sha256()).isEqualTo(HubTestServer.sha256(updated));
    }

    @Test
    void aChangedETagOnA206MakesThePullStartOverWithoutRange() throws IOException {
        server.dropAfter.set(1_000_000);
        assertThatThrownBy(() -> pull(1)).isInstanceOf(HubException.class);
        byte[] updated = HubTestServer.bytes(SIZE, 8);
        server.files.put(FILE, updated);
        server.ignoreIfRange = true; // answers the stale range with 206 of the new content

        pull(1);

        List<HubTestServer.Request> cdn = cdnRequests();
        // the last ranged request is the resume the server answered with the new content; under load the pull may
        // make other requests around it (a seen 302), so find it rather than assume it is second to last
        HubTestServer.Request stale = cdn.reversed().stream().filter(q -> q.header("Range") != null).findFirst().orElseThrow();
        assertThat(stale.status()).isEqualTo(206);
        assertThat(cdn.getLast().header("Range")).isNull();
        assertThat(cdn.getLast().status()).isEqualTo(200);
        assertThat(Files.readAllBytes(target)).isEqualTo(updated);
    }

    @Test
    void notFoundNamesTheFileAndLeavesNothingBehind() throws InterruptedException {
        assertThatThrownBy(() -> {
            try (HubClient c = client(3, null)) {
                c.pull(new ModelRef(HubTestServer.REPO, "missing.gguf", "main"), cache, ProgressListener.NONE);
            }
        }).isInstanceOf(HubException.class).hasMessage("not found: " + HubTestServer.REPO + "/missing.gguf");
        assertThat(ModelCache.partPath(cache.pathOf(HubTestServer.REPO, "missing.gguf"))).doesNotExist();
        assertThat(server.awaitRequests(1)).hasSize(1); // a 404 is final, not retried
    }

    @Test
    void authenticationIsRequiredAndTheTokenGoesToTheHubHostOnly() throws IOException {
        server.requireToken = true;
        server.cdnHost = "localhost"; // the CDN is another host name, as on the real hub
        ModelRef ref = new ModelRef(HubTestServer.REPO, FILE, "main");

        assertThatThrownBy(() -> {
            try (HubClient c = client(1, null)) {
                c.pull(ref, cache, ProgressListener.NONE);
            }
        }).hasMessageStartingWith("authentication required: set HF_TOKEN");
        assertThatThrownBy(() -> {
            try (HubClient c = client(1, "hf_wrong")) {
                c.pull(ref, cache, ProgressListener.NONE);
            }
        }).hasMessageStartingWith("access denied to " + ref.name());

        try (HubClient c = client(1, HubTestServer.GOOD_TOKEN)) {
            c.pull(ref, cache, ProgressListener.NONE);
        }
        assertThat(Files.readAllBytes(target)).isEqualTo(CONTENT);
        assertThat(server.requestsTo("/" + HubTestServer.REPO).getLast().header("Authorization")).isEqualTo("Bearer " + HubTestServer.GOOD_TOKEN);
        assertThat(cdnRequests()).singleElement().satisfies(r -> assertThat(r.header("Authorization")).isNull());
    }

    @Test
    void aNonDefaultRevisionIsInTheUrlAndARevisionChangeDownloadsAgain() throws IOException {
        pull(1);
        try (HubClient c = client(1, null)) {
            PullResult r = c.pull(ModelRef.parse(HubTestServer.REPO + "/" + FILE, "refs/pr/1"), cache, ProgressListener.NONE);
            assertThat(r.alreadyCached()).isFalse();
            assertThat(r.model().metadata().revision()).isEqualTo("refs/pr/1");
        }
        assertThat(server.requestsTo("/" + HubTestServer.REPO + "/resolve/refs%2Fpr%2F1/")).hasSize(1);
    }

    // ---- repository listing ----

    static String listing(String... files) {
        StringBuilder sb = new StringBuilder("{\"id\":\"" + HubTestServer.REPO + "\",\"siblings\":[");
        for (int i = 0; i < files.length; i++)
            sb.append(i > 0 ? "," : "").append("{\"rfilename\":\"").append(files[i]).append("\"}");
        return sb.append("]}").toString();
    }

    @Test
    void aRepositoryWithOneGgufPullsThatFile() throws IOException {
        server.listingJson = listing(".gitattributes", "README.md", FILE);
        try (HubClient c = client(1, null)) {
            PullResult r = c.pull(ModelRef.parse(HubTestServer.REPO, "main"), cache, ProgressListener.NONE);
            assertThat(r.model().file()).isEqualTo(FILE);
            assertThat(Files.readAllBytes(r.model().path())).isEqualTo(CONTENT);
            assertThat(c.pull(ModelRef.parse(HubTestServer.REPO, "main"), cache, ProgressListener.NONE).alreadyCached()).isTrue();
        }
        assertThat(server.requestsTo("/api/models/" + HubTestServer.REPO + "/revision/main")).isNotEmpty();
    }

    @Test
    void severalGgufsWithoutOneQ4KMAreAnErrorListingThem() {
        server.listingJson = listing("tiny-Q8_0.gguf", "tiny-F16.gguf", "README.md");
        assertThatThrownBy(() -> {
            try (HubClient c = client(1, null)) {
                c.pull(ModelRef.parse(HubTestServer.REPO, "main"), cache, ProgressListener.NONE);
            }
        }).isInstanceOf(HubException.class).hasMessageContaining("has 2 GGUF files")
                .hasMessageContaining("tiny-F16.gguf, tiny-Q8_0.gguf").hasMessageNotContaining("README");
        assertThat(cdnRequests()).isEmpty();
    }

    @Test
    void theListingGivesSizesAndLfsChecksums() throws IOException {
        String sha = HubTestServer.sha256(CONTENT);
        server.listingJson = "{\"siblings\":[{\"rfilename\":\"a.gguf\",\"size\":12,\"lfs\":{\"sha256\":\"" + sha + "\",\"size\":12}},"
                + "{\"rfilename\":\"config.json\"}]}";
        try (HubClient c = client(1, null)) {
            assertThat(c.listFiles(HubTestServer.REPO, "main"))
                    .containsExactly(new RepoFile("a.gguf", 12, sha), new RepoFile("config.json", -1, null));
        }
    }

    @Test
    void anUnknownRepositoryIsNotFound() {
        assertThatThrownBy(() -> {
            try (HubClient c = client(1, null)) {
                c.listFiles(HubTestServer.REPO, "main");
            }
        }).hasMessage("not found: " + HubTestServer.REPO);
    }

    @Test
    void chooseGgufPrefersTheSingleQ4KM() throws HubException {
        List<RepoFile> files = List.of(new RepoFile("m-Q8_0.gguf", 1, null), new RepoFile("m-q4_k_m.gguf", 1, null),
                new RepoFile("m-Q2_K.gguf", 1, null));
        assertThat(HubClient.chooseGguf("a/b", files)).isEqualTo("m-q4_k_m.gguf");
        assertThatThrownBy(() -> HubClient.chooseGguf("a/b", List.of(new RepoFile("README.md", 1, null))))
                .hasMessage("no GGUF file in a/b");
        assertThatThrownBy(() -> HubClient.chooseGguf("a/b", List.of(new RepoFile("x-Q4_K_M-00001-of-00002.gguf", 1, null),
                new RepoFile("x-Q4_K_M-00002-of-00002.gguf", 1, null)))).hasMessageContaining("2 of them Q4_K_M");
    }

    @Test
    void unreachableHubIsAClearRetryableError() throws IOException {
        server.close(); // nothing listens on the port any more
        assertThatThrownBy(() -> pull(2)).isInstanceOf(HubException.class).hasMessageStartingWith("cannot reach 127.0.0.1");
    }

    @Test
    void etagValuesYieldSha256OnlyWhenTheyAreOne() {
        String sha = HubTestServer.sha256(CONTENT);
        assertThat(HubClient.sha256Of("\"" + sha.toUpperCase() + "\"")).isEqualTo(sha);
        assertThat(HubClient.sha256Of("W/\"" + sha + "\"")).isEqualTo(sha);
        assertThat(HubClient.sha256Of("\"3f786850e387550fdab836ed7e6dc881de23001b\"")).isNull(); // git blob sha1
        assertThat(HubClient.sha256Of(null)).isNull();
    }
}
