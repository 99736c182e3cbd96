#!/usr/bin/env bash
# GPU check of PowerInfer4j's CUDA side: the driver/cuBLAS bindings, the PTX kernels and CudaBackend, i.e. every
# JUnit test tagged "gpu" (they skip on machines without CUDA, so CI never runs them).
#
#   cuda-kernels/gpu-check.sh bundle   on a build machine (JDK 25 + Maven): compile, then pack cuda-kernels/gpu-bundle/ (under 64 MiB: runtime and test data gzipped)
#                                      (a jlink'd JDK 25 runtime, the classes, the test classes and test libraries; git
#                                      ignores it) for a GPU machine that has no JDK, Maven or network.
#   cuda-kernels/gpu-check.sh [run]    on the GPU machine: run the gpu-tagged tests (TAGS=all runs every test of the
#                                      bindings and engine.gpu packages) with the bundle when present, else with
#                                      Maven (-Dgroups=gpu); SANITIZE=1 runs them under compute-sanitizer memcheck.
#                                      Writes device.txt, ptxas.txt and gpu-tests.txt under $OUT (default
#                                      cuda-kernels/target/gpu-check); exit status 0 when tests ran and none failed,
#                                      1 on failures, 3 when every test was skipped (CUDA unusable). Then (BENCH=0
#                                      skips it) the decode benchmark of the GPU issue, GpuBenchmark: gpu-bench.md.
#   cuda-kernels/gpu-check.sh emulate  rehearsal on a machine without a GPU: the same run against cuda-emu (the CPU
#                                      stand-in for libcuda/libcublas, build-emulator.sh), benchmark off unless
#                                      BENCH=1. Do this before spending device time.
#
# With the device tool: run "cuda-kernels/gpu-check.sh bundle" here, then
#   run(command="bash cuda-kernels/gpu-check.sh", carry=["cuda-kernels/gpu-bundle"], timeout_s=300)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bundle="$root/cuda-kernels/gpu-bundle"
GPU_CHECK_ARCHS="gemma2 falcon-7b opt"
mode="${1:-run}"

