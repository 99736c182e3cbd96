package org.powerinfer4j.engine.hub;

/**
 * One file of a hub repository as listed by the API.
 *
 * @param path   path inside the repository ({@code "model-Q4_K_M.gguf"}, or with folders)
 * @param size   size in bytes, or -1 when the listing did not say
 * @param sha256 lowercase hex SHA-256 of the content for LFS files, else null
 */
public record RepoFile(String path, long size, String sha256) {}
