// cuda-emu: runs one CUDA block as fibers on the calling host thread.
//
// Each CUDA thread of the block is a ucontext fiber with its own stack. A fiber runs until it reaches a scheduling
// point (__syncthreads, a warp-synchronous intrinsic, or the end of the kernel), then the scheduler runs the next
// one. When every fiber waits, the scheduler releases whatever can go on: a warp whose live lanes all wait at a warp
// intrinsic (their exchange is computed at once, so a lane that runs ahead cannot overwrite a value another lane
// still has to read), else the block barrier when every live thread waits at it. Anything else (a barrier some
// threads never reach, a warp intrinsic some lanes skip) is a deadlock on a GPU; here it is reported as an error.
//
// Switching fibers: on x86-64 a few instructions that save the callee-saved registers (swapcontext would also make
// a signal-mask system call on every switch, which dominated the run time); elsewhere ucontext.
#include "emulator.h"

#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <cstdio>
#include <mutex>
#include <cstdlib>
#include <string>
#include <vector>

thread_local emu_dim3 emu::block_idx, emu::block_dim, emu::grid_dim;
std::atomic<unsigned long long> emu::ldg_bytes{0};

namespace {

constexpr size_t STACK_BYTES = 256 * 1024;

enum class State { READY, AT_BARRIER, AT_WARP_OP, DONE };

#if defined(__x86_64__)
// emu_switch(save, next): pushes the callee-saved registers and the SSE/x87 control words, stores the stack
// pointer in *save, switches to next and pops the same from there.
extern "C" void emu_switch(void** save, void* next);
asm(R"(
    .text
    .globl emu_switch
    .hidden emu_switch
    .type emu_switch, @function
emu_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    subq $8, %rsp
    stmxcsr (%rsp)
    fnstcw 4(%rsp)
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    ldmxcsr (%rsp)
    fldcw 4(%rsp)
    addq $8, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size emu_switch, .-emu_switch
)");
struct Context {
    void* sp = nullptr;
};
#else
struct Context {
    ucontext_t uc;
};
#endif

struct Fiber {
    Context context;
    char* stack = nullptr; // STACK_BYTES plus a guard page below
    emu_dim3 index{};
    State state = State::READY;
    // the pending warp exchange
    unsigned mask = 0;
    emu::WarpOp op = emu::SHFL_XOR;
    int arg = 0, width = 32;
    uint64_t value = 0, result = 0;
};

struct Scheduler {
    Context main;
    std::vector<Fiber> fibers;
    Fiber* current = nullptr;
    const std::function<void()>* body = nullptr;
    std::string error;
};

thread_local Scheduler* scheduler = nullptr;

void switch_to(Context& save, Context& next) {
#if defined(__x86_64__)
    emu_switch(&save.sp, next.sp);
#else
    swapcontext(&save.uc, &next.uc);
#endif
}

void fiber_entry() {
    Scheduler* s = scheduler;
    (*s->body)();
    s->current->state = State::DONE;
    switch_to(s->current->context, s->main); // never resumed
    abort();
}

/** A fresh context that starts fiber_entry on the given stack. */
void start_context(Context& c, char* stack, Context& link) {
#if defined(__x86_64__)
    (void)link;
    // the frame emu_switch pops: control words, r15..rbp, then the "return address" fiber_entry, placed so that
    // fiber_entry starts with the stack alignment of a called function (rsp % 16 == 8)
    uint64_t* top = (uint64_t*)(((uintptr_t)(stack + STACK_BYTES) & ~(uintptr_t)15) - 16);
    top[1] = 0;                                // no caller above fiber_entry
    top[0] = (uint64_t)(uintptr_t)&fiber_entry; // rsp % 16 == 0 here; after ret it is 8
    uint64_t* sp = top - 7;
    for (int i = 1; i <= 6; i++) sp[i] = 0;     // r15, r14, r13, r12, rbx, rbp
    sp[0] = 0x1f80u | ((uint64_t)0x037fu << 32); // MXCSR default, x87 control word default
    c.sp = sp;
#else
    getcontext(&c.uc);
    c.uc.uc_stack.ss_sp = stack;
    c.uc.uc_stack.ss_size = STACK_BYTES;
    c.uc.uc_link = &link.uc;
    makecontext(&c.uc, fiber_entry, 0);
#endif
}

void yield(State waiting) {
    Scheduler* s = scheduler;
    Fiber* f = s->current;
    f->state = waiting;
    switch_to(f->context, s->main);
}

char* new_stack() {
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    void* p = mmap(nullptr, STACK_BYTES + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return nullptr;
    if (mprotect(p, page, PROT_NONE) != 0) { // overflow must fault instead of corrupting the neighbour's stack
        munmap(p, STACK_BYTES + page);
        return nullptr;
    }
    return (char*)p + page;
}

// Fiber stacks are pooled process-wide: a host thread (a stream's worker) borrows what its blocks need and gives
// them back when it ends, so threads that come and go do not leak mappings.
std::mutex pool_mutex;
std::vector<char*> pool;

struct BorrowedStacks {
    std::vector<char*> stacks;
    ~BorrowedStacks() {
        std::lock_guard<std::mutex> lock(pool_mutex);
        pool.insert(pool.end(), stacks.begin(), stacks.end());
    }
};

bool ensure_stacks(std::vector<char*>& stacks, size_t n) {
    while (stacks.size() < n) {
        char* s = nullptr;
        {
            std::lock_guard<std::mutex> lock(pool_mutex);
            if (!pool.empty()) {
                s = pool.back();
                pool.pop_back();
            }
        }
        if (s == nullptr) s = new_stack();
        if (s == nullptr) return false;
        stacks.push_back(s);
    }
    return true;
}

const char* op_name(emu::WarpOp op) {
    switch (op) {
        case emu::SHFL_XOR: return "__shfl_xor_sync";
        case emu::SHFL_IDX: return "__shfl_sync";
        case emu::SHFL_DOWN: return "__shfl_down_sync";
        case emu::SHFL_UP: return "__shfl_up_sync";
        default: return "__ballot_sync";
    }
}

// Computes the results of a warp exchange every live lane of [first, first+lanes) has reached. "" when done.
std::string resolve_warp(std::vector<Fiber>& f, int first, int lanes) {
    const Fiber& lead = f[first];
    for (int l = 0; l < lanes; l++) {
        const Fiber& x = f[first + l];
        if (x.state == State::DONE)
            return std::string(op_name(lead.op)) + " with exited lanes in the warp (undefined on a GPU)";
        if (x.op != lead.op) return std::string("lanes of a warp wait at different intrinsics: ") + op_name(lead.op) + " and " + op_name(x.op);
        const unsigned expected = lanes == 32 ? 0xffffffffu : ((1u << lanes) - 1u);
        if ((x.mask & expected) != expected)
            return std::string(op_name(x.op)) + " with a member mask that leaves out lanes that are running (mask " + std::to_string(x.mask) + ")";
    }
    if (lead.op == emu::BALLOT) {
        unsigned bits = 0;
        for (int l = 0; l < lanes; l++) bits |= (f[first + l].value != 0 ? 1u : 0u) << l;
        for (int l = 0; l < lanes; l++) f[first + l].result = bits;
    } else {
        for (int l = 0; l < lanes; l++) {
            Fiber& x = f[first + l];
            const int w = x.width, base = l & ~(w - 1);
            int src;
            switch (x.op) {
                case emu::SHFL_XOR: src = l ^ x.arg; break;
                case emu::SHFL_IDX: src = base + (x.arg & (w - 1)); break;
                case emu::SHFL_DOWN: src = (l - base) + x.arg < w ? l + x.arg : l; break;
                default: src = (l - base) - x.arg >= 0 ? l - x.arg : l; break;
            }
            x.result = src >= 0 && src < lanes ? f[first + src].value : x.value;
        }
    }
    for (int l = 0; l < lanes; l++) f[first + l].state = State::READY;
    return "";
}

} // namespace

const emu_dim3& emu::thread_idx() {
    if (scheduler == nullptr || scheduler->current == nullptr) {
        fprintf(stderr, "cuda-emu: threadIdx read outside a kernel\n");
        abort();
    }
    return scheduler->current->index;
}

void emu::sync_block() { yield(State::AT_BARRIER); }

void emu::misaligned_load(const void* p, size_t alignment) {
    Scheduler* s = scheduler;
    if (s == nullptr || !s->error.empty()) return;
    char buf[160];
    const emu_dim3& t = s->current->index;
    snprintf(buf, sizeof buf, "misaligned address: thread (%u,%u,%u) loads %zu-byte aligned data from %p", t.x, t.y, t.z, alignment, p);
    s->error = buf;
}

uint64_t emu::warp_exchange(unsigned mask, WarpOp op, int arg, int width, uint64_t value) {
    Fiber* f = scheduler->current;
    f->mask = mask;
    f->op = op;
    f->arg = arg;
    f->width = width <= 0 || width > 32 || (width & (width - 1)) != 0 ? 32 : width;
    f->value = value;
    yield(State::AT_WARP_OP);
    return f->result;
}

std::string emu::run_block(const std::function<void()>& body, emu_dim3 block) {
    thread_local BorrowedStacks borrowed;
    std::vector<char*>& stacks = borrowed.stacks;
    const int n = (int)(block.x * block.y * block.z);
    if (!ensure_stacks(stacks, (size_t)n)) return "no memory for the fiber stacks of a block";
    Scheduler s;
    s.body = &body;
    s.fibers.resize(n);
    for (int i = 0; i < n; i++) {
        Fiber& f = s.fibers[i];
        f.index = emu_dim3{(unsigned)i % block.x, ((unsigned)i / block.x) % block.y, (unsigned)i / (block.x * block.y)};
        start_context(f.context, stacks[i], s.main);
    }
    Scheduler* outer = scheduler;
    scheduler = &s;
    std::string error;
    for (;;) {
        for (int i = 0; i < n; i++) {
            Fiber& f = s.fibers[i];
            if (f.state != State::READY) continue;
            s.current = &f;
            switch_to(s.main, f.context);
        }
        s.current = nullptr;
        bool released = false;
        int live = 0, at_barrier = 0;
        for (int first = 0; first < n && error.empty(); first += 32) {
            const int lanes = n - first < 32 ? n - first : 32;
            int waiting = 0, done = 0;
            for (int l = 0; l < lanes; l++) {
                const State st = s.fibers[first + l].state;
                waiting += st == State::AT_WARP_OP;
                done += st == State::DONE;
                at_barrier += st == State::AT_BARRIER;
            }
            live += lanes - done;
            if (waiting > 0 && waiting + done == lanes) {
                error = resolve_warp(s.fibers, first, lanes);
                released = true;
            }
        }
        if (!error.empty()) break;
        if (released) continue;
        if (live == 0) break;
        if (at_barrier == live) {
            for (Fiber& f : s.fibers)
                if (f.state == State::AT_BARRIER) f.state = State::READY;
            continue;
        }
        error = "deadlock: " + std::to_string(at_barrier) + " of " + std::to_string(live) +
                " live threads wait at __syncthreads while the others wait at a warp intrinsic that cannot complete";
        break;
    }
    scheduler = outer;
    return error.empty() ? s.error : error;
}
