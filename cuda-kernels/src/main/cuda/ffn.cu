// Sparse FFN operators of PowerInfer4j's GPU side: row-sparse matrix-vector products over compact hot-neuron
// matrices, the sparse "axpy" over neuron-major down_t rows, the predictor's threshold mask, FFN activations,
// and gather/scatter between compact (hot-row) and neuron order.
//
// The weight matrices are neuron-major: row r is neuron r's weights (ffn_up / ffn_gate / ffn_down_t / fc1 / fc2
// as stored in ggml order), in F32, F16, Q8_0 or Q4_0 ggml block layout; the dense and row-sparse mat-vecs also
// take Q4_K, Q5_K and Q6_K (what Q4_K_M files hold).
#include "common.cuh"

// ---------------------------------------------------------------------------------------------------------------
// Per-type partial dot product of one row with x, computed by one warp: each lane returns its share.

template <int T>
__device__ __forceinline__ float row_dot(const unsigned char* row, const float* __restrict__ x, int n, int lane);

template <>
__device__ __forceinline__ float row_dot<T_F32>(const unsigned char* rowp, const float* __restrict__ x, int n, int lane) {
    const float* row = (const float*)rowp;
    float s = 0.0f;
    if ((n & 3) == 0 && ((((uintptr_t)row) | ((uintptr_t)x)) & 15) == 0) {
        const float4* r4 = (const float4*)row;
        const float4* x4 = (const float4*)x;
        for (int i = lane; i < (n >> 2); i += 32) {
            float4 w = __ldg(r4 + i), v = __ldg(x4 + i);
            s += w.x * v.x + w.y * v.y + w.z * v.z + w.w * v.w;
        }
    } else {
        for (int i = lane; i < n; i += 32) s += __ldg(row + i) * __ldg(x + i);
    }
    return s;
}

template <>
__device__ __forceinline__ float row_dot<T_F16>(const unsigned char* rowp, const float* __restrict__ x, int n, int lane) {
    const __half* row = (const __half*)rowp;
    float s = 0.0f;
    if ((n & 7) == 0 && ((((uintptr_t)row) | ((uintptr_t)x)) & 15) == 0) {
        // 8 halves (16 bytes) per lane and step: a warp reads 512 contiguous bytes per iteration
        const uint4* r8 = (const uint4*)row;
        const float4* x4 = (const float4*)x;
        for (int i = lane; i < (n >> 3); i += 32) {
            uint4 w = __ldg(r8 + i);
            float4 a = __ldg(x4 + 2 * i), b = __ldg(x4 + 2 * i + 1);
            float2 w0 = __half22float2(*(const __half2*)&w.x);
            float2 w1 = __half22float2(*(const __half2*)&w.y);
            float2 w2 = __half22float2(*(const __half2*)&w.z);
            float2 w3 = __half22float2(*(const __half2*)&w.w);
            s += w0.x * a.x + w0.y * a.y + w1.x * a.z + w1.y * a.w + w2.x * b.x + w2.y * b.y + w3.x * b.z + w3.y * b.w;
        }
    } else {
        for (int i = lane; i < n; i += 32) s += __half2float(row[i]) * __ldg(x + i);
    }
    return s;
}

template <>
__device__ __forceinline__ float row_dot<T_Q8_0>(const unsigned char* row, const float* __restrict__ x, int n, int lane) {
    // 4 lanes per block, 8 quants per lane: a warp covers 8 consecutive blocks (272 bytes) per step
    const int nb = n / QK, sub = lane & 3;
    float s = 0.0f;
    for (int b = lane >> 2; b < nb; b += 8) {
        const unsigned char* blk = row + (size_t)b * Q8_0_BYTES;
        const float d = load_half(blk);
        const unsigned short* q = (const unsigned short*)(blk + 2 + 8 * sub);
        const float* xb = x + b * QK + 8 * sub;
        float acc = 0.0f;
#pragma unroll
        for (int k = 0; k < 4; k++) {
            const unsigned short v = __ldg(q + k);
            acc += (float)(signed char)(v & 0xff) * __ldg(xb + 2 * k) + (float)(signed char)(v >> 8) * __ldg(xb + 2 * k + 1);
        }
        s += d * acc;
    }
    return s;
}

