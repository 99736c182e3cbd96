#!/usr/bin/env bash
# Builds cuda-emu, a CPU stand-in for libcuda.so.1 and libcublas (src/emulator/): the kernels of src/main/cuda
# compiled as host C++ and run one fiber per CUDA thread, behind the driver and cuBLAS entry points the bindings
# call. The test suite points -Dpowerinfer4j.cuda / -Dpowerinfer4j.cublas at it, so every GPU-tagged test also runs
# on machines without a GPU (CI): the kernels' logic, the FFM argument passing, streams, events and the engine's
# GPU paths are checked everywhere, the speed only on a real GPU.
#
#   build-emulator.sh [OUTDIR]   build OUTDIR/libcuda-emu.so (default target/emulator), skipped when up to date.
#
# Needs a C++17 compiler (CXX, default g++); without one it prints one line and the emulated tests skip.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="${1:-$here/target/emulator}"
cxx="${CXX:-g++}"
if ! command -v "$cxx" >/dev/null 2>&1; then
    echo "cuda-kernels: no C++ compiler ($cxx); the GPU tests on the CPU emulator will be skipped"
    exit 0
fi
lib="$out/libcuda-emu.so"
if [[ -f "$lib" && -z "$(find "$here/src/emulator" "$here/src/main/cuda" "$here/../bindings/src/test/resources" "$here/build-emulator.sh" -type f -newer "$lib" | head -1)" ]]; then
    exit 0
fi
mkdir -p "$out/gen"
: > "$out/gen/sources.inc"
: > "$out/gen/kernels.inc"
# the engine's kernels, and the test kernels of the bindings' GPU test (compiled the same way)
for cu in "$here"/src/main/cuda/*.cu "$here"/../bindings/src/test/resources/org/powerinfer4j/bindings/cuda/*.cu; do
    echo "#include \"$cu\"" >> "$out/gen/sources.inc"
    # every extern "C" __global__ entry point (the launch-bounds attribute may sit between void and the name)
    perl -0777 -ne 'while (/extern\s+"C"\s+__global__\s+void\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?(\w+)\s*\(/g) { print "EMU_KERNEL($1)\n" }' "$cu" >> "$out/gen/kernels.inc"
done
"$cxx" -std=c++17 -O2 -g -fPIC -shared -pthread -fvisibility=hidden -fno-strict-aliasing -Wall -Wno-unknown-pragmas -Wno-unused-function \
    -I "$here/src/emulator/include" -I "$here/src/emulator" -I "$here/src/main/cuda" -I "$out/gen" \
    "$here"/src/emulator/*.cpp -o "$lib.tmp" || {
    echo "cuda-kernels: building the CPU emulator failed (C++17 compiler needed); -Dcuda.emulator.skip=true builds without it" >&2
    exit 1
}
mv "$lib.tmp" "$lib"
echo "cuda-kernels: built the CPU emulator $lib ($(wc -l < "$out/gen/kernels.inc") kernels)"
