// cuda-emu internals shared by the runtime (fibers), the kernel table, the driver API and cuBLAS.
#pragma once

#include "include/cuda_fp16.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace emu {

/** Runs one block of body on this thread, one fiber per CUDA thread; "" on success, else what went wrong. */
std::string run_block(const std::function<void()>& body, emu_dim3 block);

/** A compiled-in kernel: its name, each parameter's byte size and whether it is a pointer, and how to call it. */
struct KernelEntry {
    const char* name;
    std::vector<size_t> param_sizes;
    std::vector<bool> pointer_params;
    std::function<void(void* const* params)> invoke;
};

template <typename... A, size_t... I>
void call_kernel(void (*f)(A...), void* const* p, std::index_sequence<I...>) {
    f(*static_cast<A*>(p[I])...);
}

template <typename... A>
KernelEntry kernel_entry(const char* name, void (*f)(A...)) {
    return KernelEntry{name, {sizeof(A)...}, {std::is_pointer_v<A>...}, [f](void* const* p) { call_kernel(f, p, std::index_sequence_for<A...>{}); }};
}

/** Every kernel of src/main/cuda (kernels.cpp, from the generated list). */
const std::vector<KernelEntry>& kernels();

/** True when [p, p+bytes) lies inside one device allocation, pinned host block or registered host range. */
bool device_accessible(uint64_t p, size_t bytes);

} // namespace emu
