package org.powerinfer4j.engine.hub;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ModelCacheTest {
    @TempDir Path tmp;

    /** Puts a complete entry into the cache the way a pull leaves it. */
    static Path put(ModelCache cache, String repo, String file, int size) throws IOException {
        Path p = cache.pathOf(repo, file);
        Files.createDirectories(p.getParent());
        Files.write(p, new byte[size]);
        ModelCache.writeMetadata(ModelCache.metadataPath(p), new CacheMetadata(repo, file, "main", "http://hub/" + repo, "\"e\"", null, size, "now"));
        return p;
    }

    @Test
    void layoutIsModelsOwnerRepoFile() {
        ModelCache cache = new ModelCache(tmp);
        assertThat(cache.pathOf("acme/m-GGUF", "sub/m.gguf")).isEqualTo(tmp.resolve("models/acme/m-GGUF/sub/m.gguf"));
        assertThat(ModelCache.metadataPath(tmp.resolve("x.gguf"))).isEqualTo(tmp.resolve("x.gguf.meta.json"));
        assertThatThrownBy(() -> cache.pathOf("acme/m", "../../../etc/passwd")).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void defaultRootFollowsTheEnvironment() {
        assertThat(ModelCache.defaultRoot(Map.of("POWERINFER4J_CACHE", "/c", "XDG_CACHE_HOME", "/x"))).isEqualTo(Path.of("/c"));
        assertThat(ModelCache.defaultRoot(Map.of("XDG_CACHE_HOME", "/x"))).isEqualTo(Path.of("/x/powerinfer4j"));
        assertThat(ModelCache.defaultRoot(Map.of("POWERINFER4J_CACHE", " "))).isEqualTo(Path.of(System.getProperty("user.home"), ".cache", "powerinfer4j"));
    }

    @Test
    void listShowsCompleteAndPartialEntriesButNotStrayFiles() throws IOException {
        ModelCache cache = new ModelCache(tmp);
        put(cache, "a/one", "m-Q4_K_M.gguf", 10);
        put(cache, "b/two", "dir/n.gguf", 20);
        Path partial = cache.pathOf("c/three", "p.gguf");
        Files.createDirectories(partial.getParent());
        Files.write(ModelCache.partPath(partial), new byte[5]);
        Files.write(cache.pathOf("a/one", "stray.bin"), new byte[1]); // no metadata: not put there by pull

        assertThat(cache.list()).extracting(CachedModel::name, CachedModel::size, CachedModel::complete).containsExactly(
                org.assertj.core.groups.Tuple.tuple("a/one/m-Q4_K_M.gguf", 10L, true),
                org.assertj.core.groups.Tuple.tuple("b/two/dir/n.gguf", 20L, true),
                org.assertj.core.groups.Tuple.tuple("c/three/p.gguf", 5L, false));
        assertThat(new ModelCache(tmp.resolve("absent")).list()).isEmpty();
    }

    @Test
    void lookupRequiresMetadataMatchingTheFileSize() throws IOException {
        ModelCache cache = new ModelCache(tmp);
        Path p = put(cache, "a/one", "m.gguf", 10);
        assertThat(cache.lookup("a/one", "m.gguf")).isPresent();
        Files.write(p, new byte[7]); // truncated behind the cache's back
        assertThat(cache.lookup("a/one", "m.gguf")).isEmpty();
    }

    @Test
    void findAcceptsFullNamesTrailingPartsAndSingleFileRepos() throws IOException {
        ModelCache cache = new ModelCache(tmp);
        Path one = put(cache, "a/one", "m-Q4_K_M.gguf", 10);
        Path two = put(cache, "b/two", "m-Q8_0.gguf", 10);
        put(cache, "b/two", "other.gguf", 10);

        assertThat(cache.find("a/one/m-Q4_K_M.gguf").path()).isEqualTo(one);
        assertThat(cache.find("one/m-Q4_K_M.gguf").path()).isEqualTo(one);
        assertThat(cache.find("m-Q8_0.gguf").path()).isEqualTo(two);
        assertThat(cache.find("a/one").path()).isEqualTo(one);
        assertThatThrownBy(() -> cache.find("b/two")).hasMessageContaining("ambiguous")
                .hasMessageContaining("b/two/m-Q8_0.gguf").hasMessageContaining("b/two/other.gguf");
        assertThatThrownBy(() -> cache.find("nope.gguf")).hasMessageStartingWith("no cached model matches nope.gguf");
        assertThatThrownBy(() -> cache.find("gguf")).hasMessageStartingWith("no cached model matches"); // whole segments only
    }

    @Test
    void resolvePrefersAnExistingPathAndOtherwiseTheCache() throws IOException {
        ModelCache cache = new ModelCache(tmp.resolve("cache"));
        Path cached = put(cache, "a/one", "m.gguf", 10);
        Path local = Files.write(tmp.resolve("m.gguf"), new byte[3]);

        assertThat(ModelCache.resolve(local.toString(), cache)).isEqualTo(local);
        assertThat(ModelCache.resolve("one/m.gguf", cache)).isEqualTo(cached);
        assertThatThrownBy(() -> ModelCache.resolve(tmp.resolve("missing.gguf").toString(), cache))
                .isInstanceOf(HubException.class).hasMessageStartingWith("no such file or cached model: ");
    }

    @Test
    void removeDeletesTheFileItsMetadataAndEmptyFolders() throws IOException {
        ModelCache cache = new ModelCache(tmp);
        Path one = put(cache, "a/one", "m.gguf", 10);
        Path keep = put(cache, "a/two", "m.gguf", 10);

        assertThatThrownBy(() -> cache.remove("m.gguf")).hasMessageContaining("ambiguous");
        assertThat(one).exists();

        CachedModel removed = cache.remove("a/one/m.gguf");

        assertThat(removed.path()).isEqualTo(one);
        assertThat(one).doesNotExist();
        assertThat(ModelCache.metadataPath(one)).doesNotExist();
        assertThat(one.getParent()).doesNotExist();
        assertThat(keep).exists();
        assertThat(cache.list()).extracting(CachedModel::name).containsExactly("a/two/m.gguf");
        assertThatThrownBy(() -> cache.remove("a/one/m.gguf")).hasMessageStartingWith("no cached model matches");
    }

    @Test
    void removeAlsoClearsAnInterruptedDownload() throws IOException {
        ModelCache cache = new ModelCache(tmp);
        Path p = cache.pathOf("c/three", "p.gguf");
        Files.createDirectories(p.getParent());
        Files.write(ModelCache.partPath(p), new byte[5]);
        Files.writeString(ModelCache.metadataPath(ModelCache.partPath(p)), "{}");

        assertThat(cache.remove("p.gguf").complete()).isFalse();
        assertThat(ModelCache.partPath(p)).doesNotExist();
        assertThat(cache.modelsDir()).isEmptyDirectory();
    }
}
