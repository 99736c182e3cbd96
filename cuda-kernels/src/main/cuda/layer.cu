// Dense pieces of a GPU-resident decoder layer for one decode token (and small batches where it is free):
// RMSNorm, LayerNorm, rotary embeddings, attention over an F32 KV cache with grouped-query heads, residual add, and
// F32 <-> F16 conversion (cuBLAS GemmEx takes F16 operands).
#include "common.cuh"

/**
 * out[r,:] = x[r,:] / sqrt(mean(x[r,:]^2) + eps) * w, for r < rows (one block per row, grid-stride over rows).
 * out may alias x.
 */
extern "C" __global__ void rms_norm_f32(const float* x, const float* __restrict__ w, float* out, int n, int rows, float eps) {
    for (int r = blockIdx.x; r < rows; r += gridDim.x) {
        const float* xr = x + (size_t)r * n;
        float* o = out + (size_t)r * n;
        float ss = 0.0f;
        for (int i = threadIdx.x; i < n; i += blockDim.x) ss += xr[i] * xr[i];
        ss = block_sum(ss);
        const float scale = 1.0f / sqrtf(ss / (float)n + eps);
        for (int i = threadIdx.x; i < n; i += blockDim.x) o[i] = xr[i] * scale * w[i];
    }
}

/**
 * out[r,:] = (x[r,:] - mean) / sqrt(var + eps) * w (+ b), for r < rows (LayerNorm: Falcon, OPT). b may be null; out
 * may alias x. One block per row.
 */
extern "C" __global__ void layer_norm_f32(const float* x, const float* __restrict__ w, const float* __restrict__ b, float* out, int n,
                                          int rows, float eps) {
    for (int r = blockIdx.x; r < rows; r += gridDim.x) {
        const float* xr = x + (size_t)r * n;
        float* o = out + (size_t)r * n;
        float sum = 0.0f;
        for (int i = threadIdx.x; i < n; i += blockDim.x) sum += xr[i];
        const float mean = block_sum(sum) / (float)n;
        float var = 0.0f;
        for (int i = threadIdx.x; i < n; i += blockDim.x) {
            const float d = xr[i] - mean;
            var += d * d;
        }
        const float scale = 1.0f / sqrtf(block_sum(var) / (float)n + eps);
        for (int i = threadIdx.x; i < n; i += blockDim.x) {
            const float v = (xr[i] - mean) * scale * w[i];
            o[i] = b != nullptr ? v + b[i] : v;
        }
    }
}

/**
 * Rotary embedding in place, llama.cpp style. Token t (t < n_tokens) of v starts at v + t*token_stride and holds
 * n_heads heads of head_dim values; the first n_rot dimensions of each head rotate by theta_i = pos·inv_freq[i],
 * pos = pos0 + t, inv_freq[i] = base^(-2i/n_rot) (taken from the inv_freq table when given, so the CPU and GPU use
 * the same angles, every frequency scaling folded in). neox = 0 rotates adjacent pairs (2i, 2i+1), neox = 1 rotates
 * (i, i + n_rot/2). cos and sin are scaled by mscale (YaRN's magnitude correction; 1 otherwise).
 */
extern "C" __global__ void rope_f32(float* v, int n_tokens, int token_stride, int n_heads, int head_dim, int n_rot, int pos0,
                                    const float* __restrict__ inv_freq, float freq_base, float mscale, int neox) {
    const int half = n_rot / 2;
    const long long total = (long long)n_tokens * n_heads * half;
    for (long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x; idx < total; idx += (long long)gridDim.x * blockDim.x) {
        const int i = (int)(idx % half);
        const int h = (int)((idx / half) % n_heads);
        const int t = (int)(idx / ((long long)half * n_heads));
        const float f = inv_freq != nullptr ? inv_freq[i] : powf(freq_base, -2.0f * (float)i / (float)n_rot);
        const float theta = (float)(pos0 + t) * f;
        float s, c;
        sincosf(theta, &s, &c);
        s *= mscale;
        c *= mscale;
        float* base = v + (size_t)t * token_stride + (size_t)h * head_dim;
        const int i0 = neox ? i : 2 * i, i1 = neox ? i + half : 2 * i + 1;
        const float x0 = base[i0], x1 = base[i1];
        base[i0] = x0 * c - x1 * s;
        base[i1] = x0 * s + x1 * c;
    }
}