template <>
__device__ __forceinline__ float row_dot<T_Q4_0>(const unsigned char* row, const float* __restrict__ x, int n, int lane) {
    // 4 lanes per block; lane sub takes bytes 4sub..4sub+3: elements 4sub.. (low nibbles) and 16+4sub.. (high)
    const int nb = n / QK, sub = lane & 3;
    float s = 0.0f;
    for (int b = lane >> 2; b < nb; b += 8) {
        const unsigned char* blk = row + (size_t)b * Q4_0_BYTES;
        const float d = load_half(blk);
        const unsigned short* q = (const unsigned short*)(blk + 2 + 4 * sub);
        const unsigned int v = (unsigned int)__ldg(q) | ((unsigned int)__ldg(q + 1) << 16);
        const float* xb = x + b * QK + 4 * sub;
        float acc = 0.0f;
#pragma unroll
        for (int k = 0; k < 4; k++) {
            const int byte = (v >> (8 * k)) & 0xff;
            acc += (float)((byte & 15) - 8) * __ldg(xb + k) + (float)((byte >> 4) - 8) * __ldg(xb + 16 + k);
        }
        s += d * acc;
    }
    return s;
}

// Q4_K and Q5_K: a warp takes one super-block per step; lane l covers 64-element group g = l / 8 (sub-blocks 2g
// and 2g+1) and, in it, quant bytes 4·(l % 8) .. +3: four low nibbles (sub-block 2g) and four high (2g+1).
template <int T>
__device__ __forceinline__ float row_dot_k45(const unsigned char* row, const float* __restrict__ x, int n, int lane) {
    const int nb = n / QK_K, g = lane >> 3, sub = lane & 7;
    const int qs_at = T == T_Q5_K ? 48 : 16, bytes = T == T_Q5_K ? Q5_K_BYTES : Q4_K_BYTES;
    float s = 0.0f;
    for (int b = 0; b < nb; b++) {
        const unsigned char* blk = row + (size_t)b * bytes;
        const float d = load_half(blk), dmin = load_half(blk + 2);
        unsigned char sc8[12];
#pragma unroll
        for (int i = 0; i < 12; i += 2) {
            const unsigned short v = __ldg((const unsigned short*)(blk + 4 + i));
            sc8[i] = v & 0xff;
            sc8[i + 1] = v >> 8;
        }
        float sc1, m1, sc2, m2;
        scale_min_k4(2 * g, sc8, &sc1, &m1);
        scale_min_k4(2 * g + 1, sc8, &sc2, &m2);
        const unsigned char* q = blk + qs_at + 32 * g + 4 * sub;
        const unsigned int v = (unsigned int)__ldg((const unsigned short*)q) | ((unsigned int)__ldg((const unsigned short*)(q + 2)) << 16);
        unsigned int h = 0;
        if (T == T_Q5_K) {   // qh[l] bit 2g: element l of sub-block 2g, bit 2g+1: of sub-block 2g+1 (l = 4·sub + k)
            const unsigned char* qh = blk + 16 + 4 * sub;
            h = (unsigned int)__ldg((const unsigned short*)qh) | ((unsigned int)__ldg((const unsigned short*)(qh + 2)) << 16);
        }
        const float* xb = x + b * QK_K + 64 * g + 4 * sub;
        float lo = 0.0f, hi = 0.0f, xlo = 0.0f, xhi = 0.0f;
#pragma unroll
        for (int k = 0; k < 4; k++) {
            const int byte = (v >> (8 * k)) & 0xff;
            int q1 = byte & 15, q2 = byte >> 4;
            if (T == T_Q5_K) {
                const int hb = (h >> (8 * k)) & 0xff;
                q1 += ((hb >> (2 * g)) & 1) << 4;
                q2 += ((hb >> (2 * g + 1)) & 1) << 4;
            }
            const float a = __ldg(xb + k), c = __ldg(xb + 32 + k);
            lo += (float)q1 * a;
            hi += (float)q2 * c;
            xlo += a;
            xhi += c;
        }
        s += d * (sc1 * lo + sc2 * hi) - dmin * (m1 * xlo + m2 * xhi);
    }
    return s;
}

template <>
__device__ __forceinline__ float row_dot<T_Q4_K>(const unsigned char* row, const float* __restrict__ x, int n, int lane) {
    return row_dot_k45<T_Q4_K>(row, x, n, lane);
}

template <>
__device__ __forceinline__ float row_dot<T_Q5_K>(const unsigned char* row, const float* __restrict__ x, int n, int lane) {
    return row_dot_k45<T_Q5_K>(row, x, n, lane);
}

