#!/usr/bin/env bash
# gpu-session-dry.sh BUILD COUNTS — tools/gpu-session.sh, the script a lent
# GPU session runs, run here on the kernels' CPU emulator (build/specula-emu,
# build/emu/gpucheck) with small sizes, without compute-sanitizer and the
# peer, so that a session with a GPU never meets a broken script: every step
# must pass. Writes "passed failed skipped" to COUNTS. Its steps are limited
# in CPU time (build/tests/within), so a loaded machine only makes it slower.
set -u
build=${1:-build}
counts=${2:-/dev/null}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/specula-gpu-session-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
if [ ! -f models/tiny-shakespeare/model.safetensors ]; then
    echo "gpu-session-dry: skipped: models/tiny-shakespeare has no weights here"
    echo "0 0 1" >"$counts"
    exit 0
fi
"$build/genmodel" --quiet --preset micro-tied --seed 5 "$tmp/mt" || { echo "gpu-session-dry: genmodel failed"; exit 1; }
OUT=$tmp/out GPU_SESSION_ENGINE=$build/specula-emu GPU_SESSION_GPUCHECK=$build/emu/gpucheck \
    GPU_SESSION_SYNTHETIC=$tmp/mt GPU_SESSION_CONTEXTS=8 \
    GPU_SESSION_RUNS=1 GPU_SESSION_TOKENS=4 GPU_SESSION_GREEDY_TOKENS=4 GPU_SESSION_LOGIT_TOKENS=20 \
    GPU_SESSION_BENCH_RUNS=1 GPU_SESSION_COUPLING_SEEDS=1 GPU_SESSION_BATCHES=2 GPU_SESSION_BATCH_ROUNDS=1 \
    GPU_SESSION_BATCH_MODEL=$tmp/mt \
    GPU_SESSION_PEER=0 GPU_SESSION_WITHIN=$build/tests/within \
    tools/gpu-session.sh >"$tmp/log" 2>&1
rc=$?
fail=0
# expect WHAT COMMAND...: one thing the run must show, named when it does not
expect() {
    "${@:2}" >/dev/null 2>&1 || { echo "FAIL gpu-session-dry: $1"; fail=1; }
}
expect "exit 0 (it was $rc)" [ $rc -eq 0 ]
# the plan's estimates fit the 8 minutes, and what comes back from $OUT fits its 8 files
planned=$(sed -n 's/^plan: estimates add up to \([0-9]*\) s.*/\1/p' "$tmp/log")
expect "a plan whose estimates fit 480 s (${planned:-none printed})" [ "${planned:-999}" -le 480 ]
expect "at most 8 files under \$OUT" [ "$(find "$tmp/out" -type f | wc -l)" -le 8 ]
for f in device.txt kernels.tsv kernels.txt engine.txt speed.txt; do expect "\$OUT/$f written" [ -s "$tmp/out/$f" ]; done
for line in "== kernels:graph: exit 0" "cuda vs reference: 10240 logits" "verify tree, 64 nodes" "the same, no CUDA graph" \
    "sampled tokens, cuda beside cpu: . of 3 runs" "   2 mtp "; do
    expect "the line '$line'" grep -q "$line" "$tmp/log"
done
[ $fail -eq 0 ] || grep "== \|FAIL\|error\|rror:" "$tmp/log" | tail -20
pass=$((1 - fail))
echo "gpu-session-dry: $pass passed, $fail failed"
echo "$pass $fail 0" >"$counts"
[ $fail -eq 0 ]
