#!/usr/bin/env bash
# gpu-session.sh — the one script a lent GPU session runs (no apt, no network,
# no ../shared there): each step under its own time limit, 8 minutes in all,
# every result under $OUT (at most 8 files) and build/gpu-session/.
#   1. make gpu-check: every kernel validated against its CPU twin, and timed;
#   2. the engine's CUDA backend against the reference on the embedded model:
#      the logits of a 70-token prompt (two prefill chunks, five KV blocks),
#      within the bound the emulator suite holds it to (1e-2 of the largest
#      logit), greedy tokens beside the CPU engine's, and sampled tokens
#      beside the CPU engine's seed for seed (tools/gpu-coupling.sh: the
#      runs that differ bound the total-variation distance of the laws);
#   3. specula bench --synthetic models/qwen3.8-27b: the 27B's passes on
#      random weights made on the device, the embedded model's decode on
#      the CUDA and CPU engines, and its bench --batch on the CUDA engine
#      (one pass over B sequences against a pass each);
#   4. the GPU peer: transformers with a random qwen3_5 of the same shapes.
# The engine binary: built here when the machine has the C libraries
# (pkg-config finds them), else the one `make gpu-carry` left in
# build/gpu-carry (name it in the device call's carry). Exit status: 0 every
# step passed, 1 a step failed or timed out, 2 no CUDA device, 3 no engine
# binary.
#
# A dry run without a GPU (tests/parts/gpu-session-dry.sh, in make test):
# GPU_SESSION_ENGINE=build/specula-emu skips step 1 and runs the rest on the
# kernels' CPU emulator, with the smaller sizes below set by the caller, and
# GPU_SESSION_PEER=0 leaves out the peer (no torch there), and GPU_SESSION_WITHIN makes the step limits CPU time.
set -u
cd "$(dirname "$0")/.."
dir=build/gpu-session
mkdir -p "$dir"
out=${OUT:-$dir}
mkdir -p "$out"
log=$out/session.log
exec > >(tee "$log") 2>&1
tee_pid=$!
trap 'exec >&- 2>&-; wait "$tee_pid" 2>/dev/null' EXIT
echo "== gpu-session $(date -u '+%Y-%m-%d %H:%M:%S UTC') on $(uname -n)"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
status=0

budget=${GPU_SESSION_SECONDS:-480} # the whole session: the device call gets 600 s, and a rerun must fit after

# The dry run's limits count CPU time (GPU_SESSION_WITHIN=build/tests/within): on the emulator, on a machine
# shared with other work, a step waits for a core as long as the load makes it, and there is no device time to
# save. A real session's limits are wall time out of the device's budget.
within=${GPU_SESSION_WITHIN:-}

# step NAME SECONDS COMMAND...: runs COMMAND under its limit (cut to what is left of the budget), says how it
# ended on stderr (the log), so that its stdout may go to a file
step() {
    local name=$1 limit=$2
    shift 2
    local left=$((budget - SECONDS)) t0=$SECONDS
    if [ -n "$within" ]; then
        echo "== $name (limit $limit s of CPU)" >&2
        "$within" "$limit" "$@"
    else
        [ "$limit" -gt "$left" ] && limit=$left
        if [ "$limit" -lt 5 ]; then
            echo "== $name: skipped, the session's $budget s are spent" >&2
            status=1
            return 1
        fi
        echo "== $name (limit $limit s)" >&2
        timeout --signal=KILL "$limit" "$@"
    fi
    local rc=$?
    echo "== $name: exit $rc after $((SECONDS - t0)) s" >&2
    [ $rc -eq 0 ] || status=1
    return $rc
}

synthetic=${GPU_SESSION_SYNTHETIC:-models/qwen3.8-27b} contexts=${GPU_SESSION_CONTEXTS:-1024,32768}
runs=${GPU_SESSION_RUNS:-10} tokens=${GPU_SESSION_TOKENS:-128} greedy=${GPU_SESSION_GREEDY_TOKENS:-48}
n_logits=${GPU_SESSION_LOGIT_TOKENS:-70} bench_runs=${GPU_SESSION_BENCH_RUNS:-5}
coupling_seeds=${GPU_SESSION_COUPLING_SEEDS:-10} # 60 runs: each CUDA one starts a context (~0.5 s)
batches=${GPU_SESSION_BATCHES:-1,8} batch_rounds=${GPU_SESSION_BATCH_ROUNDS:-8} # bench --batch: small, ~25 s
batch_model=${GPU_SESSION_BATCH_MODEL:-models/tiny-shakespeare} # the dry run's: micro-tied, the emulator being slow
spec=${GPU_SESSION_ENGINE:-}

# 1. the kernels (their own log, TSV and table land in $out)
if [ -z "$spec" ]; then
    OUT=$out step "gpu-check" 200 tools/gpu-check.sh build/gpu
    [ $? -eq 2 ] && { echo "gpu-session: no CUDA device"; exit 2; }
