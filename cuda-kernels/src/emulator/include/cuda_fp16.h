// cuda-emu: the CUDA device built-ins the PowerInfer4j kernels use, for compiling the same .cu sources as host C++.
//
// The kernels' own sources (src/main/cuda/*.cu) are compiled by g++ against this header (it shadows the toolkit's
// <cuda_fp16.h>, which common.cuh includes). Every CUDA thread of a block runs as a fiber on one host thread
// (runtime.cpp): __syncthreads and the warp-synchronous intrinsics are scheduling points where the fibers of the
// block (or warp) meet, so barriers, shuffles and ballots behave as on a GPU, and a barrier that not every thread
// reaches is reported as the bug it is instead of hanging.
#pragma once

#include <atomic>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
// One copy per host thread: the fibers of a block share it, blocks run one after another, and two streams
// executing kernels at once (on different host threads) do not share it.
#define __shared__ static thread_local

struct emu_dim3 {
    unsigned x, y, z;
};

namespace emu {
extern thread_local emu_dim3 block_idx, block_dim, grid_dim;
const emu_dim3& thread_idx();
void sync_block();
// warp-synchronous exchange: every lane of the warp deposits a value; op and arg say what each lane gets back
enum WarpOp { SHFL_XOR, SHFL_IDX, SHFL_DOWN, SHFL_UP, BALLOT };
uint64_t warp_exchange(unsigned mask, WarpOp op, int arg, int width, uint64_t value);
// a load the GPU would fault on ("misaligned address"); x86 does not care, so the launch is failed afterwards
void misaligned_load(const void* p, size_t alignment);
// bytes read through __ldg (the kernels' weight and input loads): how much a kernel reads, e.g. with a sparse mask
extern std::atomic<unsigned long long> ldg_bytes;
} // namespace emu

#define threadIdx (::emu::thread_idx())
#define blockIdx (::emu::block_idx)
#define blockDim (::emu::block_dim)
#define gridDim (::emu::grid_dim)

struct alignas(8) float2 {
    float x, y;
};
struct alignas(16) float4 {
    float x, y, z, w;
};
struct alignas(16) uint4 {
    unsigned x, y, z, w;
};
struct alignas(2) __half {
    unsigned short bits;
};
struct alignas(4) __half2 {
    __half x, y;
};
typedef __half half;

