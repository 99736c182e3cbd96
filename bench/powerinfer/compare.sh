#!/usr/bin/env bash
# PowerInfer4j against PowerInfer's own CPU build on one PWRI file, side by side: for each thread count and round,
# our `bench` (warm, predict mode) then PowerInfer's `main` (same prompt length and token count, --ignore-eos),
# alternating so that the machine's drift hits both. Decode is tg N / "eval time"; prefill is pp P / "prompt eval time".
# Usage: bench/powerinfer/compare.sh MODEL.powerinfer.gguf [threads ...]   (POWERINFER_MAIN: PowerInfer's main;
# default: what bench/powerinfer/build.sh built). ROUNDS (2), N (64), P (64) from the environment.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
MODEL="${1:?usage: compare.sh MODEL.powerinfer.gguf [threads ...]}"; shift
THREADS=("${@:-1}"); [[ $# -eq 0 ]] && THREADS=(1 2)
ROUNDS="${ROUNDS:-2}" N="${N:-64}" P="${P:-64}"
PI_MAIN="${POWERINFER_MAIN:-$("$HERE/build.sh" | tail -n1)}"
OURS="$HERE/../../powerinfer4j"
MODEL="$(cd "$(dirname "$MODEL")" && pwd)/$(basename "$MODEL")"
SCRATCH="$(mktemp -d)"; trap 'rm -rf "$SCRATCH"' EXIT
# a prompt of P tokens for PowerInfer: "the" repeats as one token each in llama's vocabulary
PROMPT="$(printf 'the %.0s' $(seq 2 "$P"))"
echo "| threads | round | ours pp$P t/s | PowerInfer pp$P t/s | ours tg$N t/s | PowerInfer tg$N t/s |"
echo "|---|---|---|---|---|---|"
for t in "${THREADS[@]}"; do
  for r in $(seq 1 "$ROUNDS"); do
    ours="$("$OURS" bench -m "$MODEL" -p "$P" -n "$N" -r 3 -t "$t" --sparse predict 2>/dev/null)"
    opp="$(awk -F'|' -v p="pp$P" '$10 ~ p {gsub(/ /,"",$11); split($11,a,"±"); print a[1]}' <<<"$ours")"
    otg="$(awk -F'|' -v n="tg$N" '$10 ~ n {gsub(/ /,"",$11); split($11,a,"±"); print a[1]}' <<<"$ours")"
    # PowerInfer's main writes main.log into its working directory: a scratch one, not the caller's checkout
    pi="$(cd "$SCRATCH" && "$PI_MAIN" -m "$MODEL" -n "$N" -t "$t" -p "$PROMPT" --ignore-eos 2>&1 || true)"
    ppp="$(sed -n 's/.*prompt eval time.*, *\([0-9.]*\) tokens per second.*/\1/p' <<<"$pi")"
    ptg="$(sed -n 's/.* eval time.*runs.*, *\([0-9.]*\) tokens per second.*/\1/p' <<<"$pi")"
    echo "| $t | $r | $opp | ${ppp:-?} | $otg | ${ptg:-?} |"
  done
done