/** y[i] += x[i] (residual add). */
extern "C" __global__ void add_f32(float* y, const float* __restrict__ x, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] += x[i];
}

/** y[i] += alpha·x[i] (an expert's output weighted by its router weight). */
extern "C" __global__ void scale_add_f32(float* y, const float* __restrict__ x, float alpha, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] = fmaf(alpha, x[i], y[i]);
}

extern "C" __global__ void convert_f32_f16(const float* __restrict__ src, __half* __restrict__ dst, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) dst[i] = __float2half_rn(src[i]);
}

extern "C" __global__ void convert_f16_f32(const __half* __restrict__ src, float* __restrict__ dst, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) dst[i] = __half2float(src[i]);
}

// ---------------------------------------------------------------------------------------------------------------
// Attention of n_tokens consecutive query tokens over an F32 cache, split over the context (flash-decoding):
//   grid.x = n_tokens * heads (grid-stride), grid.y = splits; block = ATT_WARPS warps.
// Token t is at position p = n_kv - n_tokens + t and sees positions lo..p (causal), lo = max(0, p - window + 1) with
// a sliding window (window > 0), else 0; one decode token is n_tokens = 1, window = 0 over the n_kv positions given.
// Each warp walks positions lo + split*chunk + warp, + ATT_WARPS, ... with an online softmax
// (running max m, running sum l, running output acc), lanes splitting the head dimension; the block then merges
// its warps. No shared array of context length, so any context fits. With splits == 1 the block writes the
// normalised output; otherwise (one token only) it writes (m, l, acc[head_dim]) to
// partial[(h*splits + split)*(head_dim+2)] and attention_combine_f32 merges the splits.
//
//   q        n_tokens*n_heads*head_dim queries (already rotated and NOT pre-scaled); out likewise
//   k, v     cache rows for this layer: position t of KV head g at k + t*kv_stride + g*head_dim
//   scale    1/sqrt(head_dim) for llama
//   softcap  scores become softcap * tanh(score / softcap) when > 0 (Gemma 2)
//   sinks    per-head sink logits (gpt-oss) that join the softmax's denominator and add no value; null = none
// head_dim <= ATT_MAX_HD.
#define ATT_WARPS 4
#define ATT_MAX_HD 256
#define ATT_PER_LANE (ATT_MAX_HD / 32)

__device__ __forceinline__ float kv_value(const float* p) { return *p; }
__device__ __forceinline__ float kv_value(const __half* p) { return __half2float(*p); }

