#!/usr/bin/env bash
# Installs node-llama-cpp locally into bench/node/node_modules, CPU-only and without network access at run time:
# - --omit=optional skips the CUDA/Vulkan/other-platform binary packages (hundreds of MB we never load);
#   the CPU linux-x64 prebuilt is a direct dependency in package.json, so it is still installed;
# - NODE_LLAMA_CPP_SKIP_DOWNLOAD stops the postinstall step from downloading or compiling llama.cpp
#   when no prebuilt fits, and --ignore-scripts skips that postinstall step altogether (it only downloads or
#   builds; the prebuilt binaries come from the platform package, which has no scripts).
# The benchmark script itself also passes build: "never" and skipDownload: true to getLlama().
set -euo pipefail
cd "$(dirname "$0")"
command -v node >/dev/null || { echo "install.sh: node is not installed (need Node.js >= 20)" >&2; exit 2; }
command -v npm >/dev/null || { echo "install.sh: npm is not installed" >&2; exit 2; }
export NODE_LLAMA_CPP_SKIP_DOWNLOAD=true
# npm install, not npm ci: a lock file written with --omit=optional lacks the other platforms' packages, and
# npm ci then refuses it as out of sync; the direct dependencies are pinned to exact versions in package.json
npm install --omit=optional --ignore-scripts --no-audit --no-fund
# check that the CPU prebuilt loads (no model needed); a file, not node -e: node-llama-cpp tests its binding in
# a child process started with this process's exec arguments
node llamacpp-bench.mjs --check
