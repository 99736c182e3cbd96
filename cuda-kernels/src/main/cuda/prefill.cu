// Prompt batches on the device: ggml weight rows dequantized to F16 for cuBLAS GemmEx (F16 operands, F32
// accumulate and output), as llama.cpp's cuBLAS path does, and the bias add broadcast over a batch's rows.
//
// dequant_f16_<type>(W, dst, lo, rows, n): dst[r*n + c] = W[r, c] rounded to F16 for r < rows, c < n, one thread
// per 32-element group (a Q8_0/Q4_0 block, a K-quant sub-block; n a multiple of 32, of 256 for the K-quants),
// grid-stride over the groups, in ggml's dequantize_row_* element order. With lo (may be null) also the rounding
// remainder lo = W - dst in F16, so that dst + lo holds W to about 22 bits (the split-precision GEMM).
#include "common.cuh"

/** out[l] = v in F16, and lo[l] = what that rounding lost (when lo is given). */
__device__ __forceinline__ void put_half(__half* __restrict__ out, __half* __restrict__ lo, int l, float v) {
    const __half h = __float2half_rn(v);
    out[l] = h;
    if (lo != nullptr) lo[l] = __float2half_rn(v - __half2float(h));
}

template <int T>
__device__ __forceinline__ void dequant_group(const unsigned char* __restrict__ row, int j, __half* __restrict__ out, __half* __restrict__ lo);

template <>
__device__ __forceinline__ void dequant_group<T_F32>(const unsigned char* __restrict__ row, int j, __half* __restrict__ out, __half* __restrict__ lo) {
    const float* x = (const float*)row + (size_t)j * QK;
#pragma unroll 8
    for (int l = 0; l < QK; l++) put_half(out, lo, l, __ldg(x + l));
}

template <>
__device__ __forceinline__ void dequant_group<T_Q8_0>(const unsigned char* __restrict__ row, int j, __half* __restrict__ out, __half* __restrict__ lo) {
    const unsigned char* blk = row + (size_t)j * Q8_0_BYTES;
    const float d = load_half(blk);
#pragma unroll 8
    for (int l = 0; l < QK; l++) put_half(out, lo, l, d * (float)(signed char)blk[2 + l]);
}

template <>
__device__ __forceinline__ void dequant_group<T_Q4_0>(const unsigned char* __restrict__ row, int j, __half* __restrict__ out, __half* __restrict__ lo) {
    const unsigned char* blk = row + (size_t)j * Q4_0_BYTES;
    const float d = load_half(blk);
#pragma unroll 8
    for (int l = 0; l < QK / 2; l++) {
        const int b = blk[2 + l];
        put_half(out, lo, l, d * (float)((b & 15) - 8));
        put_half(out, lo, l + QK / 2, d * (float)((b >> 4) - 8));
    }
}

// Q4_K / Q5_K: sub-block s = j % 8 of super-block j / 8 covers quant bytes 32·(s/2) .. +31, low nibbles for even s,
// high for odd; Q5_K's 5th bit of element l is bit s of qh[l].
template <int T>
__device__ __forceinline__ void dequant_group_k45(const unsigned char* __restrict__ row, int j, __half* __restrict__ out, __half* __restrict__ lo) {
    const int bytes = T == T_Q5_K ? Q5_K_BYTES : Q4_K_BYTES, qs_at = T == T_Q5_K ? 48 : 16;
    const unsigned char* blk = row + (size_t)(j / 8) * bytes;
    const int s = j % 8, g = s / 2, shift = (s & 1) * 4;
    const float d = load_half(blk), dmin = load_half(blk + 2);
    unsigned char sc8[12];
#pragma unroll
    for (int i = 0; i < 12; i++) sc8[i] = blk[4 + i];
    float sc, mn;
    scale_min_k4(s, sc8, &sc, &mn);
    const float a = d * sc, m = dmin * mn;
    const unsigned char* q = blk + qs_at + 32 * g;
#pragma unroll 8
    for (int l = 0; l < 32; l++) {
        int v = (q[l] >> shift) & 15;
        if (T == T_Q5_K) v += ((blk[16 + l] >> s) & 1) << 4;
        put_half(out, lo, l, a * (float)v - m);
    }
}

