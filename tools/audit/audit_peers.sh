#!/usr/bin/env bash
# audit_peers.sh BUILD [N L] — the body of `make audit-peers`: `specula
# audit` of the peers that run this project's embedded model, on top of
# what `make bench-peers` prepared under BUILD/peers (the Python
# environment, llama.cpp's source, the target's f32 GGUF), which it reads
# and never writes. Its own work goes under BUILD/peers-audit:
#   llama.cpp-build/   llama-server (cmake, CPU only; built once)
#   gguf/              the draft model converted (tools/peer/convert_gguf.py)
#   hf-pair/           two small Qwen3 models transformers runs assisted
#                      generation with (tools/audit/hf_pair.py)
#   runs/              the reports: llama-server with the draft model and
#                      with MTP (tools/audit/audit_servers.sh), transformers'
#                      plain sampling of our model against its law, and its
#                      assisted generation on the pair (tools/audit/hf_sample.py)
# N, L default to 2000 and 8 (transformers: 1500 and 8, its sampling is the
# slowest). A peer that cannot be had is skipped with the reason.
set -u
build=${1:-build}
n=${2:-2000} len=${3:-8}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root" || exit 1
peers=$build/peers
llama=$peers/src/llama_cpp_python-0.3.36/vendor/llama.cpp
vpy=$peers/venv/bin/python
target=$peers/gguf/tiny-shakespeare-f32.gguf
out=$build/peers-audit
server=$out/llama.cpp-build/bin/llama-server
draft=$out/gguf/tiny-shakespeare-draft-f32.gguf
mkdir -p "$out/runs" "$out/gguf"
say() { echo "audit-peers: $*"; }
status=0

if [ ! -d "$llama" ] || [ ! -x "$vpy" ] || [ ! -f "$target" ]; then
    say "needs what \`make bench-peers\` prepares ($llama, $vpy, $target): run it first"
    exit 4
fi
if [ ! -x "$server" ]; then
    say "building llama-server (CPU; minutes) into $out/llama.cpp-build"
    cmake -S "$llama" -B "$out/llama.cpp-build" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DLLAMA_CURL=OFF \
        -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_UI=OFF \
        >"$out/cmake-config.log" 2>&1 &&
        cmake --build "$out/llama.cpp-build" --target llama-server -j "$(nproc)" >"$out/cmake-build.log" 2>&1 ||
        say "llama-server did not build (see $out/cmake-*.log): llama.cpp skipped"
fi
if [ -x "$server" ] && [ ! -f "$draft" ]; then
    "$vpy" tools/peer/convert_gguf.py --llama-cpp "$llama" --model models/tiny-shakespeare-draft --outtype f32 \
        --out "$draft.part" --stage "$out/gguf/stage-draft" >"$out/convert-draft.log" 2>&1 &&
        mv "$draft.part" "$draft" || say "the draft did not convert (see $out/convert-draft.log)"
fi
if [ -x "$server" ] && [ -f "$draft" ]; then
    tools/audit/audit_servers.sh "$server" "$target" "$draft" "$out/runs" "$n" "$len" 0.8 || status=$?
fi

say "transformers: plain sampling against the law (it refuses assisted generation for qwen3_5; docs/audit.md)"
start=$(date -u +%FT%TZ)
"$build/specula" audit --engine-cmd "$vpy tools/audit/hf_sample.py --model models/tiny-shakespeare --threads 1" \
    --temperature 0.8 -n "$((n * 3 / 4))" --length "$len" --backend cpu --dtype f32 \
    >"$out/runs/transformers.txt" 2>"$out/runs/transformers.err"
rc=$?
echo "exit $rc, started $start, ended $(date -u +%FT%TZ)" >>"$out/runs/transformers.txt"
say "transformers: exit $rc ($out/runs/transformers.txt)"
[ $rc -le $status ] || status=$rc

# Its speculative path, on a model pair it accepts: the two-sample tests and the control (no law: the pair is not
# one of this project's checkpoints).
pair=$out/hf-pair
if [ ! -f "$pair/draft/model.safetensors" ]; then
    "$vpy" tools/audit/hf_pair.py --out "$pair" >"$out/hf-pair.log" 2>&1 || say "the model pair was not made (see $out/hf-pair.log)"
fi
if [ -f "$pair/draft/model.safetensors" ]; then
    say "transformers: assisted generation (speculative sampling) on two small Qwen3 models ($pair)"
    start=$(date -u +%FT%TZ)
    "$build/specula" audit --engine-cmd "$vpy tools/audit/hf_sample.py --model $pair/target --assistant $pair/draft --threads 1" \
        --no-law --tokens 1,2,3 --temperature 0.8 -n "$n" --length "$len" \
        >"$out/runs/transformers-assisted.txt" 2>"$out/runs/transformers-assisted.err"
    rc=$?
    echo "exit $rc, started $start, ended $(date -u +%FT%TZ)" >>"$out/runs/transformers-assisted.txt"
    say "transformers assisted: exit $rc ($out/runs/transformers-assisted.txt)"
    [ $rc -le $status ] || status=$rc
fi
exit $status
