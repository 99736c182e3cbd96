package org.powerinfer4j.bindings.cublas;

import java.util.Map;

/** A cuBLAS call returned an error status. */
public final class CublasException extends RuntimeException {
    private static final Map<Integer, String> NAMES = Map.of(
            0, "CUBLAS_STATUS_SUCCESS",
            1, "CUBLAS_STATUS_NOT_INITIALIZED",
            3, "CUBLAS_STATUS_ALLOC_FAILED",
            7, "CUBLAS_STATUS_INVALID_VALUE",
            8, "CUBLAS_STATUS_ARCH_MISMATCH",
            11, "CUBLAS_STATUS_MAPPING_ERROR",
            13, "CUBLAS_STATUS_EXECUTION_FAILED",
            14, "CUBLAS_STATUS_INTERNAL_ERROR",
            15, "CUBLAS_STATUS_NOT_SUPPORTED",
            16, "CUBLAS_STATUS_LICENSE_ERROR");

    private final int status;

    public CublasException(String call, int status) {
        super(call + " failed: " + statusName(status));
        this.status = status;
    }

    public int status() {
        return status;
    }

    /** The name of a {@code cublasStatus_t}, e.g. {@code CUBLAS_STATUS_INVALID_VALUE}. */
    public static String statusName(int status) {
        String n = NAMES.get(status);
        return n != null ? n : "cublasStatus_t(" + status + ")";
    }

    static void check(int status, String call) {
        if (status != cublas_h.CUBLAS_STATUS_SUCCESS) throw new CublasException(call, status);
    }
}
