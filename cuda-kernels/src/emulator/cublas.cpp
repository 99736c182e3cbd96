// cuda-emu: the cuBLAS calls PowerInfer4j makes (bindings/.../cublas_h.java), as plain loops on the handle's stream.
// GEMMs accumulate in float like cuBLAS's 32F compute types; alpha and beta are read in the compute type's scalar
// type (half for CUBLAS_COMPUTE_16F), as the library does, so passing the wrong scalar type shows.
#include "emulator.h"

#include <cstdio>
#include <cstring>
#include <memory>

#define API extern "C" __attribute__((visibility("default")))

typedef int cublasStatus_t;
enum : cublasStatus_t {
    CUBLAS_STATUS_SUCCESS = 0,
    CUBLAS_STATUS_NOT_INITIALIZED = 1,
    CUBLAS_STATUS_INVALID_VALUE = 7,
    CUBLAS_STATUS_EXECUTION_FAILED = 13,
    CUBLAS_STATUS_NOT_SUPPORTED = 15,
};
enum { CUDA_R_32F = 0, CUDA_R_16F = 2, CUDA_R_16BF = 14 };
enum { CUBLAS_COMPUTE_16F = 64, CUBLAS_COMPUTE_32F = 68, CUBLAS_COMPUTE_32F_FAST_16F = 74, CUBLAS_COMPUTE_32F_FAST_16BF = 75,
       CUBLAS_COMPUTE_32F_FAST_TF32 = 77 };

extern "C" int cuCtxGetCurrent(void** ctx);
extern "C" int cuStreamSynchronize(void* stream);
// the driver's stream submission, shared with driver.cpp
extern "C" int cuemuSubmit(void* stream, void (*fn)(void*), void* arg);

