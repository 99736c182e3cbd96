package org.powerinfer4j.engine.hub;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.annotation.JsonInclude;

/**
 * The JSON stored beside a cached file ({@code FILE.meta.json}) and beside a partial download
 * ({@code FILE.part.meta.json}, where it carries the validator a resume needs).
 *
 * @param repo         {@code owner/name}
 * @param file         path inside the repository
 * @param revision     the revision asked for
 * @param url          the hub address the file was resolved from
 * @param etag         the serving host's ETag (or Last-Modified date), used as {@code If-Range} validator
 * @param sha256       expected (partial) or verified (complete) SHA-256, or null when the hub gave none
 * @param size         size in bytes, or -1 when unknown (partial only)
 * @param downloadedAt ISO-8601 instant the download completed; null while partial
 */
@JsonIgnoreProperties(ignoreUnknown = true)
@JsonInclude(JsonInclude.Include.NON_NULL)
public record CacheMetadata(String repo, String file, String revision, String url, String etag, String sha256, long size,
                            String downloadedAt) {}
