#!/usr/bin/env bash
# gpu-session.sh — the one script a lent GPU session runs, once: on a fresh H200 machine (no network, no apt) it
# finishes inside 8 minutes, its most valuable results first, each written under $OUT as it is produced, so a run
# cut anywhere still brings back everything before the cut. The plan below gives every step its limit and its
# estimate (docs/performance.md says what each estimate rests on); the script prints the plan first and each
# step's time against it last.
#
# Binaries: the sm_90 build `make gpu-carry` left in build/gpu-carry (specula-cuda, gpucheck and the C libraries a
# bare CUDA image lacks; name build/gpu-carry in the device call's carry); built on the machine only when a carried
# one is missing or cannot load. Exit status: 0 every step passed, 1 a step failed or ran past its limit, 2 no
# CUDA device, 3 no engine binary. Files under $OUT (8 at most come back): session.log, device.txt, kernels.tsv,
# kernels.txt, engine.txt, speed.txt, sanitizer.txt, peer.json.
#
# The dry run (tests/parts/gpu-session-dry.sh, in make test): GPU_SESSION_ENGINE=build/specula-emu and
# GPU_SESSION_GPUCHECK=build/emu/gpucheck run the steps on the kernels' CPU emulator at the small sizes the caller
# sets, without compute-sanitizer or the peer (GPU_SESSION_PEER=0); GPU_SESSION_WITHIN=build/tests/within makes the
# limits CPU time there.
set -u
cd "$(dirname "$0")/.." || exit 1
dir=build/gpu-session # scratch: what is compared, not what comes back
mkdir -p "$dir"
out=${OUT:-$dir}
mkdir -p "$out"
exec > >(tee "$out/session.log") 2>&1
tee_pid=$!
trap 'exec >&- 2>&-; wait "$tee_pid" 2>/dev/null' EXIT

# Every kernel loads when the context starts: a kernel first launched inside a stream capture (the attention
# combine, once a context passes 64 positions) would otherwise load there, which a capture may not do.
export CUDA_MODULE_LOADING=EAGER

# The plan: step, limit (s), estimate (s). Limits are guards against a hang; the estimates are what a fresh H200
# should take, and must add up to well inside the budget (the optional build and peer included). A step marked
# after-failure runs only when the step before it failed, in the time that step's successors would have used.
budget=${GPU_SESSION_SECONDS:-480}
plan="
facts 15 5
build 180 120
kernels:copy 15 4
kernels:matvec 60 15
kernels:norm 15 3
kernels:rope_kv 15 3
kernels:attention 40 10
kernels:kv_quant 20 4
kernels:deltanet 20 4
kernels:sample 25 6
kernels:graph 15 2
kernels:table 10 1
logits:cuda 20 3
debug:logits 40 5 after-failure
logits:reference 15 2
logits:compare 10 1
greedy:cuda 15 2
greedy:cpu 15 2
coupling 60 25
synthetic:graphs 120 30
debug:synthetic 90 20 after-failure
synthetic:no-graphs 60 20
sanitizer:memcheck 60 30
sanitizer:racecheck 60 40
sanitizer:synccheck 45 20
sanitizer:initcheck 45 25
embedded:cuda 30 5
embedded:cpu 30 10
embedded:batch 40 15
peer 150 60"
plan_field() { # plan_field STEP COLUMN: the step's limit (2) or estimate (3)
    awk -v s="$1" -v c="$2" '$1 == s { print $c }' <<<"$plan"
}
echo "== gpu-session $(date -u '+%Y-%m-%d %H:%M:%S UTC') on $(uname -n), budget $budget s"
awk -v b="$budget" 'NF == 3 { e += $3; if ($1 == "build") build = $3 }
    END { printf "plan: estimates add up to %d s (%d s without the fallback build) of the %d s budget\n", e, e - build, b }' <<<"$plan"
echo "plan: steps marked after-failure run only after a failure, and are not counted"

status=0
within=${GPU_SESSION_WITHIN:-} # the dry run's: limits in CPU time (a loaded machine makes a step slower, not wrong)
report=""                      # one line per step run, printed last

