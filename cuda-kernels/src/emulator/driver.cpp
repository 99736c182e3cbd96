// cuda-emu: the subset of the CUDA driver API PowerInfer4j calls (bindings/.../cuda_h.java), on the CPU.
//
// "Device" memory is host memory (page-aligned mappings with an inaccessible page after each allocation, so a
// kernel that reads past its buffer faults instead of reading a neighbour), counted against a configurable device
// size (POWERINFER4J_EMU_MEMORY, bytes; default 8 GiB) so out-of-memory paths can be exercised. Streams are host
// threads executing their work in order, asynchronously to the caller, so a missing stream or event
// synchronisation shows up as a wrong result as it would on a GPU; the NULL stream runs work on the caller's
// thread. Like the real driver, calls need cuInit and a current context on the calling thread, copies and kernel
// pointer arguments must lie inside memory the device can address, a failed kernel poisons the context (every
// later call returns its error), and modules are PTX text: cuModuleGetFunction finds a kernel only if the PTX
// declares it, and checks the PTX parameter list and .maxntid against the compiled-in kernel of that name.
#include "emulator.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <regex>
#include <set>
#include <thread>

#define API extern "C" __attribute__((visibility("default")))

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;

enum : CUresult {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_INVALID_VALUE = 1,
    CUDA_ERROR_OUT_OF_MEMORY = 2,
    CUDA_ERROR_NOT_INITIALIZED = 3,
    CUDA_ERROR_NO_DEVICE = 100,
    CUDA_ERROR_INVALID_DEVICE = 101,
    CUDA_ERROR_INVALID_IMAGE = 200,
    CUDA_ERROR_INVALID_CONTEXT = 201,
    CUDA_ERROR_INVALID_PTX = 218,
    CUDA_ERROR_INVALID_HANDLE = 400,
    CUDA_ERROR_NOT_FOUND = 500,
    CUDA_ERROR_NOT_READY = 600,
    CUDA_ERROR_ILLEGAL_ADDRESS = 700,
    CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701,
    CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED = 712,
    CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED = 713,
    CUDA_ERROR_LAUNCH_FAILED = 719,
    CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222,
    CUDA_ERROR_UNKNOWN = 999,
};

namespace {

struct Context {
    int refs = 0;
};

struct Region {
    uint64_t end;
    enum Kind { DEVICE, PINNED, REGISTERED } kind;
    void* map_base; // DEVICE and PINNED: the mapping to unmap
    size_t map_bytes;
    size_t bytes;
    bool device_mapped; // PINNED / REGISTERED: has a device address
};

// the first launch failure, returned by every later call: the context is poisoned, as with the driver
std::atomic<CUresult> g_sticky{CUDA_SUCCESS};

/** Queued work: data work (copies, kernels, GEMMs) is dropped once the context is poisoned; markers always run. */
struct Work {
    std::function<void()> fn;
    bool marker; // event records and waits: they must complete, or waiters would hang
};

struct Stream {
    unsigned flags = 0;
    std::mutex m;
    std::condition_variable cv;
    std::deque<Work> work;
    bool running = false, stop = false;

