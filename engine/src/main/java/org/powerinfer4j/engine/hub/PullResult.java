package org.powerinfer4j.engine.hub;

/**
 * The outcome of a pull.
 *
 * @param model            the cached file
 * @param alreadyCached    true when the file was complete in the cache and nothing was downloaded
 * @param resumed          true when the download continued an earlier partial one
 * @param bytesTransferred bytes received over the network in this pull
 * @param elapsedNanos     wall time of the pull
 */
public record PullResult(CachedModel model, boolean alreadyCached, boolean resumed, long bytesTransferred, long elapsedNanos) {}
