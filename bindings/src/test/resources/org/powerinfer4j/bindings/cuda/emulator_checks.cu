// Deliberately broken kernels for CudaEmulatorTest: what cuda-emu must report instead of running silently.
// Never launched on a real GPU (there the first hangs or is undefined, the second faults).

/**
 * Half of each warp waits at the block barrier while the other half waits for it in a full-warp shuffle: neither
 * can complete (a hang on a GPU). (A barrier that exited threads skip is not a deadlock: they count as arrived.)
 */
extern "C" __global__ void divergent_barrier(float* out) {
    float v = (float)threadIdx.x;
    if ((threadIdx.x & 31) < 16) __syncthreads();
    else v = __shfl_xor_sync(0xffffffffu, v, 1);
    out[threadIdx.x] = v;
}

/** A 16-byte vector load from p, which the test passes misaligned: "misaligned address" on a GPU. */
extern "C" __global__ void vector_load(const float* p, float* out) {
    const float4 v = __ldg((const float4*)p);
    if (threadIdx.x == 0) out[0] = v.x + v.y + v.z + v.w;
}
