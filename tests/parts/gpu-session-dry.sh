#!/usr/bin/env bash
# gpu-session-dry.sh BUILD COUNTS — tools/gpu-session.sh, the script a lent
# GPU session runs, run here on the kernels' CPU emulator (build/specula-emu)
# with small sizes and without its peer, so that a session with a GPU never
# meets a broken script: every step must pass. Writes "passed failed
# skipped" to COUNTS. Its steps are limited in CPU time (build/tests/within), so
# a loaded machine only makes it slower.
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
OUT=$tmp/out GPU_SESSION_ENGINE=$build/specula-emu GPU_SESSION_SYNTHETIC=$tmp/mt GPU_SESSION_CONTEXTS=8 \
    GPU_SESSION_RUNS=1 GPU_SESSION_TOKENS=4 GPU_SESSION_GREEDY_TOKENS=4 GPU_SESSION_LOGIT_TOKENS=20 \
    GPU_SESSION_BENCH_RUNS=1 GPU_SESSION_COUPLING_SEEDS=1 GPU_SESSION_BATCHES=2 GPU_SESSION_BATCH_ROUNDS=1 \
    GPU_SESSION_BATCH_MODEL=$tmp/mt \
    GPU_SESSION_PEER=0 GPU_SESSION_WITHIN=$build/tests/within \
    tools/gpu-session.sh >"$tmp/log" 2>&1
rc=$?
pass=0 fail=0
if [ $rc -eq 0 ] && grep -q "cuda vs reference: 10240 logits" "$tmp/log" && grep -q "verify tree, 64 nodes" "$tmp/log" &&
    grep -q "the same, no CUDA graph" "$tmp/log" &&
    grep -q "sampled tokens, cuda beside cpu: . of 3 runs" "$tmp/log" && grep -q "   2 mtp " "$tmp/log"; then
    pass=1
else
    fail=1
    echo "FAIL gpu-session-dry: exit $rc"
    grep "== \|FAIL\|error\|rror:" "$tmp/log" | tail -20
fi
echo "gpu-session-dry: $pass passed, $fail failed"
echo "$pass $fail 0" >"$counts"
[ $fail -eq 0 ]