bundle() {
    source "$root/scripts/find-jdk25.sh"
    cd "$root"
    mvn -B -q -o -pl bindings,cuda-kernels,engine -am test-compile || mvn -B -q -pl bindings,cuda-kernels,engine -am test-compile
    local cp; cp="$(mktemp)"
    mvn -B -q -o -pl engine dependency:build-classpath -Dmdep.outputFile="$cp" -Dmdep.includeScope=test \
        || mvn -B -q -pl engine dependency:build-classpath -Dmdep.outputFile="$cp" -Dmdep.includeScope=test   # the plugin's own dependencies may not be cached
    rm -rf "$bundle"
    mkdir -p "$bundle/lib"
    # test libraries; the project's own modules come from the fresh target/ folders, and libraries the GPU tests
    # do not use (proxies; Jinjava and its dependencies: chat templates) stay behind to keep the bundle small
    tr ':' '\n' < "$cp" | grep -v -e '/org/powerinfer4j/' -e '/byte-buddy' -e '/jinjava' -e '/guava' -e '/javassist' -e '/commons-lang3' -e '/failureaccess' -e '/jsoup' -e '/commons-net' -e '/re2j' -e '/jline' | while read -r jar; do cp "$jar" "$bundle/lib/"; done
    rm -f "$cp"
    local launcher; launcher="$(ls ~/.m2/repository/org/junit/platform/junit-platform-launcher/*/junit-platform-launcher-*.jar | grep "/$(basename "$bundle"/lib/junit-platform-engine-*.jar .jar | sed 's/junit-platform-engine-//')/" | head -1)"
    cp "$launcher" "$bundle/lib/"
    for m in bindings cuda-kernels engine; do
        jar --create --file "$bundle/lib/pi4j-$m.jar" -C "$m/target/classes" .
        [[ -d "$m/target/test-classes" ]] && jar --create --file "$bundle/lib/pi4j-$m-tests.jar" -C "$m/target/test-classes" .
    done
    local tmp; tmp="$(mktemp -d)"
    javac -d "$tmp" -cp "$bundle/lib/*" cuda-kernels/src/gpu-check/GpuCheck.java
    jar --create --file "$bundle/lib/gpu-check.jar" -C "$tmp" .
    rm -rf "$tmp"
    # the few test-data files the GPU tests and the benchmark read (the GPU machine has no ../shared)
    local td; td="$(cd "$root/.." && pwd)/shared/testdata"
    for f in models/stories260K.gguf models/quantized/stories260K-q4_0.gguf reference/stories260K.llamacpp.json \
             reference/stories260K-q4_0.llamacpp.json vocab/ggml-vocab-llama-spm.gguf \
             models/quantized/stories260K-q8_0.gguf models/quantized/stories260K-f16.gguf reference/stories260K-q8_0.llamacpp.json \
             reference/stories260K-f16.llamacpp.json models/quantized/rand-k-q4_k.gguf models/quantized/rand-k-q5_k.gguf \
             models/quantized/rand-k-q6_k.gguf models/quantized/rand-k-q4_k_m.gguf archs/mixtral.gguf archs/qwen3-q8_0.gguf \
             sparse/stories260K-relu.powerinfer.gguf sparse/reference.json sparse/activation_counts.json; do
        mkdir -p "$bundle/testdata/$(dirname "$f")" && cp "$td/$f" "$bundle/testdata/$f"
    done
    # three architectures' F32 models and transformers references for ArchitectureOnDeviceTest (4.7 MB; all of them
    # would break the 64 MiB carry limit): soft-caps, windows, post-norms, GeGLU; LayerNorm, parallel blocks, GELU;
    # biases, learned positions, ReLU. run() passes the list as -Dpowerinfer4j.archs.
    mkdir -p "$bundle/testdata/archs"
    for a in $GPU_CHECK_ARCHS; do cp "$td/archs/$a.gguf" "$td/archs/$a.ref.json" "$bundle/testdata/archs/"; done
    # jdk.management: SessionMemory reads the OS's memory figures through com.sun.management
    jlink --add-modules java.base,java.logging,java.management,jdk.management,jdk.incubator.vector,jdk.unsupported,jdk.zipfs \
        --strip-debug --no-header-files --no-man-pages --compress=zip-9 --output "$bundle/jre"
    # the device tool carries at most 64 MiB: the runtime and the test data travel gzipped (about 46 MB instead of
    # 72) and run() unpacks them on the GPU machine
    tar -C "$bundle" -czf "$bundle/jre.tar.gz" jre && rm -rf "$bundle/jre"
    tar -C "$bundle" -czf "$bundle/testdata.tar.gz" testdata && rm -rf "$bundle/testdata"
    local size; size="$(du -sb "$bundle" | cut -f1)"
    if (( size > 64 * 1024 * 1024 )); then echo "gpu-check: the bundle is $size bytes, over the device tool's 64 MiB carry limit" >&2; exit 1; fi
    echo "gpu-check: bundle ready in $bundle ($size bytes); carry cuda-kernels/gpu-bundle"
}