fi

# the engine
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
cudalib=$(dirname "$(dirname "$(readlink -f "$nvcc")")")/lib64
export LD_LIBRARY_PATH=$cudalib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
if [ -n "$spec" ]; then
    echo "engine: $spec (a dry run)"
elif pkg-config --exists jansson libpcre2-8 gsl libutf8proc libcrypto 2>/dev/null &&
    step "build specula-cuda" 150 make --no-print-directory -j"$(nproc)" BUILD=build/gpu WERROR= NVCC="$nvcc" \
        CUDA_ARCH="-gencode arch=compute_90,code=sm_90" build/gpu/specula-cuda; then
    spec=build/gpu/specula-cuda
elif [ -x build/gpu-carry/specula-cuda ]; then
    export LD_LIBRARY_PATH=$PWD/build/gpu-carry/lib:$LD_LIBRARY_PATH
    spec=build/gpu-carry/specula-cuda
    echo "engine: the carried build (build/gpu-carry, made by make gpu-carry)"
else
    echo "gpu-session: no engine binary: the C libraries are not here and build/gpu-carry was not carried"
    exit 3
fi

# 2. the engine against the reference
model=models/tiny-shakespeare
ids=$(python3 -c "print(','.join(str((i * 37 + 11) % 512) for i in range($n_logits)))")
step "logits: cuda" 40 "$spec" logits "$model" --backend cuda --tokens "$ids" --out "$dir/cuda.f32" &&
    step "logits: reference" 40 "$spec" logits "$model" --backend reference --tokens "$ids" --out "$dir/ref.f32" &&
    step "logits: cuda against the reference" 30 python3 - "$dir/cuda.f32" "$dir/ref.f32" <<'PY'
import sys
from array import array
a, b = array("f"), array("f")
for arr, name in ((a, sys.argv[1]), (b, sys.argv[2])):
    with open(name, "rb") as f:
        arr.frombytes(f.read())
err = max(abs(x - y) for x, y in zip(a, b)) / max(abs(y) for y in b) if len(b) else float("inf")
print(f"cuda vs reference: {len(a)} logits, largest difference {err:.3g} of the largest logit (bound 1e-2)")
sys.exit(0 if len(a) == len(b) and len(a) > 0 and err <= 1e-2 else 1)
PY
for backend in cuda cpu; do
    step "greedy text: $backend" 30 "$spec" generate --backend $backend --prompt "ROMEO:" --max-tokens "$greedy" \
        --temperature 0 >"$dir/greedy-$backend.txt" && head -4 "$dir/greedy-$backend.txt"
done
cmp -s "$dir/greedy-cuda.txt" "$dir/greedy-cpu.txt" && echo "greedy text: the same on both engines" ||
    echo "greedy text: the engines differ (bf16 KV on the GPU; not a failure by itself)"
# sampled tokens seed for seed: the device's acceptance beside the CPU engine's (a coupling: tools/gpu-coupling.sh)
step "sampled tokens: cuda beside cpu" 60 tools/gpu-coupling.sh "$spec" "$model" "$coupling_seeds" "$greedy"

# 3. speed
step "bench: synthetic $synthetic" 150 "$spec" bench --synthetic "$synthetic" --backend cuda \
    --contexts "$contexts" --runs "$runs" >"$out/synthetic-27b.txt"
cat "$out/synthetic-27b.txt"
step "bench: embedded model, cuda" 40 "$spec" bench "$model" --backend cuda --plain --runs "$bench_runs" --tokens "$tokens" \
    >"$out/embedded-bench.txt"
step "bench: embedded model, cpu" 40 "$spec" bench "$model" --backend cpu --threads "$(nproc)" --plain \
    --runs "$bench_runs" --tokens "$tokens" >>"$out/embedded-bench.txt"
# several sequences a pass (performance.md's batch section, on the GPU): at most 3 runs and 32 tokens a sequence
step "bench --batch: embedded model, cuda" 45 "$spec" bench "$batch_model" --backend cuda --batch "$batches" \
    --runs "$((bench_runs < 3 ? bench_runs : 3))" --rounds "$batch_rounds" --tokens "$((tokens < 32 ? tokens : 32))" \
    >>"$out/embedded-bench.txt"
cat "$out/embedded-bench.txt"

# 4. the peer
if [ "${GPU_SESSION_PEER:-1}" != 0 ]; then
    step "peer: transformers, random $synthetic" 150 env PYTHONUNBUFFERED=1 python3 tools/peer/gpu_transformers.py \
        "$synthetic" --tokens "$tokens" >"$out/peer-transformers.json"
    cat "$out/peer-transformers.json"
fi

echo "== gpu-session: exit $status after $SECONDS s"
exit $status