// IEEE binary16 <-> binary32, round to nearest even (what __float2half_rn does)
inline float __half2float(__half h) {
    const uint32_t s = (uint32_t)(h.bits & 0x8000u) << 16, e = (h.bits >> 10) & 0x1f, m = h.bits & 0x3ffu;
    uint32_t bits;
    if (e == 0) {
        if (m == 0) {
            bits = s;
        } else { // subnormal: normalise
            int shift = 0;
            uint32_t mm = m;
            while ((mm & 0x400u) == 0) { mm <<= 1; shift++; }
            bits = s | ((uint32_t)(127 - 15 + 1 - shift) << 23) | ((mm & 0x3ffu) << 13);
        }
    } else if (e == 31) {
        bits = s | 0x7f800000u | (m << 13);
    } else {
        bits = s | ((e + 127 - 15) << 23) | (m << 13);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

inline __half __float2half_rn(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const uint32_t ax = x & 0x7fffffffu;
    __half h;
    if (ax > 0x7f800000u) { h.bits = (unsigned short)(sign | 0x7e00u); return h; } // NaN
    if (ax >= 0x477ff000u) { h.bits = (unsigned short)(sign | 0x7c00u); return h; } // rounds to >= 65520: inf
    if (ax < 0x38800000u) { // result subnormal or zero: value = ax * 2^24 in half units, round to nearest even
        if (ax < 0x33000000u) { h.bits = (unsigned short)sign; return h; } // < 2^-25: zero
        const uint32_t e = ax >> 23, m = (ax & 0x7fffffu) | 0x800000u;
        const int shift = (int)(126 - e); // 14 + (113 - e) ... bits to drop from the 24-bit significand
        const uint32_t q = m >> (shift), rem = m & ((1u << shift) - 1u), halfway = 1u << (shift - 1);
        uint32_t r = q + (rem > halfway || (rem == halfway && (q & 1u)) ? 1u : 0u);
        h.bits = (unsigned short)(sign | r);
        return h;
    }
    uint32_t r = ax - 0x38000000u; // rebias exponent 127 -> 15 (in place), 23 -> 10 mantissa bits below
    const uint32_t rem = r & 0x1fffu;
    r >>= 13;
    if (rem > 0x1000u || (rem == 0x1000u && (r & 1u))) r++;
    h.bits = (unsigned short)(sign | r);
    return h;
}

inline __half __ushort_as_half(unsigned short v) {
    __half h;
    h.bits = v;
    return h;
}
inline float2 __half22float2(__half2 h) { return float2{__half2float(h.x), __half2float(h.y)}; }

template <typename T>
inline T __ldg(const T* p) {
    if (((uintptr_t)p & (alignof(T) - 1)) != 0) emu::misaligned_load(p, alignof(T));
    emu::ldg_bytes.fetch_add(sizeof(T), std::memory_order_relaxed);
    return *p;
}

inline int __popc(unsigned v) { return __builtin_popcount(v); }
inline int __ffs(int v) { return __builtin_ffs(v); }

inline int atomicAdd(int* p, int v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
inline unsigned atomicAdd(unsigned* p, unsigned v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
inline float atomicAdd(float* p, float v) {
    float old, sum;
    __atomic_load(p, &old, __ATOMIC_RELAXED);
    do { sum = old + v; } while (!__atomic_compare_exchange(p, &old, &sum, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
    return old;
}

inline void __syncthreads() { emu::sync_block(); }

inline uint64_t emu_bits(float v) { uint32_t b; memcpy(&b, &v, 4); return b; }
inline float emu_float(uint64_t b) { uint32_t u = (uint32_t)b; float f; memcpy(&f, &u, 4); return f; }

inline float __shfl_xor_sync(unsigned mask, float v, int lane_mask, int width = 32) {
    return emu_float(emu::warp_exchange(mask, emu::SHFL_XOR, lane_mask, width, emu_bits(v)));
}
inline int __shfl_xor_sync(unsigned mask, int v, int lane_mask, int width = 32) {
    return (int)(uint32_t)emu::warp_exchange(mask, emu::SHFL_XOR, lane_mask, width, (uint32_t)v);
}
inline float __shfl_sync(unsigned mask, float v, int src, int width = 32) {
    return emu_float(emu::warp_exchange(mask, emu::SHFL_IDX, src, width, emu_bits(v)));
}
inline int __shfl_sync(unsigned mask, int v, int src, int width = 32) {
    return (int)(uint32_t)emu::warp_exchange(mask, emu::SHFL_IDX, src, width, (uint32_t)v);
}
inline float __shfl_down_sync(unsigned mask, float v, unsigned delta, int width = 32) {
    return emu_float(emu::warp_exchange(mask, emu::SHFL_DOWN, (int)delta, width, emu_bits(v)));
}
inline float __shfl_up_sync(unsigned mask, float v, unsigned delta, int width = 32) {
    return emu_float(emu::warp_exchange(mask, emu::SHFL_UP, (int)delta, width, emu_bits(v)));
}
inline unsigned __ballot_sync(unsigned mask, int pred) {
    return (unsigned)emu::warp_exchange(mask, emu::BALLOT, 0, 32, pred != 0 ? 1u : 0u);
}
inline int __any_sync(unsigned mask, int pred) { return __ballot_sync(mask, pred) != 0; }
inline int __all_sync(unsigned mask, int pred) { return __ballot_sync(mask, !pred) == 0; }

inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline long long min(long long a, long long b) { return a < b ? a : b; }
inline long long max(long long a, long long b) { return a > b ? a : b; }
inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
inline float rsqrtf(float v) { return 1.0f / sqrtf(v); }
