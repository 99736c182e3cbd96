#!/usr/bin/env bash
# Builds PowerInfer's own CPU binary (`main`), the peer for PWRI files, outside this repository: its source from
# POWERINFER_SRC (a checkout) or a clone of github.com/SJTU-IPADS/PowerInfer, built in
# ${POWERINFER_HOME:-$HOME/.cache/powerinfer4j/powerinfer} with cmake (Release, no CUDA; PowerInfer's LLAMA_NATIVE
# default). A second run only checks the binary. Prints the path of `main` on its last line.
# Usage: bench/powerinfer/build.sh [-j N]
set -euo pipefail
HOME_DIR="${POWERINFER_HOME:-$HOME/.cache/powerinfer4j/powerinfer}"
SRC="${POWERINFER_SRC:-$HOME_DIR/src}"
OUT="$HOME_DIR/build"
JOBS=2
[[ "${1:-}" == "-j" && -n "${2:-}" ]] && JOBS="$2"
for tool in git cmake g++; do command -v "$tool" >/dev/null || { echo "bench/powerinfer/build.sh: skipped, needs $tool (not on PATH)" >&2; exit 2; }; done
if [[ -x "$OUT/bin/main" ]]; then echo "$OUT/bin/main"; exit 0; fi
mkdir -p "$HOME_DIR"
if [[ ! -f "$SRC/CMakeLists.txt" ]]; then
    git clone --quiet --depth 1 https://github.com/SJTU-IPADS/PowerInfer "$SRC"
fi
# its build-info step depends on .git/index; a checkout without one (an export, a partial clone) gets it from HEAD
[[ -d "$SRC/.git" && ! -f "$SRC/.git/index" ]] && git -C "$SRC" read-tree HEAD
echo "building PowerInfer $(git -C "$SRC" rev-parse --short HEAD 2>/dev/null || echo '(no git)') in $OUT with $JOBS jobs (a few minutes)" >&2
cmake -S "$SRC" -B "$OUT" -DCMAKE_BUILD_TYPE=Release -DLLAMA_CUBLAS=OFF >"$HOME_DIR/cmake-configure.log" 2>&1 \
    || { tail -n 20 "$HOME_DIR/cmake-configure.log" >&2; exit 1; }
cmake --build "$OUT" --target main -j "$JOBS" >"$HOME_DIR/cmake-build.log" 2>&1 || { tail -n 20 "$HOME_DIR/cmake-build.log" >&2; exit 1; }
echo "$OUT/bin/main"
