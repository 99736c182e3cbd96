#!/usr/bin/env bash
# Serving side by side: our `serve` and llama-server on one GGUF file, the same -np / -t / -c, measured by the
# same client (ServeLoadBenchmark), servers alternating for ROUNDS rounds.
#   bench/serve-bench.sh MODEL.gguf [NP=8] [THREADS=2] [ROUNDS=2]
# Needs bench/target/benchmarks.jar (mvn -pl bench -am package) and the native llama.cpp build of
# bench/llamacpp/build.sh (llama-server); without it only ours is measured.
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"; source scripts/find-jdk25.sh
M=${1:?usage: bench/serve-bench.sh MODEL.gguf [NP] [THREADS] [ROUNDS]}; NP=${2:-8}; T=${3:-2}; ROUNDS=${4:-2}
LLAMA_SERVER=bench/llamacpp/build/llama.cpp/build/bin/llama-server
J="$JAVA_HOME/bin/java --add-modules jdk.incubator.vector -cp bench/target/benchmarks.jar org.powerinfer4j.bench.ServeLoadBenchmark"
wait_up() { for i in $(seq 1 240); do curl -sf "$1/health" >/dev/null 2>&1 && return 0; sleep 0.5; done; echo "server at $1 did not come up" >&2; return 1; }
streams=1,4; [ "$NP" -ge 8 ] && streams=1,4,8
for round in $(seq 1 "$ROUNDS"); do
  ./powerinfer4j serve -m "$M" -np "$NP" -t "$T" -c 2048 --port 18080 >/tmp/serve-bench-ours.log 2>&1 & P=$!
  wait_up http://127.0.0.1:18080 && $J http://127.0.0.1:18080 -np $streams -n 64 -r 2 --label "ours r$round" | tail -n +3
  kill $P; wait $P 2>/dev/null
  if [ -x "$LLAMA_SERVER" ]; then
    "$LLAMA_SERVER" -m "$M" -np "$NP" -t "$T" -c 2048 --port 18081 >/tmp/serve-bench-llama.log 2>&1 & P=$!
    wait_up http://127.0.0.1:18081 && $J http://127.0.0.1:18081 -np $streams -n 64 -r 2 --label "llama-server r$round" | tail -n +3
    kill $P; wait $P 2>/dev/null
  fi
done