template <>
__device__ __forceinline__ void dequant_group<T_Q4_K>(const unsigned char* __restrict__ row, int j, __half* __restrict__ out, __half* __restrict__ lo) {
    dequant_group_k45<T_Q4_K>(row, j, out, lo);
}

template <>
__device__ __forceinline__ void dequant_group<T_Q5_K>(const unsigned char* __restrict__ row, int j, __half* __restrict__ out, __half* __restrict__ lo) {
    dequant_group_k45<T_Q5_K>(row, j, out, lo);
}

// Q6_K: group s = j % 8 of super-block j / 8 is quarter s % 4 of half s / 4: low (quarters 0, 1) or high (2, 3)
// nibbles of ql[64·half + 32·(quarter & 1) + l], 2 bits of qh[32·half + l] at 2·quarter, scale sc[8·half + l/16 + 2·quarter].
template <>
__device__ __forceinline__ void dequant_group<T_Q6_K>(const unsigned char* __restrict__ row, int j, __half* __restrict__ out, __half* __restrict__ lo) {
    const unsigned char* blk = row + (size_t)(j / 8) * Q6_K_BYTES;
    const int s = j % 8, h = s / 4, qq = s % 4;
    const unsigned char* ql = blk + 64 * h + 32 * (qq & 1);
    const unsigned char* qh = blk + 128 + 32 * h;
    const signed char* sc = (const signed char*)(blk + 192 + 8 * h + 2 * qq);
    const float d = load_half(blk + 208);
    const int nib = qq >= 2 ? 4 : 0;
#pragma unroll 8
    for (int l = 0; l < 32; l++) {
        const int v = (((ql[l] >> nib) & 15) | (((qh[l] >> (2 * qq)) & 3) << 4)) - 32;
        put_half(out, lo, l, d * (float)sc[l / 16] * (float)v);
    }
}

template <int T>
__device__ __forceinline__ void dequant_f16(const unsigned char* __restrict__ W, __half* __restrict__ dst, __half* __restrict__ lo, int rows,
                                            int n) {
    const int groups = n / QK;
    const size_t rb = row_bytes<T>(n);
    const long long total = (long long)rows * groups;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (long long)gridDim.x * blockDim.x) {
        const long long r = i / groups;
        const int j = (int)(i % groups);
        const size_t at = (size_t)r * n + (size_t)j * QK;
        dequant_group<T>(W + (size_t)r * rb, j, dst + at, lo != nullptr ? lo + at : nullptr);
    }
}

extern "C" __global__ void dequant_f16_f32(const unsigned char* W, __half* dst, __half* lo, int rows, int n) {
    dequant_f16<T_F32>(W, dst, lo, rows, n);
}
extern "C" __global__ void dequant_f16_q8_0(const unsigned char* W, __half* dst, __half* lo, int rows, int n) {
    dequant_f16<T_Q8_0>(W, dst, lo, rows, n);
}
extern "C" __global__ void dequant_f16_q4_0(const unsigned char* W, __half* dst, __half* lo, int rows, int n) {
    dequant_f16<T_Q4_0>(W, dst, lo, rows, n);
}
extern "C" __global__ void dequant_f16_q4_k(const unsigned char* W, __half* dst, __half* lo, int rows, int n) {
    dequant_f16<T_Q4_K>(W, dst, lo, rows, n);
}
extern "C" __global__ void dequant_f16_q5_k(const unsigned char* W, __half* dst, __half* lo, int rows, int n) {
    dequant_f16<T_Q5_K>(W, dst, lo, rows, n);
}
extern "C" __global__ void dequant_f16_q6_k(const unsigned char* W, __half* dst, __half* lo, int rows, int n) {
    dequant_f16<T_Q6_K>(W, dst, lo, rows, n);
}