// The body of attention_f32 / attention_f16kv over a cache of KV elements (float, or __half: the F16 KV cache,
// widened to float as it is read); the block's shared arrays come from the kernel.
template <typename KV>
__device__ __forceinline__ void attention_block(const float* __restrict__ q, const KV* __restrict__ k, const KV* __restrict__ v,
        float* __restrict__ out, float* __restrict__ partial, int n_heads, int n_kv_heads, int head_dim, int kv_stride, int n_kv,
        float scale, float softcap, const float* __restrict__ sinks, int splits, int n_tokens, int window, float* s_m, float* s_l,
        float (*s_acc)[ATT_MAX_HD]) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int group = n_heads / n_kv_heads;
    const int split = blockIdx.y;
    for (int th = blockIdx.x; th < n_heads * n_tokens; th += gridDim.x) {
        const int h = th % n_heads, g = h / group;
        const int pos = n_kv - n_tokens + th / n_heads;
        const int lo = window > 0 ? max(0, pos - window + 1) : 0, span = pos + 1 - lo;
        const int chunk = (span + splits - 1) / splits;
        const int t0 = lo + min(span, split * chunk), t1 = lo + min(span, split * chunk + chunk);
        float qv[ATT_PER_LANE], acc[ATT_PER_LANE];
#pragma unroll
        for (int j = 0; j < ATT_PER_LANE; j++) {
            const int d = lane + 32 * j;
            qv[j] = d < head_dim ? q[(size_t)th * head_dim + d] : 0.0f;
            acc[j] = 0.0f;
        }
        float m = -INFINITY, l = 0.0f;
        for (int t = t0 + warp; t < t1; t += ATT_WARPS) {
            const KV* kp = k + (size_t)t * kv_stride + (size_t)g * head_dim;
            const KV* vp = v + (size_t)t * kv_stride + (size_t)g * head_dim;
            float s = 0.0f;
#pragma unroll
            for (int j = 0; j < ATT_PER_LANE; j++) {
                const int d = lane + 32 * j;
                if (d < head_dim) s += qv[j] * kv_value(kp + d);
            }
            s = warp_sum(s) * scale;
            if (softcap > 0.0f) s = softcap * tanhf(s / softcap);
            const float mn = fmaxf(m, s);
            const float corr = expf(m - mn); // m = -inf on the first position: corr = 0
            const float p = expf(s - mn);
            l = l * corr + p;
#pragma unroll
            for (int j = 0; j < ATT_PER_LANE; j++) {
                const int d = lane + 32 * j;
                acc[j] = acc[j] * corr + (d < head_dim ? p * kv_value(vp + d) : 0.0f);
            }
            m = mn;
        }
        if (lane == 0) {
            s_m[warp] = m;
            s_l[warp] = l;
        }
#pragma unroll
        for (int j = 0; j < ATT_PER_LANE; j++) {
            const int d = lane + 32 * j;
            if (d < head_dim) s_acc[warp][d] = acc[j];
        }
        __syncthreads();
        float M = -INFINITY;
#pragma unroll
        for (int w = 0; w < ATT_WARPS; w++) M = fmaxf(M, s_m[w]);
        // the sink (one split only, or the combine kernel, counts it): it raises the max and the denominator
        const float sink = sinks != nullptr && splits == 1 ? sinks[h] : -INFINITY;
        M = fmaxf(M, sink);
        float L = sink > -INFINITY ? expf(sink - M) : 0.0f;
#pragma unroll
        for (int w = 0; w < ATT_WARPS; w++) L += s_l[w] > 0.0f ? s_l[w] * expf(s_m[w] - M) : 0.0f;
        for (int d = threadIdx.x; d < head_dim; d += blockDim.x) {
            float o = 0.0f;
#pragma unroll
            for (int w = 0; w < ATT_WARPS; w++) o += s_l[w] > 0.0f ? s_acc[w][d] * expf(s_m[w] - M) : 0.0f;
            if (splits == 1) {
                out[(size_t)th * head_dim + d] = L > 0.0f ? o / L : 0.0f;
            } else {
                float* p = partial + ((size_t)h * splits + split) * (head_dim + 2);
                p[2 + d] = o;
                if (d == 0) {
                    p[0] = M;
                    p[1] = L;
                }
            }
        }
        __syncthreads(); // s_* are reused for the next (token, head)
    }
}

extern "C" __global__ void __launch_bounds__(ATT_WARPS * 32)
attention_f32(const float* __restrict__ q, const float* __restrict__ k, const float* __restrict__ v, float* __restrict__ out,
              float* __restrict__ partial, int n_heads, int n_kv_heads, int head_dim, int kv_stride, int n_kv, float scale,
              float softcap, const float* __restrict__ sinks, int splits, int n_tokens, int window) {
    __shared__ float s_m[ATT_WARPS], s_l[ATT_WARPS];
    __shared__ float s_acc[ATT_WARPS][ATT_MAX_HD];
    attention_block<float>(q, k, v, out, partial, n_heads, n_kv_heads, head_dim, kv_stride, n_kv, scale, softcap, sinks, splits, n_tokens,
                           window, s_m, s_l, s_acc);
}

/** attention_f32 over an F16 KV cache (the same arguments; k and v hold halves). */
extern "C" __global__ void __launch_bounds__(ATT_WARPS * 32)
attention_f16kv(const float* __restrict__ q, const __half* __restrict__ k, const __half* __restrict__ v, float* __restrict__ out,
                float* __restrict__ partial, int n_heads, int n_kv_heads, int head_dim, int kv_stride, int n_kv, float scale,
                float softcap, const float* __restrict__ sinks, int splits, int n_tokens, int window) {
    __shared__ float s_m[ATT_WARPS], s_l[ATT_WARPS];
    __shared__ float s_acc[ATT_WARPS][ATT_MAX_HD];
    attention_block<__half>(q, k, v, out, partial, n_heads, n_kv_heads, head_dim, kv_stride, n_kv, scale, softcap, sinks, splits, n_tokens,
                            window, s_m, s_l, s_acc);
}

