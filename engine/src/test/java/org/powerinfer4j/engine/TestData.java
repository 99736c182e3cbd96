package org.powerinfer4j.engine;

import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Locates {@code ../shared/testdata} beside the project root (override with
 * {@code -Dpowerinfer4j.testdata=DIR}). Tests read models from there; nothing is copied into the project.
 */
public final class TestData {
    private TestData() {}

    public static Path dir() {
        String prop = System.getProperty("powerinfer4j.testdata");
        if (prop != null && Files.isDirectory(Path.of(prop))) return Path.of(prop).toAbsolutePath().normalize();
        for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
            Path candidate = p.resolveSibling("shared").resolve("testdata");
            if (Files.isDirectory(candidate)) return candidate.normalize();
        }
        throw new IllegalStateException("test data not found: set -Dpowerinfer4j.testdata or place shared/testdata beside the project");
    }

    public static Path file(String relative) {
        Path p = dir().resolve(relative);
        if (!Files.exists(p)) throw new IllegalStateException("missing test data file " + p);
        return p;
    }
}
