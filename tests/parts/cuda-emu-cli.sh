#!/usr/bin/env bash
# cuda-emu-cli.sh BUILD COUNTS — `--backend cuda` from the command line:
# build/specula-emu runs the engine's CUDA backend on the kernels' CPU
# emulator, so a speculative method goes through the CUDA host path here
# (the embedded model with its draft on the same backend; the MTP module
# and Medusa's trees are tested in the suite, tests/gpu/test_engine_cuda.c),
# and so does `bench --batch` (passes over several sequences);
# a binary
# without the backend says where it is; the CPU engine's flags are refused
# with the reason. Writes "passed failed skipped" to COUNTS. (The numbers
# are checked against the reference in tests/gpu/test_engine_cuda.c.)
set -u
build=${1:-build}
counts=${2:-/dev/null}
pass=0 fail=0 skip=0
tmp=$(mktemp -d "${TMPDIR:-/tmp}/specula-cuda-emu-XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# run NAME STATUS PATTERN BINARY ARGS...: exits with STATUS and prints PATTERN (stdout and stderr together)
run() {
    local name=$1 status=$2 pattern=$3 bin=$4
    shift 4
    "$bin" "$@" >"$tmp/out" 2>&1
    local rc=$?
    if [ $rc -eq "$status" ] && grep -q -- "$pattern" "$tmp/out"; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        echo "FAIL cuda-emu-cli: $name: exit $rc, output: $(tail -3 "$tmp/out")"
    fi
}

emu=$build/specula-emu
run "a build without the backend names the one with it" 2 "build/specula-emu runs it on the CPU emulator" \
    "$build/specula" generate --backend cuda --max-tokens 2
run "--threads is the CPU engine's" 2 "only applies to --backend cpu (the CUDA backend runs on the device)" \
    "$emu" generate --backend cuda --threads 2 --max-tokens 2
run "--dtype is the CPU engine's" 2 "computes with bf16 weights" "$emu" generate --backend cuda --dtype f32 --max-tokens 2
run "--cuda-graphs is the CUDA engine's" 2 "only applies to --backend cuda" "$emu" generate --backend cpu \
    --cuda-graphs off --max-tokens 2
run "--cuda-debug is the CUDA engine's" 2 "--cuda-debug only applies to --backend cuda" "$emu" generate \
    --backend reference --cuda-debug --max-tokens 2
run "--cuda-graphs takes on or off" 2 "expects on or off, got 'maybe'" "$emu" generate --backend cuda \
    --cuda-graphs maybe --max-tokens 2

# the synthetic bench's whole path runs in gpu-session-dry.sh; here what it refuses
"$build/genmodel" --quiet --preset micro-tied --seed 5 "$tmp/mt" || { echo "cuda-emu-cli: genmodel failed"; exit 1; }
run "bench --synthetic needs the CUDA backend" 2 "made on the device: --backend cuda" "$emu" bench \
    --synthetic "$tmp/mt" --backend cpu
run "bench --synthetic refuses a context past the model's 1024 positions" 2 "past the" "$emu" bench \
    --synthetic "$tmp/mt" --contexts 1000
run "bench --synthetic without a GPU build" 2 "built without the CUDA backend" "$build/specula" bench \
    --synthetic "$tmp/mt"
# bench --batch on the CUDA backend: one pass over both sequences' nodes against a pass each, bare rounds and the
# method rows (plain, MTP), at the smallest settings (the emulator takes about a tenth of a second a pass)
run "bench --batch --backend cuda" 0 "2 mtp " "$emu" bench "$tmp/mt" --batch 2 --backend cuda --runs 1 --rounds 1 \
    --tokens 2 -k 1
run "bench --batch --backend cuda without a GPU build" 2 "built without the CUDA backend" "$build/specula" bench \
    "$tmp/mt" --batch 2 --backend cuda

if [ -f models/tiny-shakespeare/model.safetensors ]; then
    # 6 tokens each: the emulator runs a pass of the embedded model in about a tenth of a second
    for method in "spec --k 3" "mtp --k 3 --mtp-sample"; do # the MTP chain drafted on the device (engine_mtp_round.c)
        run "generate --method $method" 0 "6 tokens in" "$emu" generate --backend cuda --method $method \
            --prompt "ROMEO:" --max-tokens 6 --temperature 0.8 --seed 3
    done
    # the same greedy text with the passes as CUDA graphs, launched op by op, and in the debug mode (each launch
    # waited for; verify passes: --method spec)
    for mode in on off debug; do
        flags="--cuda-graphs $mode"
        [ $mode = debug ] && flags=--cuda-debug
        # shellcheck disable=SC2086 # the flags are words
        "$emu" generate --backend cuda $flags --method spec --k 3 --prompt "ROMEO:" --max-tokens 6 \
            --temperature 0 >"$tmp/mode-$mode" 2>&1
    done
    for mode in off debug; do
        if [ -s "$tmp/mode-on" ] && grep -q "6 tokens in" "$tmp/mode-on" &&
            [ "$(head -1 "$tmp/mode-on")" = "$(head -1 "$tmp/mode-$mode")" ]; then
            pass=$((pass + 1))
        else
            fail=$((fail + 1))
            echo "FAIL cuda-emu-cli: greedy text with graphs and with $mode: $(head -1 "$tmp/mode-on") / $(head -1 "$tmp/mode-$mode")"
        fi
    done
    # q8 and q4 KV caches (--kv-cache) on the CUDA backend: the same greedy text as the CPU engine's with the same
    # cache (the caches hold the same rows: tests/gpu/test_engine_cuda_kv.c), MTP drafting through the module's
    # cache of that format too
    for kv in q8 q4; do
        for backend in cuda cpu; do
            "$emu" generate --backend $backend --kv-cache $kv --method mtp --k 3 --prompt "ROMEO:" --max-tokens 6 \
                --temperature 0 >"$tmp/kv-$kv-$backend" 2>&1
        done
        if grep -q "6 tokens in" "$tmp/kv-$kv-cuda" && [ "$(head -1 "$tmp/kv-$kv-cuda")" = "$(head -1 "$tmp/kv-$kv-cpu")" ]; then
            pass=$((pass + 1))
        else
            fail=$((fail + 1))
            echo "FAIL cuda-emu-cli: --kv-cache $kv, greedy text on cuda and cpu: $(head -1 "$tmp/kv-$kv-cuda") / $(head -1 "$tmp/kv-$kv-cpu")"
        fi
    done
else
    skip=$((skip + 6))
    echo "cuda-emu-cli: skipped 6 runs: models/tiny-shakespeare has no weights here"
fi

echo "cuda-emu-cli: $pass passed, $fail failed, $skip skipped"
echo "$pass $fail $skip" >"$counts"
[ $fail -eq 0 ]
