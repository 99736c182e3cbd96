#!/usr/bin/env bash
# Builds llama.cpp natively (-DGGML_NATIVE=ON, Release, CPU only) as the benchmark peer, into bench/llamacpp/build/
# (ignored by git). The source is the git bundle that the npm package node-llama-cpp ships (llama/gitRelease.bundle,
# its llama.cpp tag in llama/llama.cpp.info.json): one pinned, known llama.cpp without a GitHub clone.
# Once built, a second run only checks the binaries and exits. Usage: bench/llamacpp/build.sh [-j N]
set -euo pipefail

NODE_LLAMA_CPP_VERSION=3.22.1          # the llama.cpp it bundles is the one the README's figures were taken with
TARGETS=(llama-bench llama-batched-bench llama-server llama-perplexity llama-quantize llama-cli)
HERE="$(cd "$(dirname "$0")" && pwd)"
WORK="$HERE/build"
SRC="$WORK/llama.cpp"
OUT="$SRC/build"
STAMP="$WORK/built.stamp"
JOBS=2
[[ "${1:-}" == "-j" && -n "${2:-}" ]] && JOBS="$2"

missing=()
for tool in git cmake g++ tar; do command -v "$tool" >/dev/null || missing+=("$tool"); done
if ((${#missing[@]})); then
    echo "bench/llamacpp/build.sh: skipped, the native llama.cpp peer needs ${missing[*]} (not found on PATH)" >&2
    exit 2
fi

# The options are part of the cache key: a stamp from other options means rebuild. No network and no optional
# libraries: no HTTPS (OpenSSL), no server UI download from Hugging Face; LLAMA_CURL is gone at this tag (a
# deprecation warning only), so it is not passed.
CMAKE_OPTS=(-DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DBUILD_SHARED_LIBS=OFF
    -DLLAMA_OPENSSL=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_UI=OFF
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON -DGGML_CCACHE=OFF)
# On a CPU that reports AMX (Sapphire Rapids and later) -march=native compiles ggml's AMX matmul, whose first
# ldtilecfg faults where the kernel or hypervisor has not enabled AMX state (a general-protection crash in
# llama-bench on these VMs); ggml's AVX-512/VNNI kernels are the peer then, as for our Vector API code.
if grep -qw amx_tile /proc/cpuinfo 2>/dev/null; then
    CMAKE_OPTS+=(-DCMAKE_C_FLAGS="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16" -DCMAKE_CXX_FLAGS="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16")
fi
# GGML_NATIVE compiles for this host's CPU: a build from another CPU (a shared cache, a moved folder) may crash here,
# so the CPU's model and feature flags are part of the key too
cpu="$( { grep -m1 '^model name' /proc/cpuinfo; grep -m1 -E '^(flags|Features)' /proc/cpuinfo; } 2>/dev/null | cksum | cut -d' ' -f1)"
key="node-llama-cpp@$NODE_LLAMA_CPP_VERSION ${CMAKE_OPTS[*]} cpu=$cpu"
if [[ -f "$STAMP" && "$(head -n1 "$STAMP")" == "$key" && -x "$OUT/bin/llama-bench" ]]; then
    echo "llama.cpp peer already built: $OUT/bin ($(sed -n 2p "$STAMP"))"
    exit 0
fi

mkdir -p "$WORK"
if [[ ! -d "$SRC/.git" ]]; then
    command -v npm >/dev/null || { echo "bench/llamacpp/build.sh: skipped, npm is needed once to fetch node-llama-cpp@$NODE_LLAMA_CPP_VERSION (the llama.cpp source bundle)" >&2; exit 2; }
    tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
    # the npm cache first (works offline), the registry otherwise
    (cd "$tmp" && { npm pack --offline --silent "node-llama-cpp@$NODE_LLAMA_CPP_VERSION" >/dev/null 2>&1 \
        || npm pack --silent "node-llama-cpp@$NODE_LLAMA_CPP_VERSION" >/dev/null; })
    tar -xzf "$tmp"/node-llama-cpp-*.tgz -C "$tmp" package/llama/gitRelease.bundle package/llama/llama.cpp.info.json
    tag="$(sed -n 's/.*"tag"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p' "$tmp/package/llama/llama.cpp.info.json")"
    [[ -n "$tag" ]] || { echo "bench/llamacpp/build.sh: no tag in llama.cpp.info.json" >&2; exit 1; }
    rm -rf "$SRC"
    git -c advice.detachedHead=false clone --quiet "$tmp/package/llama/gitRelease.bundle" "$SRC"
    # the bundle holds the tag's tree as its only commit (HEAD); check out the tag where the bundle names it
    if git -C "$SRC" rev-parse -q --verify "refs/tags/$tag" >/dev/null; then git -C "$SRC" checkout --quiet "$tag"; fi
    echo "$tag" > "$WORK/llama.cpp.tag"
fi
tag="$(cat "$WORK/llama.cpp.tag")"
commit="$(git -C "$SRC" rev-parse --short HEAD)"

# a build folder configured for another checkout's path (the folder was moved) cannot be reused by cmake
if [[ -f "$OUT/CMakeCache.txt" ]] && ! grep -qF "CMAKE_HOME_DIRECTORY:INTERNAL=$SRC" "$OUT/CMakeCache.txt"; then rm -rf "$OUT"; fi
echo "building llama.cpp $tag ($commit) natively in $OUT with $JOBS jobs (several minutes)"
cmake -S "$SRC" -B "$OUT" "${CMAKE_OPTS[@]}" >"$WORK/cmake-configure.log" 2>&1 \
    || { tail -n 20 "$WORK/cmake-configure.log" >&2; exit 1; }
# build only the targets this tag has (llama-cli and llama-server moved between examples/ and tools/ over time)
available="$(cmake --build "$OUT" --target help)"
build=()
for t in "${TARGETS[@]}"; do grep -qE "(^|[ .])$t(:|$| )" <<<"$available" && build+=("$t"); done
[[ " ${build[*]} " == *" llama-bench "* ]] || { echo "bench/llamacpp/build.sh: llama-bench is not a target at $tag" >&2; exit 1; }
cmake --build "$OUT" -j "$JOBS" --target "${build[@]}"
printf '%s\n%s\n' "$key" "llama.cpp $tag ($commit): ${build[*]}" > "$STAMP"
echo "llama.cpp peer built: $OUT/bin (${build[*]})"
