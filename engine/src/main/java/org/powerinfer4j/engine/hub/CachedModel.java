package org.powerinfer4j.engine.hub;

import java.nio.file.Path;

/**
 * A file in the model cache.
 *
 * @param name     {@code owner/repo/file}
 * @param path     the cached file (for a partial download, where it will be once complete)
 * @param size     bytes on disk (of the part file while partial)
 * @param complete false for an interrupted download that {@code pull} can resume
 * @param metadata the stored metadata, or null when a partial download has none
 */
public record CachedModel(String name, String repo, String file, Path path, long size, boolean complete, CacheMetadata metadata) {}