namespace {

struct Handle {
    void* stream = nullptr;
    int math_mode = 0;
};

float load(const void* base, int type, size_t i) {
    if (type == CUDA_R_32F) return ((const float*)base)[i];
    if (type == CUDA_R_16F) return __half2float(((const __half*)base)[i]);
    uint32_t bits = (uint32_t)((const uint16_t*)base)[i] << 16; // bf16
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

void store(void* base, int type, size_t i, float v) {
    if (type == CUDA_R_32F) ((float*)base)[i] = v;
    else if (type == CUDA_R_16F) ((__half*)base)[i] = __float2half_rn(v);
    else {
        uint32_t bits;
        memcpy(&bits, &v, 4);
        if ((bits & 0x7fffffffu) > 0x7f800000u) { // NaN stays NaN (rounding could carry it into inf or zero)
            ((uint16_t*)base)[i] = (uint16_t)((bits >> 16) | 0x40u);
            return;
        }
        bits += 0x7fffu + ((bits >> 16) & 1u); // round to nearest even
        ((uint16_t*)base)[i] = (uint16_t)(bits >> 16);
    }
}

bool supported_type(int t) { return t == CUDA_R_32F || t == CUDA_R_16F || t == CUDA_R_16BF; }
bool supported_compute(int c) {
    return c == CUBLAS_COMPUTE_16F || c == CUBLAS_COMPUTE_32F || c == CUBLAS_COMPUTE_32F_FAST_16F || c == CUBLAS_COMPUTE_32F_FAST_16BF ||
           c == CUBLAS_COMPUTE_32F_FAST_TF32;
}

struct Gemm {
    int ta, tb, m, n, k;
    float alpha, beta;
    const void *a, *b;
    void* c;
    int at, bt, ct, lda, ldb, ldc;
    long long sa, sb, sc;
    int batch;
    size_t ea, eb, ec; // element sizes

    void run() const {
        for (int i = 0; i < batch; i++) {
            const char* A = (const char*)a + (size_t)(sa * i) * ea;
            const char* B = (const char*)b + (size_t)(sb * i) * eb;
            char* C = (char*)c + (size_t)(sc * i) * ec;
            for (int col = 0; col < n; col++)
                for (int row = 0; row < m; row++) {
                    float s = 0.0f;
                    for (int l = 0; l < k; l++) {
                        const float x = load(A, at, ta == 0 ? (size_t)row + (size_t)l * lda : (size_t)l + (size_t)row * lda);
                        const float y = load(B, bt, tb == 0 ? (size_t)l + (size_t)col * ldb : (size_t)col + (size_t)l * ldb);
                        s += x * y;
                    }
                    const size_t ci = (size_t)row + (size_t)col * ldc;
                    store(C, ct, ci, beta == 0.0f ? alpha * s : alpha * s + beta * load(C, ct, ci));
                }
        }
    }
};

size_t element_bytes(int t) { return t == CUDA_R_32F ? 4 : 2; }

float scalar(const void* p, int compute) {
    return compute == CUBLAS_COMPUTE_16F ? __half2float(*(const __half*)p) : *(const float*)p;
}

cublasStatus_t gemm(void* handle, int ta, int tb, int m, int n, int k, const void* alpha, const void* A, int at, int lda, long long sa,
                    const void* B, int bt, int ldb, long long sb, const void* beta, void* C, int ct, int ldc, long long sc, int batch,
                    int compute, const char* what) {
    Handle* h = (Handle*)handle;
    if (h == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (m < 0 || n < 0 || k < 0 || batch < 0 || ta < 0 || ta > 2 || tb < 0 || tb > 2 || alpha == nullptr || beta == nullptr)
        return CUBLAS_STATUS_INVALID_VALUE;
    const int a_rows = ta == 0 ? m : k, b_rows = tb == 0 ? k : n;
    if (lda < (a_rows > 1 ? a_rows : 1) || ldb < (b_rows > 1 ? b_rows : 1) || ldc < (m > 1 ? m : 1)) {
        fprintf(stderr, "cuda-emu: %s: leading dimension too small (lda %d ldb %d ldc %d for m %d n %d k %d)\n", what, lda, ldb, ldc, m, n, k);
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    // the combinations cuBLAS's GemmEx table lists: 16F compute takes 16F only; 32F compute takes 32F in and out,
    // or 16F / 16BF in with the same type or 32F out; the FAST_* (tensor-core) 32F modes take 32F only
    const bool combination_ok = at == bt && (compute == CUBLAS_COMPUTE_16F ? at == CUDA_R_16F && ct == CUDA_R_16F
                                             : compute == CUBLAS_COMPUTE_32F ? (at == CUDA_R_32F ? ct == CUDA_R_32F : ct == at || ct == CUDA_R_32F)
                                                                             : at == CUDA_R_32F && ct == CUDA_R_32F);
    if (!supported_type(at) || !supported_type(bt) || !supported_type(ct) || !supported_compute(compute) || !combination_ok) {
        fprintf(stderr, "cuda-emu: %s: unsupported type combination A %d B %d C %d compute %d\n", what, at, bt, ct, compute);
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    if (m == 0 || n == 0 || batch == 0) return CUBLAS_STATUS_SUCCESS;
    auto g = new Gemm{ta, tb, m, n, k, scalar(alpha, compute), scalar(beta, compute), A, B, C, at, bt, ct, lda, ldb, ldc, sa, sb, sc, batch,
                      element_bytes(at), element_bytes(bt), element_bytes(ct)};
    // operands must be device-accessible (the extent of the first and last matrix of the batch)
    const size_t a_extent = (size_t)lda * (ta == 0 ? k : m), b_extent = (size_t)ldb * (tb == 0 ? n : k), c_extent = (size_t)ldc * n;
    const size_t last = (size_t)(batch - 1);
    if (!emu::device_accessible((uint64_t)A, (a_extent + last * sa) * g->ea) || !emu::device_accessible((uint64_t)B, (b_extent + last * sb) * g->eb) ||
        !emu::device_accessible((uint64_t)C, (c_extent + last * sc) * g->ec)) {
        fprintf(stderr, "cuda-emu: %s: an operand is not (entirely) in device-accessible memory\n", what);
        delete g;
        return CUBLAS_STATUS_EXECUTION_FAILED;
    }
    const int r = cuemuSubmit(h->stream, [](void* p) {
        auto* gg = (Gemm*)p;
        gg->run();
        delete gg;
    }, g);
    if (r != 0) {
        delete g;
        return CUBLAS_STATUS_EXECUTION_FAILED;
    }
    return CUBLAS_STATUS_SUCCESS;
}

} // namespace

API cublasStatus_t cublasCreate_v2(void** handle) {
    void* ctx = nullptr;
    if (handle == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
    if (cuCtxGetCurrent(&ctx) != 0 || ctx == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
    *handle = new Handle();
    return CUBLAS_STATUS_SUCCESS;
}

API cublasStatus_t cublasDestroy_v2(void* handle) {
    if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
    cuStreamSynchronize(((Handle*)handle)->stream);
    delete (Handle*)handle;
    return CUBLAS_STATUS_SUCCESS;
}

API cublasStatus_t cublasSetStream_v2(void* handle, void* stream) {
    if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
    ((Handle*)handle)->stream = stream;
    return CUBLAS_STATUS_SUCCESS;
}

API cublasStatus_t cublasSetMathMode(void* handle, int mode) {
    if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
    ((Handle*)handle)->math_mode = mode;
    return CUBLAS_STATUS_SUCCESS;
}

API cublasStatus_t cublasGetVersion_v2(void* handle, int* version) {
    if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (version == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
    *version = 130000;
    return CUBLAS_STATUS_SUCCESS;
}

API cublasStatus_t cublasGemmEx(void* handle, int ta, int tb, int m, int n, int k, const void* alpha, const void* A, int at, int lda,
                                const void* B, int bt, int ldb, const void* beta, void* C, int ct, int ldc, int compute, int algo) {
    (void)algo;
    return gemm(handle, ta, tb, m, n, k, alpha, A, at, lda, 0, B, bt, ldb, 0, beta, C, ct, ldc, 0, 1, compute, "cublasGemmEx");
}

API cublasStatus_t cublasGemmStridedBatchedEx(void* handle, int ta, int tb, int m, int n, int k, const void* alpha, const void* A, int at,
                                              int lda, long long sa, const void* B, int bt, int ldb, long long sb, const void* beta, void* C,
                                              int ct, int ldc, long long sc, int batch, int compute, int algo) {
    (void)algo;
    return gemm(handle, ta, tb, m, n, k, alpha, A, at, lda, sa, B, bt, ldb, sb, beta, C, ct, ldc, sc, batch, compute,
                "cublasGemmStridedBatchedEx");
}