template <>
__device__ __forceinline__ float row_dot<T_Q6_K>(const unsigned char* row, const float* __restrict__ x, int n, int lane) {
    // a warp takes one super-block per step: lane l covers half h = l / 16 (128 elements) and in it positions
    // 2·(l % 16) and +1 of the 32: each gives four elements (+0, +32, +64, +96), ggml's dequantize_row_q6_K order
    const int nb = n / QK_K, h = lane >> 4, p = 2 * (lane & 15);
    float s = 0.0f;
    for (int b = 0; b < nb; b++) {
        const unsigned char* blk = row + (size_t)b * Q6_K_BYTES;
        const unsigned char* ql = blk + 64 * h;
        const unsigned char* qh = blk + 128 + 32 * h;
        const signed char* sc = (const signed char*)(blk + 192 + 8 * h);
        const float d = load_half(blk + 208);
        const float* xb = x + b * QK_K + 128 * h;
        const unsigned short l0 = __ldg((const unsigned short*)(ql + p)), l32 = __ldg((const unsigned short*)(ql + 32 + p));
        const unsigned short hh = __ldg((const unsigned short*)(qh + p));
        const int is = p / 16;   // both positions are in the same 16-element scale group
        float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
        for (int k = 0; k < 2; k++) {
            const int a = (l0 >> (8 * k)) & 0xff, c = (l32 >> (8 * k)) & 0xff, e = (hh >> (8 * k)) & 0xff;
            const int q1 = ((a & 0xF) | (((e >> 0) & 3) << 4)) - 32;
            const int q2 = ((c & 0xF) | (((e >> 2) & 3) << 4)) - 32;
            const int q3 = ((a >> 4) | (((e >> 4) & 3) << 4)) - 32;
            const int q4 = ((c >> 4) | (((e >> 6) & 3) << 4)) - 32;
            acc[0] += (float)q1 * __ldg(xb + p + k);
            acc[1] += (float)q2 * __ldg(xb + 32 + p + k);
            acc[2] += (float)q3 * __ldg(xb + 64 + p + k);
            acc[3] += (float)q4 * __ldg(xb + 96 + p + k);
        }
        s += d * ((float)sc[is] * acc[0] + (float)sc[is + 2] * acc[1] + (float)sc[is + 4] * acc[2] + (float)sc[is + 6] * acc[3]);
    }
    return s;
}

// ---------------------------------------------------------------------------------------------------------------
// Row-sparse matrix-vector product: out[j] = W[j,:]·x for every row j whose neuron is active, 0 otherwise.
// One warp per row; rows handed out by grid-stride over (blockIdx.x, warp). A row whose predictor bit is 0 is
// skipped before any weight byte is read. With mask == NULL this is the dense mat-vec (every row computed).
//
//   W      rows × n matrix, row-major, ggml type T
//   mask   per-neuron activity (1 byte per neuron, non-zero = active), or NULL for dense
//   rowmap compact row j -> neuron id (the GPU index's gpu_bucket), or NULL when row j is neuron j
//   relu   non-zero: out = max(0, dot) (the predictor's fc1)
template <int T>
__device__ __forceinline__ void matvec(const unsigned char* __restrict__ W, const float* __restrict__ x,
                                       float* __restrict__ out, int rows, int n, const unsigned char* __restrict__ mask,
                                       const int* __restrict__ rowmap, int relu) {
    const int lane = threadIdx.x & 31, warps = blockDim.x >> 5;
    const size_t rb = row_bytes<T>(n);
    for (long long row = (long long)blockIdx.x * warps + (threadIdx.x >> 5); row < rows; row += (long long)gridDim.x * warps) {
        if (mask != nullptr) {
            const int neuron = rowmap != nullptr ? __ldg(rowmap + row) : (int)row;
            if (__ldg(mask + neuron) == 0) { // whole warp takes this branch: no divergence
                if (lane == 0) out[row] = 0.0f;
                continue;
            }
        }
        const float s = warp_sum(row_dot<T>(W + (size_t)row * rb, x, n, lane));
        if (lane == 0) out[row] = relu ? fmaxf(s, 0.0f) : s;
    }
}

