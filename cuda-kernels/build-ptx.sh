#!/usr/bin/env bash
# Builds and checks the PTX of the CUDA kernels (src/main/cuda/*.cu).
#
#   build-ptx.sh check [OUTDIR]   regenerate the PTX into OUTDIR (default target/ptx) and fail if it differs from the
#                                 committed PTX under src/main/resources/org/powerinfer4j/kernels/ (Maven runs this
#                                 in generate-resources); validate every committed PTX with ptxas -arch=sm_90.
#   build-ptx.sh refresh          regenerate the committed PTX (run after editing a .cu file, then commit the .ptx).
#
# Tools are looked up on PATH, then under $CUDA_HOME, $CUDA_PATH and /usr/local/cuda; NVCC=path / PTXAS=path pick them
# explicitly, NVCC=none / PTXAS=none disable them. Without nvcc the comparison is
# skipped; without ptxas the validation is skipped; with neither, one line is printed and the build goes on (CI
# machines without CUDA build from the committed PTX).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
src="$here/src/main/cuda"
res="$here/src/main/resources/org/powerinfer4j/kernels"
mode="${1:-check}"
out="${2:-$here/target/ptx}"
# compute_75 PTX: the oldest target CUDA 13 supports; the driver JIT-compiles it for the GPU at hand (sm_90 on H100/H200).
# The declared PTX ISA version is then lowered as far as ptxas allows (lower_ptx_version), for older drivers.
# No -lineinfo/-G: they embed source paths, and the PTX must not depend on where the tree is checked out.
nvcc_flags=(-ptx -arch=compute_75 -O3 -std=c++17)
ptxas_arch=sm_90

find_tool() {
    local t="$1" d
    if command -v "$t" >/dev/null 2>&1; then command -v "$t"; return 0; fi
    for d in "${CUDA_HOME:-}" "${CUDA_PATH:-}" /usr/local/cuda; do
        if [[ -n "$d" && -x "$d/bin/$t" ]]; then echo "$d/bin/$t"; return 0; fi
    done
    return 1
}

pick_tool() { # $1 = override value (may be unset), $2 = tool name
    if [[ "${1-unset}" == unset ]]; then find_tool "$2" || true
    elif [[ "$1" != none && -n "$1" ]]; then echo "$1"
    fi
}
nvcc="$(pick_tool "${NVCC-unset}" nvcc)"
ptxas="$(pick_tool "${PTXAS-unset}" ptxas)"
case "$mode" in
    check|refresh) ;;
    *) echo "usage: $0 check [OUTDIR] | refresh" >&2; exit 2 ;;
esac
if [[ "$mode" == refresh && -z "$nvcc" ]]; then echo "cuda-kernels: refresh needs nvcc (not found on PATH, CUDA_HOME, CUDA_PATH or /usr/local/cuda)" >&2; exit 1; fi
if [[ -z "$nvcc" && -z "$ptxas" ]]; then
    echo "cuda-kernels: nvcc and ptxas not found; using the committed PTX unchecked"
    exit 0
fi

mkdir -p "$out"
shopt -s nullglob
failed=0
compiler_line() { grep -m1 '^// Cuda compilation tools' "$1" || true; }

# nvcc declares its own PTX ISA version (9.0 for CUDA 13), which only drivers of that release (R580+) can JIT,
# although these kernels use nothing newer than sm_75-era PTX. Declare the lowest version ptxas accepts for the
# code instead, so older drivers load it too; ptxas rejects a version below what an instruction needs.
lower_ptx_version() {
    local f="$1" v tmp
    [[ -n "$ptxas" ]] || return 0
    tmp="$(mktemp)"
    for v in 6.3 6.4 6.5 7.0 7.1 7.2 7.3 7.4 7.5 7.6 7.7 7.8 8.0 8.1 8.2 8.3 8.4 8.5 8.6 8.7 8.8; do
        sed "s/^\.version [0-9.]*$/.version $v/" "$f" > "$tmp"
        if "$ptxas" -arch=sm_75 -o /dev/null "$tmp" 2>/dev/null; then
            mv "$tmp" "$f"
            return 0
        fi
    done
    rm -f "$tmp"
}

if [[ -n "$nvcc" ]]; then
    for cu in "$src"/*.cu; do
        name="$(basename "$cu" .cu)"
        "$nvcc" "${nvcc_flags[@]}" -o "$out/$name.ptx" "$cu"
        lower_ptx_version "$out/$name.ptx"
        if [[ "$mode" == refresh ]]; then
            mkdir -p "$res"
            cp "$out/$name.ptx" "$res/$name.ptx"
            echo "cuda-kernels: refreshed $name.ptx"
            continue
        fi
        committed="$res/$name.ptx"
        if [[ ! -f "$committed" ]]; then
            echo "cuda-kernels: $name.cu has no committed PTX; run cuda-kernels/build-ptx.sh refresh and commit $committed" >&2
            failed=1
        elif [[ "$(compiler_line "$committed")" != "$(compiler_line "$out/$name.ptx")" ]]; then
            # another nvcc release emits different (equally valid) PTX: only the same compiler can be compared
            echo "cuda-kernels: $name.ptx was built by '$(compiler_line "$committed" | cut -c4-)', this nvcc is '$(compiler_line "$out/$name.ptx" | cut -c4-)'; not compared"
        elif ! cmp -s "$committed" "$out/$name.ptx"; then
            echo "cuda-kernels: committed $name.ptx is out of date with $name.cu; run cuda-kernels/build-ptx.sh refresh and commit the PTX" >&2
            failed=1
        fi
    done
    for ptx in "$res"/*.ptx; do
        name="$(basename "$ptx" .ptx)"
        if [[ ! -f "$src/$name.cu" ]]; then echo "cuda-kernels: $ptx has no source $name.cu; delete it" >&2; failed=1; fi
    done
fi

if [[ -n "$ptxas" ]]; then
    for ptx in "$res"/*.ptx; do
        name="$(basename "$ptx" .ptx)"
        if ! "$ptxas" -arch="$ptxas_arch" -o "$out/$name.$ptxas_arch.cubin" "$ptx"; then
            echo "cuda-kernels: ptxas -arch=$ptxas_arch rejected $name.ptx" >&2
            failed=1
        fi
    done
fi
[[ $failed == 0 ]] || exit 1
if [[ "$mode" == check ]]; then echo "cuda-kernels: PTX ${nvcc:+up to date}${nvcc:+${ptxas:+ and }}${ptxas:+valid for $ptxas_arch}"; fi
