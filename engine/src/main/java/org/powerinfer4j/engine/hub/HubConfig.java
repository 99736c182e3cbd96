package org.powerinfer4j.engine.hub;

import java.net.URI;
import java.util.Map;

/**
 * Where the hub is and how to authenticate: {@code HF_ENDPOINT} (default {@value #DEFAULT_ENDPOINT}) and
 * {@code HF_TOKEN} (or the older {@code HUGGING_FACE_HUB_TOKEN}). Built from an explicit map so that tests
 * and callers need not touch the process environment.
 *
 * @param endpoint base address of the hub, without a trailing slash
 * @param token    bearer token, or null for anonymous access
 */
public record HubConfig(URI endpoint, String token) {
    public static final String DEFAULT_ENDPOINT = "https://huggingface.co";

    public HubConfig {
        String e = endpoint.toString();
        if (e.endsWith("/")) endpoint = URI.create(e.substring(0, e.length() - 1));
        String scheme = endpoint.getScheme();
        if (endpoint.getHost() == null || !("http".equals(scheme) || "https".equals(scheme)))
            throw new IllegalArgumentException("hub endpoint must be an http(s) address: " + e);
        if (token != null && token.isBlank()) token = null;
    }

    public static HubConfig fromEnvironment() {
        return from(System.getenv());
    }

    public static HubConfig from(Map<String, String> env) {
        String endpoint = nonBlank(env.get("HF_ENDPOINT"));
        String token = nonBlank(env.get("HF_TOKEN"));
        if (token == null) token = nonBlank(env.get("HUGGING_FACE_HUB_TOKEN"));
        return new HubConfig(URI.create(endpoint != null ? endpoint : DEFAULT_ENDPOINT), token);
    }

    public HubConfig withEndpoint(URI e) {
        return new HubConfig(e, token);
    }

    public HubConfig withToken(String t) {
        return new HubConfig(endpoint, t);
    }

    static String nonBlank(String s) {
        return s == null || s.isBlank() ? null : s.strip();
    }
}