extern "C" __global__ void matvec_f32(const unsigned char* W, const float* x, float* out, int rows, int n,
                                      const unsigned char* mask, const int* rowmap, int relu) {
    matvec<T_F32>(W, x, out, rows, n, mask, rowmap, relu);
}
extern "C" __global__ void matvec_f16(const unsigned char* W, const float* x, float* out, int rows, int n,
                                      const unsigned char* mask, const int* rowmap, int relu) {
    matvec<T_F16>(W, x, out, rows, n, mask, rowmap, relu);
}
extern "C" __global__ void matvec_q8_0(const unsigned char* W, const float* x, float* out, int rows, int n,
                                       const unsigned char* mask, const int* rowmap, int relu) {
    matvec<T_Q8_0>(W, x, out, rows, n, mask, rowmap, relu);
}
extern "C" __global__ void matvec_q4_0(const unsigned char* W, const float* x, float* out, int rows, int n,
                                       const unsigned char* mask, const int* rowmap, int relu) {
    matvec<T_Q4_0>(W, x, out, rows, n, mask, rowmap, relu);
}

extern "C" __global__ void matvec_q4_k(const unsigned char* W, const float* x, float* out, int rows, int n,
                                       const unsigned char* mask, const int* rowmap, int relu) {
    matvec<T_Q4_K>(W, x, out, rows, n, mask, rowmap, relu);
}

extern "C" __global__ void matvec_q5_k(const unsigned char* W, const float* x, float* out, int rows, int n,
                                       const unsigned char* mask, const int* rowmap, int relu) {
    matvec<T_Q5_K>(W, x, out, rows, n, mask, rowmap, relu);
}

extern "C" __global__ void matvec_q6_k(const unsigned char* W, const float* x, float* out, int rows, int n,
                                       const unsigned char* mask, const int* rowmap, int relu) {
    matvec<T_Q6_K>(W, x, out, rows, n, mask, rowmap, relu);
}

// ---------------------------------------------------------------------------------------------------------------
// Sparse axpy over neuron-major rows: out[c] (+)= Σ_{r in split, h[r] != 0} h[r]·W[r,c].
//
// Grid: x = column tiles of AXPY_TILE columns (grid-stride), y = row splits of rows_per_split rows. Block:
// AXPY_THREADS threads, 2 columns per thread. Each block walks its rows in order, compacting the non-zero h of
// each 256-row chunk into shared memory (order-preserving ballot), so zero rows cost one coalesced read of h and
// no weight traffic. No atomics: a block owns its columns of its split's output row out[blockIdx.y * dim ..], and
// axpy_reduce adds the splits in a fixed order, so the result is deterministic for a given split count.
#define AXPY_THREADS 256
#define AXPY_TILE (2 * AXPY_THREADS)

template <int T>
__device__ __forceinline__ void axpy_columns(const unsigned char* __restrict__ W, size_t rb, int r, float hv, int tile,
                                             int dim, float& a0, float& a1) {
    const int t = threadIdx.x;
    const unsigned char* row = W + (size_t)r * rb;
    if (T == T_F32) {
        const int c = tile * AXPY_TILE + 2 * t;
        const float* w = (const float*)row;
        if ((dim & 1) == 0) {
            if (c < dim) {
                const float2 v = __ldg((const float2*)(w + c));
                a0 += hv * v.x;
                a1 += hv * v.y;
            }
        } else {
            if (c < dim) a0 += hv * __ldg(w + c);
            if (c + 1 < dim) a1 += hv * __ldg(w + c + 1);
        }
    } else if (T == T_F16) {
        const int c = tile * AXPY_TILE + 2 * t;
        const __half* w = (const __half*)row;
        if ((dim & 1) == 0) {
            if (c < dim) {
                const float2 v = __half22float2(__ldg((const __half2*)(w + c)));
                a0 += hv * v.x;
                a1 += hv * v.y;
            }
        } else {
            if (c < dim) a0 += hv * __half2float(w[c]);
            if (c + 1 < dim) a1 += hv * __half2float(w[c + 1]);
        }
    } else if (T == T_Q8_0) {
        const int c = tile * AXPY_TILE + 2 * t; // c even: c and c+1 are in the same block
        if (c < dim) {
            const unsigned char* blk = row + (size_t)(c / QK) * Q8_0_BYTES;
            const float d = load_half(blk) * hv;
            const unsigned short q = __ldg((const unsigned short*)(blk + 2 + (c % QK)));
            a0 += d * (float)(signed char)(q & 0xff);
            a1 += d * (float)(signed char)(q >> 8);
        }
    } else { // Q4_0: thread t takes byte k of block b: elements b*32+k and b*32+k+16
        const int b = tile * (AXPY_TILE / QK) + t / 16, k = t % 16;
        if (b * QK < dim) {
            const unsigned char* blk = row + (size_t)b * Q4_0_BYTES;
            const float d = load_half(blk) * hv;
            const int q = __ldg(blk + 2 + k);
            a0 += d * (float)((q & 15) - 8);
            a1 += d * (float)((q >> 4) - 8);
        }
    }
}