# step NAME FILE COMMAND...: runs COMMAND under the plan's limit for NAME (cut to what is left of the budget),
# its output appended to $out/FILE as it comes ("-": the log alone); says how it ended.
step() {
    local name=$1 file=$2
    shift 2
    local limit est left=$((budget - SECONDS)) t0=$SECONDS rc
    limit=$(plan_field "$name" 2) est=$(plan_field "$name" 3)
    [ -n "$limit" ] || { echo "gpu-session: step $name is not in the plan"; exit 1; }
    if [ -n "$within" ]; then
        echo "== $name (limit $limit s of CPU)"
        set -- "$within" "$limit" "$@"
    else
        [ "$limit" -gt "$left" ] && limit=$left
        if [ "$limit" -lt 5 ]; then
            echo "== $name: skipped, the session's $budget s are spent"
            report+="$(printf '%-22s %6s %6s  %s' "$name" "$est" - "skipped: no time left")"$'\n'
            status=1
            return 1
        fi
        echo "== $name (limit $limit s)"
        set -- timeout --signal=KILL "$limit" "$@"
    fi
    if [ "$file" = - ]; then
        "$@"
    else
        "$@" 2>&1 | tee -a "$out/$file"
        (exit "${PIPESTATUS[0]}")
    fi
    rc=$?
    local took=$((SECONDS - t0)) how="exit $rc"
    [ $rc -eq 137 ] || [ $rc -eq 124 ] && how="ran past its limit"
    echo "== $name: $how after $took s (estimate $est s)"
    report+="$(printf '%-22s %6s %6s  %s' "$name" "$est" "$took" "$how")"$'\n'
    [ $rc -eq 0 ] || status=1
    return $rc
}
# skip NAME WHY: a step this run leaves out on purpose (not a failure)
skip() {
    echo "== $1: skipped: $2"
    report+="$(printf '%-22s %6s %6s  %s' "$1" "$(plan_field "$1" 3)" - "skipped: $2")"$'\n'
}
finish() {
    echo "== gpu-session: exit $1 after $SECONDS s of the $budget s budget"
    printf '%-22s %6s %6s  %s\n' step "est s" "took s" "how it ended"
    printf '%s' "$report"
    exit "$1"
}

nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
cudabin=$(dirname "$(readlink -f "$nvcc")")
cudalib=$(dirname "$cudabin")/lib64
export LD_LIBRARY_PATH=$cudalib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PATH=$PATH:$cudabin # compute-sanitizer
dry=${GPU_SESSION_ENGINE:+1}

# ---- the binaries: carried, else built here ----------------------------------------------------------------------
carry=${GPU_SESSION_CARRY:-build/gpu-carry}
loads() { [ -x "$1" ] && ! LD_LIBRARY_PATH=$carry/lib:$LD_LIBRARY_PATH ldd "$1" 2>&1 | grep -q "not found"; }
spec="" gpucheck=""
if [ -n "$dry" ]; then
    spec=$GPU_SESSION_ENGINE
    gpucheck=${GPU_SESSION_GPUCHECK:-}
    echo "engine: $spec, gpucheck: ${gpucheck:-none} (a dry run on the emulator: no compute-sanitizer)"
    skip build "a dry run"