run() {
    local out="${OUT:-$root/cuda-kernels/target/gpu-check}" tags="${TAGS:-gpu}"
    mkdir -p "$out"
    { echo "== nvidia-smi"; nvidia-smi 2>&1 || echo "(nvidia-smi unavailable)"; echo "== uname"; uname -a; } > "$out/device.txt"
    local ptxas; ptxas="$(command -v ptxas || ls /usr/local/cuda/bin/ptxas 2>/dev/null || true)"
    if [[ -n "$ptxas" ]]; then
        for p in "$root"/cuda-kernels/src/main/resources/org/powerinfer4j/kernels/*.ptx; do
            echo "== $(basename "$p")"; "$ptxas" -arch=sm_90 -v -o /dev/null "$p" 2>&1 | grep -E "Compiling|Used|spill" || true
        done > "$out/ptxas.txt" 2>&1
    fi
    # cuBLAS is often only inside a Python wheel on GPU images: point the bindings at it
    if [[ -z "${POWERINFER4J_CUBLAS:-}" ]]; then
        POWERINFER4J_CUBLAS="$(find /usr/local /usr/lib /usr/lib64 /opt -maxdepth 10 \( -name 'libcublas.so.13' -o -name 'libcublas.so.12' \) 2>/dev/null | sort | head -1 || true)"
        [[ -n "$POWERINFER4J_CUBLAS" ]] && export POWERINFER4J_CUBLAS
    fi
    local sanitize=()
    if [[ "${SANITIZE:-0}" == 1 ]]; then sanitize=(compute-sanitizer --tool memcheck --leak-check full --target-processes all); fi
    # a packed bundle (jre.tar.gz, testdata.tar.gz) is unpacked beside its libraries first
    local home="$bundle"
    if [[ -f "$bundle/jre.tar.gz" ]]; then
        home="${TMPDIR:-/tmp}/pi4j-gpu-bundle"
        rm -rf "$home" && mkdir -p "$home"
        tar -C "$home" -xzf "$bundle/jre.tar.gz" && tar -C "$home" -xzf "$bundle/testdata.tar.gz" && ln -s "$bundle/lib" "$home/lib"
    fi
    set +e
    if [[ -x "$home/jre/bin/java" ]]; then
        echo "gpu-check: bundled runtime, tags '$tags', cuBLAS ${POWERINFER4J_CUBLAS:-(default search)}" | tee "$out/gpu-tests.txt"
        "${sanitize[@]}" "$home/jre/bin/java" --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED -Xmx4g \
            -Dpowerinfer4j.testdata="$home/testdata" -Dpowerinfer4j.archs="${GPU_CHECK_ARCHS// /,}" -cp "$home/lib/*" GpuCheck "$tags" 2>&1 | tee -a "$out/gpu-tests.txt"
        status=${PIPESTATUS[0]}
        if [[ "${BENCH:-1}" == 1 && $status -ne 3 ]]; then
            # decode speed: CPU dense / predict / hybrid at 100-50-25% of the FFN / all layers on the GPU (GpuBenchmark)
            timeout "${BENCH_TIMEOUT:-300}" "$home/jre/bin/java" --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED \
                -Xmx24g -Dpowerinfer4j.testdata="$home/testdata" -cp "$home/lib/*" org.powerinfer4j.engine.backend.GpuBenchmark \
                "$out" "${BENCH_MODELS:-/tmp/pi4j-models}" 2>&1 | tee "$out/gpu-bench.log" || echo "gpu-check: benchmark did not finish" | tee -a "$out/gpu-bench.log"
            # prefill: matMul GEMM rates (F16 = the cuBLAS peak), pp512 of a 1.1B shape at -ngl 23 against the CPU
            timeout "${PREFILL_TIMEOUT:-240}" "$home/jre/bin/java" --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED \
                -Xmx24g -Dpowerinfer4j.testdata="$home/testdata" -cp "$home/lib/*" org.powerinfer4j.engine.backend.GpuPrefillBenchmark \
                "$out" "${BENCH_MODELS:-/tmp/pi4j-models}" 2>&1 | tee "$out/gpu-prefill.log" || echo "gpu-check: prefill benchmark did not finish" | tee -a "$out/gpu-prefill.log"
        fi
    elif command -v mvn >/dev/null 2>&1; then
        source "$root/scripts/find-jdk25.sh"
        local groups=(-Dgroups="$tags"); [[ "$tags" == all ]] && groups=()
        (cd "$root" && mvn -B -o -pl bindings,cuda-kernels,engine -am test "${groups[@]}" -Dsurefire.failIfNoSpecifiedTests=false \
            -Dtest='org.powerinfer4j.bindings.**,org.powerinfer4j.engine.gpu.**,org.powerinfer4j.engine.backend.**') 2>&1 | tee "$out/gpu-tests.txt"
        status=${PIPESTATUS[0]}
        cat "$root"/bindings/target/surefire-reports/*.txt "$root"/engine/target/surefire-reports/*gpu*.txt >> "$out/gpu-tests.txt" 2>/dev/null
    else
        echo "gpu-check: no bundle and no Maven here; run 'cuda-kernels/gpu-check.sh bundle' on a build machine and carry cuda-kernels/gpu-bundle" | tee "$out/gpu-tests.txt"
        status=2
    fi
    set -e
    echo "gpu-check: exit status $status; results in $out"
    return "$status"
}

emulate() {
    bash "$root/cuda-kernels/build-emulator.sh"
    local emu="$root/cuda-kernels/target/emulator/libcuda-emu.so"
    [[ -f "$emu" ]] || { echo "gpu-check: cuda-emu could not be built (no C++ compiler?)" >&2; return 2; }
    POWERINFER4J_CUDA="$emu" POWERINFER4J_CUBLAS="$emu" BENCH="${BENCH:-0}" run
}

case "$mode" in
    bundle) bundle ;;
    run) run ;;
    emulate) emulate ;;
    *) echo "usage: $0 [run] | bundle | emulate" >&2; exit 2 ;;
esac
