package org.powerinfer4j.engine.hub;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * The local model cache: {@code ROOT/models/OWNER/REPO/FILE}, each complete file with a
 * {@code FILE.meta.json} beside it (see {@link CacheMetadata}); an interrupted download is
 * {@code FILE.part} plus {@code FILE.part.meta.json}. A file counts as cached only once its metadata
 * exists and records its size, so a crash at any point leaves either a resumable part or a complete entry.
 *
 * <p>The root is {@code -Dpowerinfer4j.cache}, else {@code $POWERINFER4J_CACHE}, else
 * {@code $XDG_CACHE_HOME/powerinfer4j}, else {@code ~/.cache/powerinfer4j}.
 */
public final class ModelCache {
    public static final String METADATA_SUFFIX = ".meta.json";
    public static final String PART_SUFFIX = ".part";
    static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    private final Path root;

    public ModelCache(Path root) {
        this.root = root.toAbsolutePath().normalize();
    }

    /** The cache at the location the environment and system properties name. */
    public static ModelCache atDefaultLocation() {
        return new ModelCache(defaultRoot(System.getenv()));
    }

    /** The cache root for the given environment (the {@code powerinfer4j.cache} system property wins over it). */
    public static Path defaultRoot(Map<String, String> env) {
        String prop = HubConfig.nonBlank(System.getProperty("powerinfer4j.cache"));
        if (prop != null) return Path.of(prop);
        String dir = HubConfig.nonBlank(env.get("POWERINFER4J_CACHE"));
        if (dir != null) return Path.of(dir);
        String xdg = HubConfig.nonBlank(env.get("XDG_CACHE_HOME"));
        if (xdg != null) return Path.of(xdg, "powerinfer4j");
        return Path.of(System.getProperty("user.home"), ".cache", "powerinfer4j");
    }

    public Path root() {
        return root;
    }

    public Path modelsDir() {
        return root.resolve("models");
    }

    /** Where {@code repo}'s {@code file} lives in the cache (whether or not it is there). */
    public Path pathOf(String repo, String file) {
        new ModelRef(repo, file, null); // validates both names: no empty, "." or ".." segments
        Path p = modelsDir();
        for (String seg : (repo + "/" + file).split("/")) p = p.resolve(seg);
        return p;
    }

    public static Path metadataPath(Path file) {
        return file.resolveSibling(file.getFileName() + METADATA_SUFFIX);
    }

    public static Path partPath(Path file) {
        return file.resolveSibling(file.getFileName() + PART_SUFFIX);
    }

    /** The complete cached copy of {@code repo/file}, if any. */
    public Optional<CachedModel> lookup(String repo, String file) throws IOException {
        Path p = pathOf(repo, file);
        CacheMetadata meta = readMetadata(metadataPath(p));
        if (meta == null || !Files.isRegularFile(p)) return Optional.empty();
        long size = Files.size(p);
        if (meta.size() != size) return Optional.empty(); // truncated or replaced behind our back
        return Optional.of(new CachedModel(repo + "/" + file, repo, file, p, size, true, meta));
    }

    /** Every cached file and interrupted download, sorted by name. */
    public List<CachedModel> list() throws IOException {
        Path models = modelsDir();
        if (!Files.isDirectory(models)) return List.of();
        List<CachedModel> out = new ArrayList<>();
        try (Stream<Path> walk = Files.walk(models)) {
            for (Path p : (Iterable<Path>) walk::iterator) {
                if (!Files.isRegularFile(p)) continue;
                Path rel = models.relativize(p);
                if (rel.getNameCount() < 3) continue; // not inside OWNER/REPO/
                String name = p.getFileName().toString();
                if (name.endsWith(METADATA_SUFFIX) || name.endsWith(".tmp")) continue;
                boolean partial = name.endsWith(PART_SUFFIX);
                Path file = partial ? p.resolveSibling(name.substring(0, name.length() - PART_SUFFIX.length())) : p;
                CacheMetadata meta = readMetadata(metadataPath(p));
                if (!partial && meta == null) continue; // not put there by pull
                String repo = rel.getName(0) + "/" + rel.getName(1);
                String inRepo = models.resolve(repo).relativize(file).toString().replace('\\', '/');
                out.add(new CachedModel(repo + "/" + inRepo, repo, inRepo, file, Files.size(p), !partial, meta));
            }
        } catch (UncheckedIOException e) {
            throw e.getCause();
        }
        out.sort(Comparator.comparing(CachedModel::name).thenComparing(CachedModel::complete));
        return out;
    }