else
    export LD_LIBRARY_PATH=$PWD/$carry/lib:$LD_LIBRARY_PATH
    loads "$carry/specula-cuda" && spec=$carry/specula-cuda
    loads "$carry/gpucheck" && gpucheck=$carry/gpucheck
    if [ -z "$spec" ] || [ -z "$gpucheck" ]; then
        want=""
        [ -n "$gpucheck" ] || want="build/gpu/cuda/gpucheck"
        # the engine needs the C libraries' headers; gpucheck needs nvcc and a C compiler alone
        [ -n "$spec" ] || ! pkg-config --exists jansson libpcre2-8 gsl libutf8proc libcrypto 2>/dev/null ||
            want="$want build/gpu/specula-cuda"
        echo "carried: specula-cuda ${spec:-missing or not loadable}, gpucheck ${gpucheck:-missing or not loadable}"
        # shellcheck disable=SC2086 # the targets are words
        [ -n "$want" ] && step build - make --no-print-directory -j"$(nproc)" BUILD=build/gpu WERROR= NVCC="$nvcc" \
            CUDA_ARCH="-gencode arch=compute_90,code=sm_90" $want
        [ -n "$spec" ] || { [ -x build/gpu/specula-cuda ] && spec=build/gpu/specula-cuda; }
        [ -n "$gpucheck" ] || { [ -x build/gpu/cuda/gpucheck ] && gpucheck=build/gpu/cuda/gpucheck; }
    else
        skip build "the carried binaries load"
    fi
fi

# ---- 1. the machine --------------------------------------------------------------------------------------------
# (a function run by a child bash, as a step's limit needs a process: timeout(1) cannot run a shell function)
# shellcheck disable=SC2317 # reached through bash -c
facts() {
    if command -v nvidia-smi >/dev/null; then
        nvidia-smi
        nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem,power.limit --format=csv
        nvidia-smi -q -d CLOCK,PERFORMANCE | grep -v "^$"
    else
        echo "no nvidia-smi here"
    fi
    [ -n "$gpucheck" ] && "$gpucheck" --probe
    echo "nvcc: $("$nvcc" --version 2>/dev/null | tail -1); CUDA_MODULE_LOADING=$CUDA_MODULE_LOADING; $(nproc) cores"
    for b in $spec $gpucheck; do
        echo "-- ldd $b"
        ldd "$b"
    done
    true
}
export -f facts
export spec gpucheck nvcc
step facts device.txt bash -c facts
if [ -n "$gpucheck" ]; then
    "$gpucheck" --probe >/dev/null 2>&1
    [ $? -eq 4 ] && { echo "gpu-session: no CUDA device"; finish 2; }
fi

# ---- 2. the kernels at the 27B's shapes, against their CPU twins ----------------------------------------------
seed=${GPU_SESSION_SEED:-$(date +%s)}
if [ -n "$gpucheck" ]; then
    echo "gpucheck seed $seed (replay a family with: gpucheck --only FAMILY --seed $seed)"
    for fam in copy matvec norm rope_kv attention kv_quant deltanet sample graph; do
        step "kernels:$fam" - "$gpucheck" --only "$fam" --seed "$seed" --results "$out/kernels.tsv"
    done
    step kernels:table kernels.txt "$gpucheck" --report "$out/kernels.tsv"
else
    for fam in copy matvec norm rope_kv attention kv_quant deltanet sample graph table; do
        skip "kernels:$fam" "no gpucheck"
    done
fi

# ---- 3. the engine on the GPU against the CPU engine -------------------------------------------------------------
[ -n "$spec" ] || { echo "gpu-session: no engine binary (not carried, and the C libraries are not here)"; finish 3; }
model=models/tiny-shakespeare
n_logits=${GPU_SESSION_LOGIT_TOKENS:-70} # two prefill chunks, five KV blocks
greedy=${GPU_SESSION_GREEDY_TOKENS:-48}
ids=$(python3 -c "print(','.join(str((i * 37 + 11) % 512) for i in range($n_logits)))")
if step logits:cuda engine.txt "$spec" logits "$model" --backend cuda --tokens "$ids" --out "$dir/cuda.f32"; then
    step logits:reference engine.txt "$spec" logits "$model" --backend reference --tokens "$ids" --out "$dir/ref.f32" &&
        step logits:compare engine.txt python3 - "$dir/cuda.f32" "$dir/ref.f32" <<'PY'
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
else # again with every launch waited for (--cuda-debug): the first kernel that failed is named, with its shape
    step debug:logits engine.txt "$spec" logits "$model" --backend cuda --cuda-debug --tokens "$ids" \
        --out "$dir/cuda.f32"
