package org.powerinfer4j.engine.hub;

import java.net.URI;

/**
 * What to pull: {@code owner/repo} and optionally a file inside it. Parsed from {@code owner/repo},
 * {@code owner/repo/path/to/file.gguf}, or a hub web address such as
 * {@code https://huggingface.co/owner/repo/blob/main/file.gguf} (whose revision then wins over the default).
 *
 * @param repo     {@code owner/name}
 * @param file     path inside the repository, or null to pick the repository's GGUF file
 * @param revision branch, tag or commit
 */
public record ModelRef(String repo, String file, String revision) {
    public static final String DEFAULT_REVISION = "main";

    public ModelRef {
        if (revision == null || revision.isBlank()) revision = DEFAULT_REVISION;
        checkSegments(repo, "repository");
        if (repo.split("/").length != 2) throw new IllegalArgumentException("repository must be OWNER/NAME: " + repo);
        if (file != null) checkSegments(file, "file");
    }

    /** Parses {@code REPO[/FILE]} or a hub address; {@code revision} applies unless the address names one. */
    public static ModelRef parse(String spec, String revision) {
        String s = spec.strip();
        if (s.startsWith("http://") || s.startsWith("https://")) {
            String path = URI.create(s).getPath();
            s = path.startsWith("/") ? path.substring(1) : path;
        } else if (s.startsWith("hf.co/") || s.startsWith("huggingface.co/")) {
            s = s.substring(s.indexOf('/') + 1);
        }
        String[] parts = s.split("/", -1);
        if (parts.length < 2) throw new IllegalArgumentException("expected OWNER/REPO[/FILE], got: " + spec);
        String repo = parts[0] + "/" + parts[1];
        int fileStart = 2;
        // web addresses put the revision between the repository and the file
        if (parts.length >= 4 && (parts[2].equals("resolve") || parts[2].equals("blob"))) {
            revision = parts[3];
            fileStart = 4;
        }
        String file = parts.length > fileStart ? String.join("/", java.util.Arrays.copyOfRange(parts, fileStart, parts.length)) : null;
        if (file != null && file.isEmpty()) file = null;
        return new ModelRef(repo, file, revision);
    }

    /** {@code owner/repo/file}, the name the cache lists the model under. */
    public String name() {
        return file == null ? repo : repo + "/" + file;
    }

    public ModelRef withFile(String f) {
        return new ModelRef(repo, f, revision);
    }

    /** Rejects empty, {@code .} and {@code ..} segments so that names cannot escape the cache directory. */
    private static void checkSegments(String path, String what) {
        if (path == null || path.isBlank()) throw new IllegalArgumentException(what + " name is empty");
        for (String seg : path.split("/", -1)) {
            if (seg.isEmpty() || seg.equals(".") || seg.equals("..") || seg.contains("\\"))
                throw new IllegalArgumentException("invalid " + what + " name: " + path);
        }
    }
}