template <int T>
__device__ __forceinline__ void axpy(const unsigned char* __restrict__ W, const float* __restrict__ h, float* __restrict__ out,
                                     int rows, int dim, int rows_per_split, int accumulate) {
    __shared__ int s_row[AXPY_THREADS];
    __shared__ float s_h[AXPY_THREADS];
    __shared__ int s_count[AXPY_THREADS / 32];
    const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
    const size_t rb = row_bytes<T>(dim);
    const long long first = (long long)blockIdx.y * rows_per_split;
    const int r0 = (int)min((long long)rows, first), r1 = (int)min((long long)rows, first + rows_per_split);
    float* o = out + (size_t)blockIdx.y * dim;
    const int tiles = (dim + AXPY_TILE - 1) / AXPY_TILE;
    for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
        float a0 = 0.0f, a1 = 0.0f;
        for (int c0 = r0; c0 < r1; c0 += AXPY_THREADS) {
            const int r = c0 + t;
            const float hv = r < r1 ? __ldg(h + r) : 0.0f;
            const unsigned nz = __ballot_sync(FULL_MASK, hv != 0.0f);
            if (lane == 0) s_count[warp] = __popc(nz);
            __syncthreads();
            int base = 0, total = 0;
#pragma unroll
            for (int w = 0; w < AXPY_THREADS / 32; w++) {
                const int cnt = s_count[w];
                base += w < warp ? cnt : 0;
                total += cnt;
            }
            if (hv != 0.0f) {
                const int pos = base + __popc(nz & ((1u << lane) - 1u));
                s_row[pos] = r;
                s_h[pos] = hv;
            }
            __syncthreads();
            for (int i = 0; i < total; i++) axpy_columns<T>(W, rb, s_row[i], s_h[i], tile, dim, a0, a1);
            __syncthreads(); // the shared lists are rewritten by the next chunk
        }
        int c0, c1;
        if (T == T_Q4_0) {
            c0 = (tile * (AXPY_TILE / QK) + t / 16) * QK + t % 16;
            c1 = c0 + 16;
        } else {
            c0 = tile * AXPY_TILE + 2 * t;
            c1 = c0 + 1;
        }
        if (c0 < dim) o[c0] = accumulate ? o[c0] + a0 : a0;
        if (c1 < dim) o[c1] = accumulate ? o[c1] + a1 : a1;
    }
}

extern "C" __global__ void axpy_f32(const unsigned char* W, const float* h, float* out, int rows, int dim, int rows_per_split, int accumulate) {
    axpy<T_F32>(W, h, out, rows, dim, rows_per_split, accumulate);
}
extern "C" __global__ void axpy_f16(const unsigned char* W, const float* h, float* out, int rows, int dim, int rows_per_split, int accumulate) {
    axpy<T_F16>(W, h, out, rows, dim, rows_per_split, accumulate);
}
extern "C" __global__ void axpy_q8_0(const unsigned char* W, const float* h, float* out, int rows, int dim, int rows_per_split, int accumulate) {
    axpy<T_Q8_0>(W, h, out, rows, dim, rows_per_split, accumulate);
}
extern "C" __global__ void axpy_q4_0(const unsigned char* W, const float* h, float* out, int rows, int dim, int rows_per_split, int accumulate) {
    axpy<T_Q4_0>(W, h, out, rows, dim, rows_per_split, accumulate);
}