fi
for backend in cuda cpu; do
    # shellcheck disable=SC2016 # the child's own arguments
    step "greedy:$backend" - bash -c 'to=$1; shift; "$@" >"$to"' - "$dir/greedy-$backend.txt" \
        "$spec" generate --backend $backend --prompt "ROMEO:" --max-tokens "$greedy" --temperature 0
done
{
    head -4 "$dir/greedy-cuda.txt"
    cmp -s "$dir/greedy-cuda.txt" "$dir/greedy-cpu.txt" && echo "greedy text: the same on both engines" ||
        echo "greedy text: the engines differ (bf16 KV on the GPU; not a failure by itself)"
} 2>&1 | tee -a "$out/engine.txt"
# sampled tokens seed for seed: the device's acceptance beside the CPU engine's (a coupling: tools/gpu-coupling.sh)
step coupling engine.txt tools/gpu-coupling.sh "$spec" "$model" "${GPU_SESSION_COUPLING_SEEDS:-6}" "$greedy"

# ---- 4. the synthetic 27B's passes: decode, verify k+1 = 4, a 64-node tree, with and without graphs -------------
synthetic=${GPU_SESSION_SYNTHETIC:-models/qwen3.8-27b}
contexts=${GPU_SESSION_CONTEXTS:-1024,32768}
runs=${GPU_SESSION_RUNS:-10}
step synthetic:graphs speed.txt "$spec" bench --synthetic "$synthetic" --backend cuda --contexts "$contexts" \
    --runs "$runs" ||
    step debug:synthetic speed.txt "$spec" bench --synthetic "$synthetic" --backend cuda --cuda-debug \
        --contexts "${contexts%%,*}" --runs 1
step synthetic:no-graphs speed.txt "$spec" bench --synthetic "$synthetic" --backend cuda --cuda-graphs off \
    --contexts "${contexts%%,*}" --runs "$runs"

# ---- 5. compute-sanitizer over gpucheck's validations on small shapes ---------------------------------------------
if [ -n "$gpucheck" ] && [ -z "$dry" ] && command -v compute-sanitizer >/dev/null; then
    for tool in memcheck racecheck synccheck initcheck; do
        step "sanitizer:$tool" sanitizer.txt compute-sanitizer --tool "$tool" --error-exitcode 1 --print-limit 20 \
            "$gpucheck" --small --validate-only --seed "$seed"
    done
else
    why="no compute-sanitizer"
    [ -n "$dry" ] && why="a dry run"
    [ -n "$gpucheck" ] || why="no gpucheck"
    for tool in memcheck racecheck synccheck initcheck; do skip "sanitizer:$tool" "$why"; done
fi

# ---- 6. the embedded model's speed on both engines, several sequences a pass ------------------------------------
tokens=${GPU_SESSION_TOKENS:-128}
bench_runs=${GPU_SESSION_BENCH_RUNS:-5}
step embedded:cuda speed.txt "$spec" bench "$model" --backend cuda --plain --runs "$bench_runs" --tokens "$tokens"
step embedded:cpu speed.txt "$spec" bench "$model" --backend cpu --threads "$(nproc)" --plain --runs "$bench_runs" \
    --tokens "$tokens"
# at most 3 runs and 32 tokens a sequence; the dry run's model is micro-tied, the emulator being slow
step embedded:batch speed.txt "$spec" bench "${GPU_SESSION_BATCH_MODEL:-$model}" --backend cuda \
    --batch "${GPU_SESSION_BATCHES:-1,8}" --runs "$((bench_runs < 3 ? bench_runs : 3))" \
    --rounds "${GPU_SESSION_BATCH_ROUNDS:-8}" --tokens "$((tokens < 32 ? tokens : 32))"

# ---- 7. the peer, last and optional: transformers with a random qwen3_5 of the same shapes ----------------------
if [ "${GPU_SESSION_PEER:-1}" != 0 ]; then
    step peer peer.json env PYTHONUNBUFFERED=1 python3 tools/peer/gpu_transformers.py "$synthetic" --tokens "$tokens"
else
    skip peer "GPU_SESSION_PEER=0"
fi
finish $status