    /**
     * The complete cached file {@code name} designates: its full name {@code owner/repo/file}, a trailing part
     * of it ({@code repo/file}, {@code file}), or {@code owner/repo} of a repository with one cached file.
     *
     * @throws HubException when nothing or more than one file matches
     */
    public CachedModel find(String name) throws IOException {
        List<CachedModel> matches = matches(name, list().stream().filter(CachedModel::complete).toList());
        if (matches.size() == 1) return matches.get(0);
        if (matches.isEmpty()) throw new HubException("no cached model matches " + name + " (see `powerinfer4j list`)");
        throw ambiguous(name, matches);
    }

    /** Deletes the file {@code name} designates (complete or partial) with its metadata; refuses ambiguous names. */
    public CachedModel remove(String name) throws IOException {
        List<CachedModel> all = list();
        List<CachedModel> matches = matches(name, all);
        // a complete file and its re-download in progress share a name: removing it removes both
        List<String> names = matches.stream().map(CachedModel::name).distinct().toList();
        if (names.isEmpty()) throw new HubException("no cached model matches " + name + " (see `powerinfer4j list`)");
        if (names.size() > 1) throw ambiguous(name, matches);
        CachedModel m = matches.stream().filter(CachedModel::complete).findFirst().orElse(matches.get(0));
        Path p = m.path();
        for (Path q : List.of(p, metadataPath(p), partPath(p), metadataPath(partPath(p)))) Files.deleteIfExists(q);
        for (Path dir = p.getParent(); dir != null && dir.startsWith(modelsDir()) && !dir.equals(modelsDir()); dir = dir.getParent()) {
            try {
                Files.delete(dir); // prune emptied repo and owner folders
            } catch (DirectoryNotEmptyException | NoSuchFileException stop) {
                break;
            }
        }
        return m;
    }

    /**
     * The model file a command line names: an existing path wins; otherwise a cached model as in
     * {@link #find(String)}, looked up in the default cache.
     */
    public static Path resolve(String arg) throws IOException {
        return resolve(arg, atDefaultLocation());
    }

    public static Path resolve(String arg, ModelCache cache) throws IOException {
        try {
            Path p = Path.of(arg);
            if (Files.exists(p)) return p;
        } catch (InvalidPathException notAPath) {
            // fall through to the cache: it may still be a model name
        }
        List<CachedModel> matches = matches(arg, cache.list().stream().filter(CachedModel::complete).toList());
        if (matches.size() == 1) return matches.get(0).path();
        if (matches.isEmpty())
            throw new HubException("no such file or cached model: " + arg + " (cached models: `powerinfer4j list`, download: `powerinfer4j pull OWNER/REPO`)");
        throw ambiguous(arg, matches);
    }

    private static List<CachedModel> matches(String name, List<CachedModel> entries) {
        String n = name.strip();
        while (n.endsWith("/")) n = n.substring(0, n.length() - 1);
        if (n.isEmpty()) return List.of();
        String key = n;
        List<CachedModel> exact = entries.stream().filter(e -> e.name().equals(key)).toList();
        if (!exact.isEmpty()) return exact;
        return entries.stream().filter(e -> e.name().endsWith("/" + key) || e.repo().equals(key) || e.repo().endsWith("/" + key)).toList();
    }

    private static HubException ambiguous(String name, List<CachedModel> matches) {
        return new HubException("ambiguous model name " + name + ": matches "
                + String.join(", ", matches.stream().map(CachedModel::name).distinct().toList()) + "; give the full name");
    }

    /** The metadata stored at {@code metaFile}, or null when absent or unreadable (then the entry does not count). */
    static CacheMetadata readMetadata(Path metaFile) {
        if (!Files.isRegularFile(metaFile)) return null;
        try {
            return JSON.readValue(metaFile.toFile(), CacheMetadata.class);
        } catch (IOException corrupt) {
            return null;
        }
    }

    /** Writes through a temporary file and a rename, so readers never see half a JSON document. */
    static void writeMetadata(Path metaFile, CacheMetadata meta) throws IOException {
        Path tmp = metaFile.resolveSibling(metaFile.getFileName() + ".tmp");
        JSON.writeValue(tmp.toFile(), meta);
        Files.move(tmp, metaFile, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    }
}
