// Shared device helpers for the PowerInfer4j kernels.
//
// Conventions every kernel follows:
//  - extern "C" entry points, so the PTX names are the plain C names the Java catalog (PtxKernels) uses;
//  - every parameter is a pointer (.u64), a 32-bit int (.u32) or a float (.f32): nothing narrower, so the
//    Java side builds the argument array from three value kinds only;
//  - rows are spread over blockIdx.x with grid-stride loops, so any row count works with any grid size
//    (no gridDim.y indexing, no 65535 limit, no multiple-of-256 assumption).
#pragma once

#include <cuda_fp16.h>
#include <stdint.h>

#define FULL_MASK 0xffffffffu

// ggml type ids (enum ggml_type), used as template arguments.
#define T_F32 0
#define T_F16 1
#define T_Q4_0 2
#define T_Q8_0 8
#define T_Q4_K 12
#define T_Q5_K 13
#define T_Q6_K 14

// ggml block layouts: 32 elements per block. The blocks are packed (34 and 18 bytes), so inside a row they are
// only 2-byte aligned: all loads from them are 16-bit loads.
#define QK 32
#define Q8_0_BYTES 34 // f16 d, int8 qs[32]; x_j = d * qs[j]
#define Q4_0_BYTES 18 // f16 d, uint8 qs[16]; x_j = d * ((qs[j] & 15) - 8), x_{j+16} = d * ((qs[j] >> 4) - 8)

// K-quant super-blocks of 256 elements (ggml's block_q4_K, block_q5_K, block_q6_K): 2-byte aligned in a row too.
#define QK_K 256
#define Q4_K_BYTES 144 // f16 d, f16 dmin, uint8 scales[12] (6-bit scale and min of 8 sub-blocks of 32), uint8 qs[128]
#define Q5_K_BYTES 176 // f16 d, f16 dmin, uint8 scales[12], uint8 qh[32] (5th bits), uint8 qs[128]
#define Q6_K_BYTES 210 // uint8 ql[128] (low 4 bits), uint8 qh[64] (high 2 bits), int8 scales[16], f16 d

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(FULL_MASK, v, o);
    return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(FULL_MASK, v, o));
    return v;
}

/** f16 stored little-endian at a 2-byte aligned address. */
__device__ __forceinline__ float load_half(const unsigned char* p) {
    return __half2float(__ushort_as_half(__ldg((const unsigned short*)p)));
}

/** Sum over the block (blockDim.x a multiple of 32, at most 1024); every thread gets the result. */
__device__ __forceinline__ float block_sum(float v) {
    __shared__ float partial[32];
    __shared__ float total;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_sum(v);
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    if (warp == 0) {
        float s = lane < (int)(blockDim.x >> 5) ? partial[lane] : 0.0f;
        s = warp_sum(s);
        if (lane == 0) total = s;
    }
    __syncthreads();
    float r = total;
    __syncthreads(); // partial/total are reused by the next call
    return r;
}

/** A K-quant sub-block's 6-bit scale and min (ggml's get_scale_min_k4), j = 0..7, from the 12 packed bytes. */
__device__ __forceinline__ void scale_min_k4(int j, const unsigned char* q, float* sc, float* mn) {
    if (j < 4) {
        *sc = (float)(q[j] & 63);
        *mn = (float)(q[j + 4] & 63);
    } else {
        *sc = (float)((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        *mn = (float)((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}

/** Bytes of one row of n elements of the given type (n a multiple of 32 for the quantized types). */
template <int T>
__device__ __forceinline__ size_t row_bytes(int n) {
    if (T == T_F32) return (size_t)n * 4;
    if (T == T_F16) return (size_t)n * 2;
    if (T == T_Q8_0) return (size_t)(n / QK) * Q8_0_BYTES;
    if (T == T_Q4_K) return (size_t)(n / QK_K) * Q4_K_BYTES;
    if (T == T_Q5_K) return (size_t)(n / QK_K) * Q5_K_BYTES;
    if (T == T_Q6_K) return (size_t)(n / QK_K) * Q6_K_BYTES;
    return (size_t)(n / QK) * Q4_0_BYTES;
}
