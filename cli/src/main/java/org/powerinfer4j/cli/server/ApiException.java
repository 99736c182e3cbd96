package org.powerinfer4j.cli.server;

/**
 * A request the server answers with an OpenAI-style error body
 * ({@code {"error":{"message","type","param","code"}}}) and the given HTTP status.
 */
final class ApiException extends RuntimeException {
    final int status;
    final String type;
    final String param;
    final String code;

    ApiException(int status, String type, String message, String param, String code) {
        super(message, null, false, false); // an answer, not a failure: no stack trace to fill or leak
        this.status = status;
        this.type = type;
        this.param = param;
        this.code = code;
    }

    static ApiException invalid(String message, String param) {
        return new ApiException(400, "invalid_request_error", message, param, null);
    }

    static ApiException invalid(String message, String param, String code) {
        return new ApiException(400, "invalid_request_error", message, param, code);
    }
}