/** Merges the splits of attention_f32: out[h,:] = Σ_s acc_s e^(m_s - M) / (Σ_s l_s e^(m_s - M) + e^(sink_h - M)). One block per head. */
extern "C" __global__ void attention_combine_f32(const float* __restrict__ partial, float* __restrict__ out, int n_heads,
                                                 int head_dim, const float* __restrict__ sinks, int splits) {
    for (int h = blockIdx.x; h < n_heads; h += gridDim.x) {
        const float* p = partial + (size_t)h * splits * (head_dim + 2);
        const float sink = sinks != nullptr ? sinks[h] : -INFINITY;
        float M = sink;
        for (int s = 0; s < splits; s++) M = fmaxf(M, p[(size_t)s * (head_dim + 2)]);
        float L = sink > -INFINITY ? expf(sink - M) : 0.0f;
        for (int s = 0; s < splits; s++) {
            const float* ps = p + (size_t)s * (head_dim + 2);
            if (ps[1] > 0.0f) L += ps[1] * expf(ps[0] - M);
        }
        for (int d = threadIdx.x; d < head_dim; d += blockDim.x) {
            float o = 0.0f;
            for (int s = 0; s < splits; s++) {
                const float* ps = p + (size_t)s * (head_dim + 2);
                if (ps[1] > 0.0f) o += ps[2 + d] * expf(ps[0] - M);
            }
            out[(size_t)h * head_dim + d] = L > 0.0f ? o / L : 0.0f;
        }
    }
}

// Causal attention of a prompt chunk, tiled (flash attention): one block per (tile of FA_QT consecutive query tokens,
// head). The block stages FA_KT cache positions of its KV head at a time in shared memory, and each warp runs the
// online softmax of FA_QT / ATT_WARPS queries over them, lanes splitting the head dimension — so a position's key
// and value are read from global memory once per tile of queries instead of once per query. Arguments as
// attention_f32 with splits = 1: token i of the chunk is at position n_kv - n_tokens + i and sees positions
// max(0, pos - window + 1)..pos (0..pos without a window).
#define FA_QT 16
#define FA_KT 16
#define FA_QPW (FA_QT / ATT_WARPS)