/** Maximum over the block (blockDim.x a multiple of 32, at most 1024); every thread gets the result. */
__device__ __forceinline__ float block_max(float v) {
    __shared__ float partial[32];
    __shared__ float total;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_max(v);
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    if (warp == 0) {
        float m = lane < (int)(blockDim.x >> 5) ? partial[lane] : 0.0f;
        m = warp_max(m);
        if (lane == 0) total = m;
    }
    __syncthreads();
    float r = total;
    __syncthreads(); // partial/total are reused by the next token
    return r;
}

// GEMM inputs to F16 without overflow (F16 ends at 65504): each token's row of cols floats is multiplied by a power
// of two 2^-e, e >= 0 the least that brings max|x| to at most GEMM_INPUT_LIMIT (e = 0 for ordinary rows, which are
// rounded exactly as before), then rounded to F16 (hi, and with lo the rounding remainder: split precision, hi + lo);
// scale[t] = 2^e, by which scale_rows_f32 multiplies the token's outputs after the GEMM. Powers of two lose no
// bits, so a row of large activations keeps F16's relative precision instead of becoming infinite. One block per
// token (grid-stride).
#define GEMM_INPUT_LIMIT 16384.0f
extern "C" __global__ void scaled_f32_f16(const float* __restrict__ src, __half* __restrict__ hi, __half* __restrict__ lo,
                                          float* __restrict__ scale, int cols, int tokens) {
    for (int t = blockIdx.x; t < tokens; t += gridDim.x) {
        const float* x = src + (size_t)t * cols;
        float m = 0.0f;
        for (int i = threadIdx.x; i < cols; i += blockDim.x) m = fmaxf(m, fabsf(x[i]));   // NaN is skipped by fmaxf
        m = block_max(m);
        float up = 1.0f;
        if (isfinite(m)) while (m > GEMM_INPUT_LIMIT * up) up *= 2.0f;   // an infinite row stays infinite
        const float down = 1.0f / up;
        __half* h = hi + (size_t)t * cols;
        __half* l = lo != nullptr ? lo + (size_t)t * cols : nullptr;
        for (int i = threadIdx.x; i < cols; i += blockDim.x) put_half(h, l, i, x[i] * down);
        if (threadIdx.x == 0) scale[t] = up;
    }
}

/** out[t*rows + r] *= scale[t]: a GEMM's outputs back to the scale of its inputs (scaled_f32_f16). */
extern "C" __global__ void scale_rows_f32(float* out, const float* __restrict__ scale, int rows, int tokens) {
    const long long total = (long long)rows * tokens;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (long long)gridDim.x * blockDim.x) out[i] *= scale[i / rows];
}

/** y[r*n + i] += b[i] for r < rows, i < n: a projection's bias on every token of a batch. */
extern "C" __global__ void add_rows_f32(float* y, const float* __restrict__ b, int n, int rows) {
    const long long total = (long long)n * rows;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (long long)gridDim.x * blockDim.x) y[i] += b[i % n];
}

/** h[t*k + j] = 0 where neuron rowmap[j] (j when rowmap is null) of token t is inactive in mask (byte t*ff + neuron):
 *  the predictor's decision on hot rows a batch computed densely (they then equal the row-sparse product's). */
extern "C" __global__ void mask_rows_f32(float* h, const unsigned char* __restrict__ mask, const int* __restrict__ rowmap, int k, int tokens,
                                         int ff) {
    const long long total = (long long)k * tokens;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (long long)gridDim.x * blockDim.x) {
        const long long t = i / k;
        const int j = (int)(i - t * k), neuron = rowmap != nullptr ? rowmap[j] : j;
        if (mask[t * ff + neuron] == 0) h[i] = 0.0f;
    }
}
