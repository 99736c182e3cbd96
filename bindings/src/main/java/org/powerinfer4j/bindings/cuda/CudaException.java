package org.powerinfer4j.bindings.cuda;

/** A CUDA driver call returned an error. Carries the {@code CUresult} code and its name. */
public final class CudaException extends RuntimeException {
    private final int result;
    private final String resultName;

    public CudaException(String call, int result) {
        this(call, result, CudaResult.name(result), CudaResult.description(result));
    }

    CudaException(String call, int result, String resultName, String description) {
        super(call + " failed: " + resultName + (description != null ? " (" + description + ")" : ""));
        this.result = result;
        this.resultName = resultName;
    }

    /** The {@code CUresult} code. */
    public int result() {
        return result;
    }

    /** The code's name, e.g. {@code CUDA_ERROR_OUT_OF_MEMORY}. */
    public String resultName() {
        return resultName;
    }

    /** Throws a {@link CudaException} unless {@code result} is {@code CUDA_SUCCESS}. */
    public static void check(int result, String call) {
        if (result != cuda_h.CUDA_SUCCESS) throw new CudaException(call, result);
    }
}