/** y[c] (+)= Σ_{s < splits} partial[s*dim + c], splits added in order (deterministic second pass of the axpy). */
extern "C" __global__ void axpy_reduce(const float* __restrict__ partial, int splits, int dim, float* __restrict__ y, int accumulate) {
    for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < dim; c += gridDim.x * blockDim.x) {
        float s = 0.0f;
        for (int k = 0; k < splits; k++) s += partial[(size_t)k * dim + c];
        y[c] = accumulate ? y[c] + s : s;
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Predictor: logits = fc2 · relu(fc1 · x) is two matvec launches (fc1 with relu = 1); this turns the logits into
// the activity mask. Neuron r is active iff logit_r >= threshold (NaN: inactive). count (may be NULL) is
// incremented by the number of active neurons, one atomic per warp.
extern "C" __global__ void threshold_mask(const float* __restrict__ logits, int n, float threshold,
                                          unsigned char* __restrict__ mask, int* count) {
    const int lane = threadIdx.x & 31;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long w0 = (long long)blockIdx.x * blockDim.x + (threadIdx.x & ~31); w0 < n; w0 += stride) {
        const long long i = w0 + lane;
        const bool active = i < n && logits[i] >= threshold;
        if (i < n) mask[i] = active ? 1 : 0;
        const unsigned bits = __ballot_sync(FULL_MASK, active);
        if (count != nullptr && lane == 0 && bits != 0) atomicAdd(count, __popc(bits));
    }
}

// ---------------------------------------------------------------------------------------------------------------
// FFN activation h = act(gate, up), elementwise; out may alias gate.
//   mode 0 SwiGLU: silu(g)·u   1 ReGLU: g > 0 ? g·u : 0   2 dReLU: g > 0 && u > 0 ? g·u : 0   3 ReLU: max(g, 0)
#define ACT_SWIGLU 0
#define ACT_REGLU 1
#define ACT_DRELU 2
#define ACT_RELU 3
#define ACT_GELU 4
#define ACT_GELU_TANH 5
#define ACT_SWIGLU_OAI 6
/**
 * out[i] = act(gate[i]) * up[i] (gated FFNs) or act(gate[i]) alone when up is null (plain MLPs: the "gate" is the up
 * projection). ReLU ignores up; dReLU needs it. GELU is the erf form (Falcon), GELU_TANH the tanh form (Gemma's
 * GeGLU), both written as the CPU kernels write them. SWIGLU_OAI is gpt-oss's clamped SwiGLU:
 * min(g, 7)·sigmoid(1.702·min(g, 7))·(clamp(u, ±7) + 1) (needs up).
 */
extern "C" __global__ void ffn_act_f32(const float* gate, const float* up, float* out, int n, int mode) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const float g = gate[i];
        const float u = up != nullptr ? up[i] : 1.0f;
        float r;
        if (mode == ACT_SWIGLU) r = g / (1.0f + expf(-g)) * u;
        else if (mode == ACT_REGLU) r = g > 0.0f ? g * u : 0.0f;
        else if (mode == ACT_DRELU) r = g > 0.0f && u > 0.0f ? g * u : 0.0f;
        else if (mode == ACT_GELU) r = 0.5f * g * erfcf(-g * 0.70710678118654752f) * u;
        else if (mode == ACT_GELU_TANH) r = g / (1.0f + expf(-1.5957691216057308f * fmaf(0.044715f * g * g, g, g))) * u;
        else if (mode == ACT_SWIGLU_OAI) {
            const float gc = fminf(g, 7.0f), uc = fmaxf(-7.0f, fminf(u, 7.0f));
            r = gc / (1.0f + expf(-1.702f * gc)) * (uc + 1.0f);
        }
        else r = fmaxf(g, 0.0f);
        out[i] = r;
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Index maps between compact hot rows and neuron order (idx = the GPU index's gpu_bucket).
/** dst[i] = src[idx[i]] */
extern "C" __global__ void gather_f32(const float* __restrict__ src, const int* __restrict__ idx, float* __restrict__ dst, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) dst[i] = src[idx[i]];
}
/** y[j] += x[j] where neuron rowmap[j] (j when rowmap is null) is active in mask: a hot row's bias, only where the
 *  row was computed (an inactive row stays 0 through the activation, as on the CPU). */
extern "C" __global__ void masked_add_f32(float* y, const float* __restrict__ x, const unsigned char* __restrict__ mask,
                                          const int* __restrict__ rowmap, int n) {
    for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < n; j += gridDim.x * blockDim.x) {
        const int neuron = rowmap != nullptr ? rowmap[j] : j;
        if (mask[neuron] != 0) y[j] += x[j];
    }
}
/** dst[idx[i]] += src[i]; idx holds distinct indices (no two threads write the same element) */
extern "C" __global__ void scatter_add_f32(const float* __restrict__ src, const int* __restrict__ idx, float* __restrict__ dst, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) dst[idx[i]] += src[i];
}