template <typename KV>
__device__ __forceinline__ void flash_attention_block(const float* __restrict__ q, const KV* __restrict__ k, const KV* __restrict__ v,
        float* __restrict__ out, int n_heads, int n_kv_heads, int head_dim, int kv_stride, int n_kv, float scale, float softcap,
        const float* __restrict__ sinks, int n_tokens, int window, float (*s_k)[ATT_MAX_HD], float (*s_v)[ATT_MAX_HD]) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int group = n_heads / n_kv_heads, tiles = (n_tokens + FA_QT - 1) / FA_QT;
    for (int tb = blockIdx.x; tb < tiles * n_heads; tb += gridDim.x) {
        const int h = tb % n_heads, g = h / group, i0 = (tb / n_heads) * FA_QT;
        const int i1 = min(n_tokens, i0 + FA_QT), first = n_kv - n_tokens + i0, last = n_kv - n_tokens + i1 - 1;
        const int lo = window > 0 ? max(0, first - window + 1) : 0;
        float qv[FA_QPW][ATT_PER_LANE], acc[FA_QPW][ATT_PER_LANE], m[FA_QPW], l[FA_QPW];
#pragma unroll
        for (int j = 0; j < FA_QPW; j++) {
            const int i = i0 + warp * FA_QPW + j;
#pragma unroll
            for (int e = 0; e < ATT_PER_LANE; e++) {
                const int d = lane + 32 * e;
                qv[j][e] = i < i1 && d < head_dim ? q[((size_t)i * n_heads + h) * head_dim + d] : 0.0f;
                acc[j][e] = 0.0f;
            }
            m[j] = -INFINITY;
            l[j] = 0.0f;
        }
        for (int t0 = lo; t0 <= last; t0 += FA_KT) {
            const int nt = min(FA_KT, last + 1 - t0);
            __syncthreads();   // the previous tile is no longer read
            for (int x = threadIdx.x; x < nt * head_dim; x += blockDim.x) {
                const int t = x / head_dim, d = x - t * head_dim;
                const size_t at = (size_t)(t0 + t) * kv_stride + (size_t)g * head_dim + d;
                s_k[t][d] = kv_value(k + at);
                s_v[t][d] = kv_value(v + at);
            }
            __syncthreads();
#pragma unroll
            for (int j = 0; j < FA_QPW; j++) {
                const int i = i0 + warp * FA_QPW + j;
                if (i >= i1) continue;   // the same for the whole warp
                const int pos = n_kv - n_tokens + i, from = window > 0 ? max(t0, pos - window + 1) : t0, to = min(t0 + nt - 1, pos);
                for (int t = from; t <= to; t++) {
                    float s = 0.0f;
#pragma unroll
                    for (int e = 0; e < ATT_PER_LANE; e++) {
                        const int d = lane + 32 * e;
                        if (d < head_dim) s += qv[j][e] * s_k[t - t0][d];
                    }
                    s = warp_sum(s) * scale;
                    if (softcap > 0.0f) s = softcap * tanhf(s / softcap);
                    const float mn = fmaxf(m[j], s), corr = expf(m[j] - mn), p = expf(s - mn);
                    l[j] = l[j] * corr + p;
#pragma unroll
                    for (int e = 0; e < ATT_PER_LANE; e++) {
                        const int d = lane + 32 * e;
                        acc[j][e] = acc[j][e] * corr + (d < head_dim ? p * s_v[t - t0][d] : 0.0f);
                    }
                    m[j] = mn;
                }
            }
        }
#pragma unroll
        for (int j = 0; j < FA_QPW; j++) {
            const int i = i0 + warp * FA_QPW + j;
            if (i >= i1) continue;
            // the sink raises the max and the denominator, and adds no value
            const float sink = sinks != nullptr ? sinks[h] : -INFINITY, M = fmaxf(m[j], sink);
            const float c = l[j] > 0.0f ? expf(m[j] - M) : 0.0f, L = l[j] * c + (sink > -INFINITY ? expf(sink - M) : 0.0f);
#pragma unroll
            for (int e = 0; e < ATT_PER_LANE; e++) {
                const int d = lane + 32 * e;
                if (d < head_dim) out[((size_t)i * n_heads + h) * head_dim + d] = L > 0.0f ? acc[j][e] * c / L : 0.0f;
            }
        }
    }
}

extern "C" __global__ void __launch_bounds__(ATT_WARPS * 32)
flash_attention_f32(const float* __restrict__ q, const float* __restrict__ k, const float* __restrict__ v, float* __restrict__ out,
                    int n_heads, int n_kv_heads, int head_dim, int kv_stride, int n_kv, float scale, float softcap,
                    const float* __restrict__ sinks, int n_tokens, int window) {
    __shared__ float s_k[FA_KT][ATT_MAX_HD], s_v[FA_KT][ATT_MAX_HD];
    flash_attention_block<float>(q, k, v, out, n_heads, n_kv_heads, head_dim, kv_stride, n_kv, scale, softcap, sinks, n_tokens, window, s_k, s_v);
}

/** flash_attention_f32 over an F16 KV cache (the same arguments; k and v hold halves, widened as they are staged). */
extern "C" __global__ void __launch_bounds__(ATT_WARPS * 32)
flash_attention_f16kv(const float* __restrict__ q, const __half* __restrict__ k, const __half* __restrict__ v, float* __restrict__ out,
                      int n_heads, int n_kv_heads, int head_dim, int kv_stride, int n_kv, float scale, float softcap,
                      const float* __restrict__ sinks, int n_tokens, int window) {
    __shared__ float s_k[FA_KT][ATT_MAX_HD], s_v[FA_KT][ATT_MAX_HD];
    flash_attention_block<__half>(q, k, v, out, n_heads, n_kv_heads, head_dim, kv_stride, n_kv, scale, softcap, sinks, n_tokens, window, s_k, s_v);
}