    // runs on its own detached thread, which holds a reference: destroying the stream lets queued work finish
    static void loop(std::shared_ptr<Stream> self) {
        std::unique_lock<std::mutex> lock(self->m);
        for (;;) {
            self->cv.wait(lock, [&] { return self->stop || !self->work.empty(); });
            if (self->work.empty()) return;
            Work w = std::move(self->work.front());
            self->work.pop_front();
            self->running = true;
            lock.unlock();
            if (w.marker || g_sticky.load() == CUDA_SUCCESS) w.fn(); // a poisoned context runs no more data work
            lock.lock();
            self->running = false;
            self->cv.notify_all();
        }
    }
    void drain() {
        std::unique_lock<std::mutex> lock(m);
        cv.wait(lock, [&] { return work.empty() && !running; });
    }
};

struct Event {
    unsigned flags = 0;
    std::mutex m;
    std::condition_variable cv;
    uint64_t recorded = 0, completed = 0;
    int waiters = 0;        // host threads inside cuEventSynchronize
    bool destroyed = false; // destroyed events are kept (never reused) so late callers get INVALID_HANDLE
    double millis = 0; // host clock when the last record completed
};

struct PtxEntry {
    std::vector<size_t> param_sizes;
    unsigned max_threads = 0; // .maxntid product, 0 when the PTX sets none
};

struct Module {
    std::map<std::string, PtxEntry> entries;
};

struct Function {
    std::string name;
    const emu::KernelEntry* kernel;
    unsigned max_threads;
};

std::mutex g_mutex; // regions, streams, events, modules, memory accounting
bool g_initialized = false;
Context g_primary;
thread_local Context* t_current = nullptr;
std::map<uint64_t, Region> g_regions; // by start address
std::map<Stream*, std::shared_ptr<Stream>> g_streams; // live streams; a handle is the raw pointer
std::set<Event*> g_events;
std::set<Module*> g_modules;
size_t g_used = 0;

std::atomic<int> g_max_ptx_version{90}; // PTX ISA this "driver" JIT-compiles, times ten (CUDA 13: 9.0)

std::atomic<size_t> g_device_bytes{[] {
    const char* v = getenv("POWERINFER4J_EMU_MEMORY");
    unsigned long long n = v != nullptr ? strtoull(v, nullptr, 10) : 0;
    return (size_t)(n > 0 ? n : 8ull << 30);
}()};

size_t device_bytes() { return g_device_bytes.load(); }

double now_millis() {
    using namespace std::chrono;
    return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

void fail(CUresult code, const std::string& what) {
    fprintf(stderr, "cuda-emu: %s\n", what.c_str());
    CUresult expected = CUDA_SUCCESS;
    g_sticky.compare_exchange_strong(expected, code);
}

/** Streams (shared references, safe against a concurrent destroy) with the given flags, or all when flags < 0. */
std::vector<std::shared_ptr<Stream>> streams_with(int flags) {
    std::lock_guard<std::mutex> lock(g_mutex);
    std::vector<std::shared_ptr<Stream>> r;
    for (auto& [raw, s] : g_streams)
        if (flags < 0 || (int)s->flags == flags) r.push_back(s);
    return r;
}

// Checks shared by every call that needs an initialised driver and a current context.
CUresult ready(bool need_context = true) {
    if (!g_initialized) return CUDA_ERROR_NOT_INITIALIZED;
    if (need_context && (t_current == nullptr || t_current->refs == 0)) return CUDA_ERROR_INVALID_CONTEXT;
    return CUDA_SUCCESS;
}

#define REQUIRE_CONTEXT()                                \
    do {                                                 \
        CUresult r_ = ready();                           \
        if (r_ != CUDA_SUCCESS) return r_;               \
        r_ = g_sticky.load();                            \
        if (r_ != CUDA_SUCCESS) return r_;               \
    } while (0)

#define REQUIRE_READY()                                  \
    do {                                                 \
        CUresult r_ = ready();                           \
        if (r_ != CUDA_SUCCESS) return r_;               \
    } while (0)

const Region* find_region(uint64_t p, size_t bytes) { // caller holds g_mutex
    auto it = g_regions.upper_bound(p);
    if (it == g_regions.begin()) return nullptr;
    --it;
    const Region& r = it->second;
    if (p + bytes > r.end || p + bytes < p) return nullptr;
    if (r.kind != Region::DEVICE && !r.device_mapped) return nullptr;
    return &r;
}

size_t page_size() { return (size_t)sysconf(_SC_PAGESIZE); }

/** The live stream behind a handle, or null (the NULL / legacy / per-thread handles 0-2 are not streams here). */
std::shared_ptr<Stream> find_stream(void* handle) {
    std::lock_guard<std::mutex> lock(g_mutex);
    auto it = g_streams.find((Stream*)handle);
    return it == g_streams.end() ? nullptr : it->second;
}

// Work on a stream: the NULL / legacy / per-thread stream runs it here (after the blocking streams drained).
CUresult submit(void* handle, std::function<void()> op, bool marker = false) {
    if ((uintptr_t)handle <= 2) {
        for (auto& s : streams_with(0)) s->drain(); // the legacy stream waits for blocking streams only
        if (marker || g_sticky.load() == CUDA_SUCCESS) op();
        return CUDA_SUCCESS;
    }
    std::shared_ptr<Stream> s = find_stream(handle);
    if (!s) return CUDA_ERROR_INVALID_HANDLE;
    std::lock_guard<std::mutex> lock(s->m);
    s->work.push_back(Work{std::move(op), marker});
    s->cv.notify_all();
    return CUDA_SUCCESS;
}

CUresult copy(uint64_t dst, uint64_t src, size_t bytes, bool dst_device, bool src_device, void* stream, bool sync) {
    REQUIRE_CONTEXT();
    if (bytes == 0) return CUDA_SUCCESS;
    {
        std::lock_guard<std::mutex> lock(g_mutex);
        if (dst_device && find_region(dst, bytes) == nullptr) return CUDA_ERROR_INVALID_VALUE;
        if (src_device && find_region(src, bytes) == nullptr) return CUDA_ERROR_INVALID_VALUE;
    }
    CUresult r = submit(stream, [=] { memmove((void*)dst, (const void*)src, bytes); });
    if (r == CUDA_SUCCESS && sync && (uintptr_t)stream > 2)
        if (auto s = find_stream(stream)) s->drain();
    return r;
}

template <typename T>
CUresult fill(uint64_t dst, T value, size_t count, void* stream) {
    REQUIRE_CONTEXT();
    if (count > SIZE_MAX / sizeof(T)) return CUDA_ERROR_INVALID_VALUE;
    {
        std::lock_guard<std::mutex> lock(g_mutex);
        if (count > 0 && find_region(dst, count * sizeof(T)) == nullptr) return CUDA_ERROR_INVALID_VALUE;
    }
    if (dst % sizeof(T) != 0) return CUDA_ERROR_INVALID_VALUE;
    return submit(stream, [=] {
        T* p = (T*)dst;
        for (size_t i = 0; i < count; i++) p[i] = value;
    });
}

size_t ptx_param_bytes(const std::string& type) {
    if (type == "u64" || type == "s64" || type == "b64" || type == "f64") return 8;
    if (type == "u32" || type == "s32" || type == "b32" || type == "f32") return 4;
    if (type == "u16" || type == "s16" || type == "b16" || type == "f16") return 2;
    return 1;
}

} // namespace

bool emu::device_accessible(uint64_t p, size_t bytes) {
    std::lock_guard<std::mutex> lock(g_mutex);
    return find_region(p, bytes) != nullptr;
}

// --- initialisation, device, context -----------------------------------------------------------------------------

API CUresult cuInit(unsigned flags) {
    if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
    g_initialized = true;
    return CUDA_SUCCESS;
}

API CUresult cuDriverGetVersion(int* version) {
    if (version == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *version = 13000;
    return CUDA_SUCCESS;
}

API CUresult cuDeviceGetCount(int* count) {
    if (!g_initialized) return CUDA_ERROR_NOT_INITIALIZED;
    if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *count = 1;
    return CUDA_SUCCESS;
}

API CUresult cuDeviceGet(CUdevice* device, int ordinal) {
    if (!g_initialized) return CUDA_ERROR_NOT_INITIALIZED;
    if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
    *device = 0;
    return CUDA_SUCCESS;
}

API CUresult cuDeviceGetName(char* name, int len, CUdevice device) {
    if (!g_initialized) return CUDA_ERROR_NOT_INITIALIZED;
    if (device != 0) return CUDA_ERROR_INVALID_DEVICE;
    if (name == nullptr || len <= 0) return CUDA_ERROR_INVALID_VALUE;
    snprintf(name, (size_t)len, "%s", "cuda-emu (PowerInfer4j CPU emulator)");
    return CUDA_SUCCESS;
}

API CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice device) {
    if (!g_initialized) return CUDA_ERROR_NOT_INITIALIZED;
    if (device != 0) return CUDA_ERROR_INVALID_DEVICE;
    if (bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *bytes = device_bytes();
    return CUDA_SUCCESS;
}

API CUresult cuDeviceGetAttribute(int* value, int attribute, CUdevice device) {
    if (!g_initialized) return CUDA_ERROR_NOT_INITIALIZED;
    if (device != 0) return CUDA_ERROR_INVALID_DEVICE;
    if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
    switch (attribute) { // an H100/H200-like device, compute capability 9.0
        case 1: *value = 1024; break;        // MAX_THREADS_PER_BLOCK
        case 2: case 3: *value = 1024; break; // MAX_BLOCK_DIM_X, Y
        case 4: *value = 64; break;          // MAX_BLOCK_DIM_Z
        case 5: *value = 2147483647; break;  // MAX_GRID_DIM_X
        case 6: case 7: *value = 65535; break;
        case 8: *value = 49152; break;       // MAX_SHARED_MEMORY_PER_BLOCK
        case 10: *value = 32; break;         // WARP_SIZE
        case 13: *value = 1980000; break;    // CLOCK_RATE (kHz)
        case 16: *value = 132; break;        // MULTIPROCESSOR_COUNT
        case 18: *value = 0; break;          // INTEGRATED
        case 19: *value = 1; break;          // CAN_MAP_HOST_MEMORY
        case 31: *value = 1; break;          // CONCURRENT_KERNELS
        case 36: *value = 2619000; break;    // MEMORY_CLOCK_RATE (kHz)
        case 37: *value = 6144; break;       // GLOBAL_MEMORY_BUS_WIDTH
        case 38: *value = 50 << 20; break;   // L2_CACHE_SIZE
        case 39: *value = 2048; break;       // MAX_THREADS_PER_MULTIPROCESSOR
        case 40: *value = 3; break;          // ASYNC_ENGINE_COUNT
        case 41: *value = 1; break;          // UNIFIED_ADDRESSING
        case 75: *value = 9; break;          // COMPUTE_CAPABILITY_MAJOR
        case 76: *value = 0; break;          // COMPUTE_CAPABILITY_MINOR
        default: return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

API CUresult cuDevicePrimaryCtxRetain(void** ctx, CUdevice device) {
    if (!g_initialized) return CUDA_ERROR_NOT_INITIALIZED;
    if (device != 0) return CUDA_ERROR_INVALID_DEVICE;
    if (ctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(g_mutex);
    g_primary.refs++;
    *ctx = &g_primary;
    return CUDA_SUCCESS;
}

API CUresult cuDevicePrimaryCtxRelease_v2(CUdevice device) {
    if (!g_initialized) return CUDA_ERROR_NOT_INITIALIZED;
    if (device != 0) return CUDA_ERROR_INVALID_DEVICE;
    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_primary.refs == 0) return CUDA_ERROR_INVALID_CONTEXT;
    if (--g_primary.refs == 0) {
        size_t live = 0, bytes = 0;
        for (auto& [start, r] : g_regions)
            if (r.kind == Region::DEVICE) live++, bytes += r.bytes;
        if (live > 0) fprintf(stderr, "cuda-emu: primary context released with %zu device allocations (%zu bytes) not freed\n", live, bytes);
    }
    return CUDA_SUCCESS;
}

API CUresult cuCtxSetCurrent(void* ctx) {
    if (!g_initialized) return CUDA_ERROR_NOT_INITIALIZED;
    if (ctx != nullptr && ctx != &g_primary) return CUDA_ERROR_INVALID_CONTEXT;
    t_current = (Context*)ctx;
    return CUDA_SUCCESS;
}

API CUresult cuCtxGetCurrent(void** ctx) {
    if (!g_initialized) return CUDA_ERROR_NOT_INITIALIZED;
    if (ctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *ctx = t_current;
    return CUDA_SUCCESS;
}

API CUresult cuCtxSynchronize() {
    REQUIRE_READY(); // waits even on a poisoned context (then returns its error), as the driver does
    for (auto& s : streams_with(-1)) s->drain();
    return g_sticky.load();
}

// --- memory -------------------------------------------------------------------------------------------------------

API CUresult cuMemGetInfo_v2(size_t* free_bytes, size_t* total_bytes) {
    REQUIRE_CONTEXT();
    if (free_bytes == nullptr || total_bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(g_mutex);
    *total_bytes = device_bytes();
    *free_bytes = device_bytes() > g_used ? device_bytes() - g_used : 0;
    return CUDA_SUCCESS;
}

API CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytes) {
    REQUIRE_CONTEXT();
    if (dptr == nullptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
    const size_t page = page_size(), rounded = (bytes + 255) & ~(size_t)255;
    const size_t body = (rounded + page - 1) / page * page, total = body + page;
    {
        std::lock_guard<std::mutex> lock(g_mutex);
        if (g_used > device_bytes() || bytes > device_bytes() - g_used) return CUDA_ERROR_OUT_OF_MEMORY;
        g_used += bytes;
    }
    void* base = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED) {
        std::lock_guard<std::mutex> lock(g_mutex);
        g_used -= bytes;
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    mprotect((char*)base + body, page, PROT_NONE); // reading past the (256-byte rounded) end faults
    const uint64_t p = (uint64_t)((char*)base + body - rounded);
    // fresh device memory is not zeroed on a GPU: fill it with a NaN pattern so reading it before writing shows
    memset((void*)p, 0xff, rounded);
    std::lock_guard<std::mutex> lock(g_mutex);
    g_regions[p] = Region{p + rounded, Region::DEVICE, base, total, bytes, true};
    *dptr = p;
    return CUDA_SUCCESS;
}

API CUresult cuMemFree_v2(CUdeviceptr dptr) {
    REQUIRE_CONTEXT();
    if (dptr == 0) return CUDA_SUCCESS;
    cuCtxSynchronize(); // like the driver: freeing waits for work that may still use the memory
    std::lock_guard<std::mutex> lock(g_mutex);
    auto it = g_regions.find(dptr);
    if (it == g_regions.end() || it->second.kind != Region::DEVICE) return CUDA_ERROR_INVALID_VALUE;
    g_used -= it->second.bytes;
    munmap(it->second.map_base, it->second.map_bytes);
    g_regions.erase(it);
    return CUDA_SUCCESS;
}

API CUresult cuMemHostAlloc(void** pp, size_t bytes, unsigned flags) {
    REQUIRE_CONTEXT();
    if (pp == nullptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
    const size_t page = page_size(), total = (bytes + page - 1) / page * page;
    void* base = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
    std::lock_guard<std::mutex> lock(g_mutex);
    // CU_MEMHOSTALLOC_DEVICEMAP = 2; with unified addressing every pinned block is device-mapped anyway
    g_regions[(uint64_t)base] = Region{(uint64_t)base + bytes, Region::PINNED, base, total, bytes, true};
    (void)flags;
    *pp = base;
    return CUDA_SUCCESS;
}

API CUresult cuMemFreeHost(void* p) {
    REQUIRE_CONTEXT();
    cuCtxSynchronize();
    std::lock_guard<std::mutex> lock(g_mutex);
    auto it = g_regions.find((uint64_t)p);
    if (it == g_regions.end() || it->second.kind != Region::PINNED) return CUDA_ERROR_INVALID_VALUE;
    munmap(it->second.map_base, it->second.map_bytes);
    g_regions.erase(it);
    return CUDA_SUCCESS;
}

API CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr* dptr, void* p, unsigned flags) {
    REQUIRE_CONTEXT();
    if (dptr == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(g_mutex);
    const Region* r = find_region((uint64_t)p, 1);
    if (r == nullptr || r->kind == Region::DEVICE) return CUDA_ERROR_INVALID_VALUE;
    *dptr = (CUdeviceptr)p;
    return CUDA_SUCCESS;
}

API CUresult cuMemHostRegister_v2(void* p, size_t bytes, unsigned flags) {
    REQUIRE_CONTEXT();
    if (p == nullptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
    const uint64_t a = (uint64_t)p;
    std::lock_guard<std::mutex> lock(g_mutex);
    auto it = g_regions.upper_bound(a + bytes - 1);
    if (it != g_regions.begin()) {
        --it;
        if (it->second.end > a) return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    }
    // CU_MEMHOSTREGISTER_DEVICEMAP = 2 (implied under unified addressing), READ_ONLY = 8
    g_regions[a] = Region{a + bytes, Region::REGISTERED, nullptr, 0, bytes, true};
    (void)flags;
    return CUDA_SUCCESS;
}

API CUresult cuMemHostRegister(void* p, size_t bytes, unsigned flags) { return cuMemHostRegister_v2(p, bytes, flags); }

API CUresult cuMemHostUnregister(void* p) {
    REQUIRE_CONTEXT();
    cuCtxSynchronize();
    std::lock_guard<std::mutex> lock(g_mutex);
    auto it = g_regions.find((uint64_t)p);
    if (it == g_regions.end() || it->second.kind != Region::REGISTERED) return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
    g_regions.erase(it);
    return CUDA_SUCCESS;
}

API CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void* src, size_t bytes) {
    return copy(dst, (uint64_t)src, bytes, true, false, nullptr, true);
}
API CUresult cuMemcpyDtoH_v2(void* dst, CUdeviceptr src, size_t bytes) {
    return copy((uint64_t)dst, src, bytes, false, true, nullptr, true);
}
API CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void* src, size_t bytes, void* stream) {
    return copy(dst, (uint64_t)src, bytes, true, false, stream, false);
}
API CUresult cuMemcpyDtoHAsync_v2(void* dst, CUdeviceptr src, size_t bytes, void* stream) {
    return copy((uint64_t)dst, src, bytes, false, true, stream, false);
}
API CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t bytes, void* stream) {
    return copy(dst, src, bytes, true, true, stream, false);
}
API CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char v, size_t n) { return fill<unsigned char>(dst, v, n, nullptr); }
API CUresult cuMemsetD32_v2(CUdeviceptr dst, unsigned v, size_t n) { return fill<unsigned>(dst, v, n, nullptr); }
API CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char v, size_t n, void* s) { return fill<unsigned char>(dst, v, n, s); }
API CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned v, size_t n, void* s) { return fill<unsigned>(dst, v, n, s); }

// --- streams and events -------------------------------------------------------------------------------------------

API CUresult cuStreamCreate(void** stream, unsigned flags) {
    REQUIRE_CONTEXT();
    if (stream == nullptr || flags > 1) return CUDA_ERROR_INVALID_VALUE;
    auto s = std::make_shared<Stream>();
    s->flags = flags;
    std::thread(Stream::loop, s).detach();
    std::lock_guard<std::mutex> lock(g_mutex);
    g_streams[s.get()] = s;
    *stream = s.get();
    return CUDA_SUCCESS;
}

API CUresult cuStreamDestroy_v2(void* stream) {
    REQUIRE_READY();
    std::shared_ptr<Stream> s;
    {
        std::lock_guard<std::mutex> lock(g_mutex);
        auto it = g_streams.find((Stream*)stream);
        if (it == g_streams.end()) return CUDA_ERROR_INVALID_HANDLE;
        s = it->second;
        g_streams.erase(it);
    }
    // returns at once, as with the driver: queued work still runs, then the worker ends and frees the stream
    std::lock_guard<std::mutex> lock(s->m);
    s->stop = true;
    s->cv.notify_all();
    return CUDA_SUCCESS;
}

API CUresult cuStreamSynchronize(void* stream) {
    REQUIRE_READY();
    if ((uintptr_t)stream <= 2) { // the legacy stream: its own work ran synchronously; it waits for blocking streams
        for (auto& s : streams_with(0)) s->drain();
        return g_sticky.load();
    }
    std::shared_ptr<Stream> s = find_stream(stream);
    if (!s) return CUDA_ERROR_INVALID_HANDLE;
    s->drain();
    return g_sticky.load();
}

API CUresult cuEventCreate(void** event, unsigned flags) {
    REQUIRE_CONTEXT();
    if (event == nullptr) return CUDA_ERROR_INVALID_VALUE;
    Event* e = new Event();
    e->flags = flags;
    std::lock_guard<std::mutex> lock(g_mutex);
    g_events.insert(e);
    *event = e;
    return CUDA_SUCCESS;
}

static bool valid_event(Event* e) {
    std::lock_guard<std::mutex> lock(g_mutex);
    return g_events.count(e) != 0;
}

API CUresult cuEventRecord(void* event, void* stream) {
    REQUIRE_CONTEXT();
    Event* e = (Event*)event;
    if (!valid_event(e)) return CUDA_ERROR_INVALID_HANDLE;
    if ((uintptr_t)stream > 2 && !find_stream(stream)) return CUDA_ERROR_INVALID_HANDLE;
    uint64_t gen;
    {
        std::lock_guard<std::mutex> lock(e->m);
        gen = ++e->recorded;
    }
    const CUresult r = submit(stream, [e, gen] {
        std::lock_guard<std::mutex> lock(e->m);
        if (gen > e->completed) {
            e->completed = gen;
            e->millis = now_millis();
        }
        e->cv.notify_all();
    }, true);
    if (r != CUDA_SUCCESS) { // the stream went away meanwhile: do not leave the event pending for ever
        std::lock_guard<std::mutex> lock(e->m);
        if (gen > e->completed) e->completed = gen;
        e->cv.notify_all();
    }
    return r;
}

API CUresult cuEventQuery(void* event) {
    REQUIRE_CONTEXT();
    Event* e = (Event*)event;
    if (!valid_event(e)) return CUDA_ERROR_INVALID_HANDLE;
    std::lock_guard<std::mutex> lock(e->m);
    return e->completed >= e->recorded ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

API CUresult cuEventSynchronize(void* event) {
    REQUIRE_READY();
    Event* e = (Event*)event;
    if (!valid_event(e)) return CUDA_ERROR_INVALID_HANDLE;
    std::unique_lock<std::mutex> lock(e->m);
    const uint64_t target = e->recorded;
    e->waiters++;
    e->cv.wait(lock, [&] { return e->completed >= target || e->destroyed; });
    e->waiters--;
    if (e->destroyed && e->completed < target) return CUDA_ERROR_INVALID_HANDLE;
    return g_sticky.load();
}

API CUresult cuStreamWaitEvent(void* stream, void* event, unsigned flags) {
    REQUIRE_CONTEXT();
    Event* e = (Event*)event;
    if (!valid_event(e)) return CUDA_ERROR_INVALID_HANDLE;
    if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
    uint64_t target;
    {
        std::lock_guard<std::mutex> lock(e->m);
        target = e->recorded;
    }
    return submit(stream, [e, target] {
        std::unique_lock<std::mutex> lock(e->m);
        e->cv.wait(lock, [&] { return e->completed >= target; });
    }, true);
}

API CUresult cuEventElapsedTime(float* ms, void* start, void* end) {
    REQUIRE_CONTEXT();
    Event *a = (Event*)start, *b = (Event*)end;
    if (ms == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_event(a) || !valid_event(b)) return CUDA_ERROR_INVALID_HANDLE;
    if ((a->flags | b->flags) & 2) return CUDA_ERROR_INVALID_HANDLE; // CU_EVENT_DISABLE_TIMING
    std::unique_lock<std::mutex> la(a->m, std::defer_lock), lb(b->m, std::defer_lock);
    if (a == b) la.lock(); // the same event twice: one lock (elapsed time 0)
    else std::lock(la, lb);
    if (a->recorded == 0 || b->recorded == 0) return CUDA_ERROR_INVALID_HANDLE;
    if (a->completed < a->recorded || b->completed < b->recorded) return CUDA_ERROR_NOT_READY;
    *ms = (float)(b->millis - a->millis);
    return CUDA_SUCCESS;
}

API CUresult cuEventElapsedTime_v2(float* ms, void* start, void* end) { return cuEventElapsedTime(ms, start, end); }

API CUresult cuEventDestroy_v2(void* event) {
    REQUIRE_CONTEXT();
    Event* e = (Event*)event;
    {
        std::lock_guard<std::mutex> lock(g_mutex);
        if (!g_events.erase(e)) return CUDA_ERROR_INVALID_HANDLE;
    }
    // returns at once, as with the driver; the Event object is kept, so work still queued on it stays valid
    std::lock_guard<std::mutex> lock(e->m);
    if (e->waiters > 0) // undefined with the real driver: the waiting thread may crash or wait on a recycled handle
        fail(CUDA_ERROR_INVALID_HANDLE, "cuEventDestroy while another thread waits in cuEventSynchronize on it");
    e->destroyed = true;
    e->cv.notify_all();
    return CUDA_SUCCESS;
}

// --- modules and launches -----------------------------------------------------------------------------------------

API CUresult cuModuleLoadData(void** module, const void* image) {
    REQUIRE_CONTEXT();
    if (module == nullptr || image == nullptr) return CUDA_ERROR_INVALID_VALUE;
    const char* text = (const char*)image;
    if (memcmp(text, "\x7f" "ELF", 4) == 0 || *(const uint32_t*)image == 0xba55ed50u) {
        fprintf(stderr, "cuda-emu: cuModuleLoadData: only PTX text can be emulated, not a cubin or fatbin\n");
        return CUDA_ERROR_INVALID_IMAGE;
    }
    const std::string ptx(text);
    if (ptx.find(".version") == std::string::npos || ptx.find(".target") == std::string::npos) return CUDA_ERROR_INVALID_PTX;
    static const std::regex version_re(R"(\.version\s+(\d+)\.(\d+))");
    std::smatch vm;
    if (std::regex_search(ptx, vm, version_re)) {
        const int version = std::stoi(vm[1]) * 10 + std::stoi(vm[2]);
        if (version > g_max_ptx_version.load()) return CUDA_ERROR_UNSUPPORTED_PTX_VERSION; // as an older driver answers
    }
    auto* m = new Module();
    static const std::regex entry_re(R"(\.entry\s+(\w+)\s*\(([^)]*)\)([^{]*)\{)");
    static const std::regex param_re(R"(\.param\s+\.(\w+)\s+\w+)");
    static const std::regex maxntid_re(R"(\.maxntid\s+(\d+)\s*(?:,\s*(\d+))?\s*(?:,\s*(\d+))?)");
    for (auto it = std::sregex_iterator(ptx.begin(), ptx.end(), entry_re); it != std::sregex_iterator(); ++it) {
        PtxEntry e;
        const std::string params = (*it)[2], directives = (*it)[3];
        for (auto p = std::sregex_iterator(params.begin(), params.end(), param_re); p != std::sregex_iterator(); ++p)
            e.param_sizes.push_back(ptx_param_bytes((*p)[1]));
        std::smatch mx;
        if (std::regex_search(directives, mx, maxntid_re)) {
            e.max_threads = (unsigned)std::stoul(mx[1]);
            if (mx[2].matched) e.max_threads *= (unsigned)std::stoul(mx[2]);
            if (mx[3].matched) e.max_threads *= (unsigned)std::stoul(mx[3]);
        }
        m->entries[(*it)[1]] = e;
    }
    std::lock_guard<std::mutex> lock(g_mutex);
    g_modules.insert(m);
    *module = m;
    return CUDA_SUCCESS;
}

API CUresult cuModuleUnload(void* module) {
    REQUIRE_CONTEXT();
    std::lock_guard<std::mutex> lock(g_mutex);
    if (!g_modules.erase((Module*)module)) return CUDA_ERROR_INVALID_HANDLE;
    delete (Module*)module; // its Functions stay valid (they are never freed; a handful per run)
    return CUDA_SUCCESS;
}

API CUresult cuModuleGetFunction(void** function, void* module, const char* name) {
    REQUIRE_CONTEXT();
    if (function == nullptr || name == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(g_mutex);
    Module* m = (Module*)module;
    if (!g_modules.count(m)) return CUDA_ERROR_INVALID_HANDLE;
    auto e = m->entries.find(name);
    if (e == m->entries.end()) return CUDA_ERROR_NOT_FOUND;
    const emu::KernelEntry* k = nullptr;
    for (const emu::KernelEntry& c : emu::kernels())
        if (strcmp(c.name, name) == 0) k = &c;
    if (k == nullptr) {
        fprintf(stderr, "cuda-emu: the PTX declares %s but the emulator has no kernel of that name (rebuild it)\n", name);
        return CUDA_ERROR_NOT_FOUND;
    }
    if (k->param_sizes != e->second.param_sizes) {
        fprintf(stderr, "cuda-emu: %s: the PTX parameter list does not match the kernel source (stale PTX?)\n", name);
        return CUDA_ERROR_INVALID_PTX;
    }
    *function = new Function{name, k, e->second.max_threads};
    return CUDA_SUCCESS;
}

API CUresult cuLaunchKernel(void* function, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                            unsigned shared_bytes, void* stream, void** params, void** extra) {
    REQUIRE_CONTEXT();
    const Function* f = (const Function*)function;
    if (f == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    if (extra != nullptr) {
        fprintf(stderr, "cuda-emu: %s: kernel arguments through 'extra' are not emulated\n", f->name.c_str());
        return CUDA_ERROR_INVALID_VALUE;
    }
    const unsigned long long threads = (unsigned long long)bx * by * bz;
    if (gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0 || bx > 1024 || by > 1024 || bz > 64 || threads > 1024 ||
        gx > 2147483647u || gy > 65535 || gz > 65535 || shared_bytes > 49152) {
        fprintf(stderr, "cuda-emu: %s: invalid launch configuration grid (%u,%u,%u) block (%u,%u,%u) shared %u\n", f->name.c_str(), gx, gy,
                gz, bx, by, bz, shared_bytes);
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (f->max_threads != 0 && threads > f->max_threads) {
        fprintf(stderr, "cuda-emu: %s: %llu threads per block exceed its .maxntid %u\n", f->name.c_str(), threads, f->max_threads);
        return CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
    }
    const std::vector<size_t>& sizes = f->kernel->param_sizes;
    if (!sizes.empty() && params == nullptr) return CUDA_ERROR_INVALID_VALUE;
    // the driver copies the argument values at launch: the caller may free params as soon as this returns
    auto values = std::make_shared<std::vector<uint64_t>>(sizes.size());
    for (size_t i = 0; i < sizes.size(); i++) {
        memcpy(&(*values)[i], params[i], sizes[i]);
        const uint64_t p = (*values)[i];
        if (f->kernel->pointer_params[i] && p != 0 && !emu::device_accessible(p, 1)) { // would fault on the GPU
            fprintf(stderr, "cuda-emu: %s: argument %zu (0x%llx) is not device-accessible memory\n", f->name.c_str(), i, (unsigned long long)p);
            return CUDA_ERROR_INVALID_VALUE;
        }
    }
    const emu_dim3 grid{gx, gy, gz}, block{bx, by, bz};
    return submit(stream, [f, values, grid, block] {
        if (g_sticky.load() != CUDA_SUCCESS) return; // a poisoned context runs nothing more
        std::vector<void*> args(values->size());
        for (size_t i = 0; i < args.size(); i++) args[i] = &(*values)[i];
        const std::function<void()> body = [&] { f->kernel->invoke(args.data()); };
        emu::grid_dim = grid;
        emu::block_dim = block;
        for (unsigned z = 0; z < grid.z; z++)
            for (unsigned y = 0; y < grid.y; y++)
                for (unsigned x = 0; x < grid.x; x++) {
                    emu::block_idx = emu_dim3{x, y, z};
                    const std::string error = emu::run_block(body, block);
                    if (!error.empty()) {
                        fail(CUDA_ERROR_LAUNCH_FAILED, f->name + " block (" + std::to_string(x) + "," + std::to_string(y) + "," +
                                                           std::to_string(z) + "): " + error);
                        return;
                    }
                }
    });
}

// --- errors -------------------------------------------------------------------------------------------------------

namespace {
struct ErrorText {
    CUresult code;
    const char* name;
    const char* text;
};
const ErrorText ERRORS[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_INVALID_PTX, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch"},
    {CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED",
     "part or all of the requested memory range is already mapped"},
    {CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED", "pointer does not correspond to a registered memory region"},
    {CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {CUDA_ERROR_UNSUPPORTED_PTX_VERSION, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION", "the provided PTX was compiled with an unsupported toolchain."},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};
} // namespace

API CUresult cuGetErrorName(CUresult code, const char** name) {
    if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
    for (const ErrorText& e : ERRORS)
        if (e.code == code) { *name = e.name; return CUDA_SUCCESS; }
    *name = nullptr;
    return CUDA_ERROR_INVALID_VALUE;
}

API CUresult cuGetErrorString(CUresult code, const char** text) {
    if (text == nullptr) return CUDA_ERROR_INVALID_VALUE;
    for (const ErrorText& e : ERRORS)
        if (e.code == code) { *text = e.text; return CUDA_SUCCESS; }
    *text = nullptr;
    return CUDA_ERROR_INVALID_VALUE;
}

/** Emulator-only: device bytes currently allocated (tests use it to find leaks). */
API size_t cuemuDeviceBytesInUse() {
    std::lock_guard<std::mutex> lock(g_mutex);
    return g_used;
}

/** Emulator-internal: runs fn(arg) on a stream (cuBLAS work). */
API CUresult cuemuSubmit(void* stream, void (*fn)(void*), void* arg) {
    REQUIRE_CONTEXT();
    return submit(stream, [fn, arg] { fn(arg); });
}

/**
 * Emulator-only: the newest PTX ISA version (times ten, e.g. 78 for 7.8) cuModuleLoadData accepts, as a driver of
 * an older CUDA release would; returns the previous value. Tests use it for the "driver too old" path.
 */
API int cuemuSetMaxPtxVersion(int version) { return g_max_ptx_version.exchange(version); }

/** Emulator-only: clears a failed launch's sticky error, so a test can provoke one and go on. */
API void cuemuClearError() {
    g_sticky.store(CUDA_SUCCESS);
}

/** Emulator-only: bytes kernels have read through __ldg so far (weights and inputs), to check what sparsity saves. */
API unsigned long long cuemuLoadedBytes() { return emu::ldg_bytes.load(); }

/** Emulator-only: the device's memory size in bytes from now on (a small card for out-of-memory tests); returns the old. */
API size_t cuemuSetDeviceMemory(size_t bytes) { return g_device_bytes.exchange(bytes); }
