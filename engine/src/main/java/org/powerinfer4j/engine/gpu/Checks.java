package org.powerinfer4j.engine.gpu;

/** Argument checks shared by both backends, so a shape error fails the same way on the simulated device. */
final class Checks {
    private Checks() {}

    static void floats(GpuBuffer b, long n, String what) {
        bytes(b, 4 * n, what, n + " floats");
    }

    static void ints(GpuBuffer b, long n, String what) {
        bytes(b, 4 * n, what, n + " ints");
    }

    static void bytes(GpuBuffer b, long n, String what, String unit) {
        if (b == null) throw new IllegalArgumentException(what + " is null");
        if (b.byteSize() < n) throw new IllegalArgumentException(what + " holds " + b.byteSize() + " bytes, needs " + unit);
    }

    /** A KV cache view of {@code n} elements of {@code kvType} (F32 or F16). */
    static void kvCache(GpuBuffer b, long n, org.powerinfer4j.engine.tensor.GGMLType kvType, String what) {
        int es = GpuBackend.kvElementBytes(kvType);
        bytes(b, es * n, what, n + " " + kvType + " values");
    }

    static void nonNegative(long v, String what) {
        if (v < 0) throw new IllegalArgumentException(what + " is negative: " + v);
    }

    static void attention(int heads, int kvHeads, int headDim, int kvStride, int nKv) {
        if (heads <= 0 || kvHeads <= 0 || heads % kvHeads != 0)
            throw new IllegalArgumentException("heads " + heads + " must be a positive multiple of kv heads " + kvHeads);
        if (headDim <= 0 || headDim > PtxKernels.ATTENTION_MAX_HEAD_DIM)
            throw new IllegalArgumentException("head size " + headDim + " is outside 1.." + PtxKernels.ATTENTION_MAX_HEAD_DIM);
        if (kvStride < kvHeads * headDim) throw new IllegalArgumentException("kv stride " + kvStride + " < kv heads × head size");
        nonNegative(nKv, "context length");
    }

    static void rope(int heads, int headDim, int nRot, int tokenStride, int tokens) {
        if (nRot <= 0 || nRot % 2 != 0 || nRot > headDim) throw new IllegalArgumentException("rope dims " + nRot + " invalid for head size " + headDim);
        if (tokens > 1 && tokenStride < heads * headDim) throw new IllegalArgumentException("token stride " + tokenStride + " < heads × head size");
    }

    /** gate, out: n floats; up: n floats for the modes that read it (plain MLPs pass null: act(gate) alone). */
    static void activation(GpuActivation act, GpuBuffer gate, GpuBuffer up, GpuBuffer out, int n) {
        floats(gate, n, "gate");
        if (act == GpuActivation.DRELU || act == GpuActivation.SWIGLU_OAI || (up != null && act != GpuActivation.RELU)) floats(up, n, "up");
        floats(out, n, "out");
    }
}
