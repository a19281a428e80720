#!/usr/bin/env bash
# bench_peers.sh BUILD PYTHON [OPTIONS...] — the body of `make bench-peers`.
# Prepares everything under BUILD/peers, reusing what an earlier run left:
#   venv/                 a Python environment with torch, transformers 5.x,
#                         safetensors, sentencepiece and the vendored gguf-py
#   src/                  llama-cpp-python 0.3.36's source distribution (PyPI),
#                         which vendors llama.cpp with qwen3_5 support
#   llama.cpp-build/      llama-bench, built with cmake (CPU only)
#   models/bench/         the `bench` preset of tools/genmodel (bf16)
#   gguf/                 the checkpoints converted to GGUF
# then runs tools/peer/bench_peers.py, which measures and prints the tables
# (OPTIONS go to it; see its --help). A peer that cannot be had (no network,
# a failed build) is skipped with the reason, never the whole run.
set -u
build=${1:-build}
python=${2:-python3}
shift 2 2>/dev/null || shift $#
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root" || exit 1
peers=$build/peers
version=0.3.36
src=$peers/src/llama_cpp_python-$version
llama=$src/vendor/llama.cpp
venv=$peers/venv
vpy=$venv/bin/python
logs=$peers/logs
mkdir -p "$peers" "$logs" "$peers/gguf" "$peers/models"

say() { echo "bench-peers: $*"; }
skip_llama="" skip_hf="" # empty: available; otherwise the reason it is skipped

# ---- a Python environment of our own --------------------------------------------
if [ ! -x "$vpy" ]; then
    say "creating a virtual environment: $python -m venv $venv"
    "$python" -m venv "$venv" || { rm -rf "$venv"; }
fi
if [ ! -x "$vpy" ]; then
    skip_llama="no virtual environment ($python -m venv failed)"
    skip_hf=$skip_llama
fi

# ---- llama.cpp: the source distribution of llama-cpp-python ------------------------
if [ -z "$skip_llama" ] && [ ! -f "$llama/convert_hf_to_gguf.py" ]; then
    say "downloading llama.cpp: pip download --no-deps --no-binary :all: llama-cpp-python==$version"
    mkdir -p "$peers/src"
    if "$vpy" -m pip download --no-deps --no-binary :all: "llama-cpp-python==$version" -d "$peers/src" \
        >"$logs/pip-download.log" 2>&1; then
        say "unpacking $peers/src/llama_cpp_python-$version.tar.gz"
        tar -xzf "$peers/src/llama_cpp_python-$version.tar.gz" -C "$peers/src" || skip_llama="cannot unpack the sdist"
    else
        skip_llama="pip download failed (no network?); see $logs/pip-download.log"
    fi
fi

# ---- Python packages: the pins of tools/peer/requirements.txt, installed only when they differ -----------
if [ -x "$vpy" ]; then
    . "$here/venv.sh"
    peer_venv "$python" "$venv" "$logs/pip-install.log" | sed 's/^peer:/bench-peers:/'
    if ! "$vpy" -c "import torch; from transformers import Qwen3_5ForCausalLM" >/dev/null 2>&1; then
        skip_hf="torch and transformers 5.x cannot be imported (see $logs/pip-install.log)"
        [ -z "$skip_llama" ] && skip_llama="its converter needs torch and transformers 5.x, which cannot be imported"
    fi
    if [ -z "$skip_llama" ] && ! "$vpy" -c "import gguf, yaml, tqdm" >/dev/null 2>&1; then
        say "installing llama.cpp's gguf-py (and its requirements from PyPI): pip install $llama/gguf-py"
        "$vpy" -m pip install --progress-bar off "$llama/gguf-py" >"$logs/pip-gguf.log" 2>&1 ||
            skip_llama="pip install of gguf-py failed; see $logs/pip-gguf.log"
    fi
fi

# ---- llama-bench: CPU only, only the target we need ------------------------------
bench_bin=$peers/llama.cpp-build/bin/llama-bench
if [ -z "$skip_llama" ]; then
    if [ ! -f "$peers/llama.cpp-build/CMakeCache.txt" ]; then
        say "configuring llama.cpp (CPU only) in $peers/llama.cpp-build"
        cmake -S "$llama" -B "$peers/llama.cpp-build" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON \
            -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_TESTS=OFF \
            >"$logs/llama.cpp-configure.log" 2>&1 || skip_llama="cmake configure failed; see $logs/llama.cpp-configure.log"
    fi
fi
if [ -z "$skip_llama" ]; then
    [ -x "$bench_bin" ] || say "building llama-bench with $(nproc) jobs (about 13 min on 2 idle cores); log: $logs/llama.cpp-build.log"
    cmake --build "$peers/llama.cpp-build" --target llama-bench -j "$(nproc)" >"$logs/llama.cpp-build.log" 2>&1 ||
        skip_llama="the llama-bench build failed; see $logs/llama.cpp-build.log"
    [ -z "$skip_llama" ] && [ ! -x "$bench_bin" ] && skip_llama="the build left no $bench_bin"
fi

# ---- the bench checkpoint (rewritten when genmodel changes) --------------------------
bench_dir=$peers/models/bench
stamp=$(sha256sum "$build/genmodel" | cut -d' ' -f1)
if [ ! -f "$bench_dir/model.safetensors" ] || [ "$(cat "$bench_dir.stamp" 2>/dev/null)" != "$stamp" ]; then
    say "writing the bench checkpoint: $build/genmodel --preset bench $bench_dir"
    rm -rf "$bench_dir" "$bench_dir.stamp"
    if "$build/genmodel" --preset bench "$bench_dir"; then echo "$stamp" >"$bench_dir.stamp"; fi
fi

# ---- GGUF files (rewritten when their checkpoint is newer) ---------------------------
# convert NAME MODEL_DIR OUTTYPE [TOKENIZER]
convert() {
    local out=$peers/gguf/$1-$3.gguf
    if [ -f "$out" ] && [ "$out" -nt "$2/model.safetensors" ] && [ "$out" -nt "$here/convert_gguf.py" ]; then return 0; fi
    say "converting $2 to $out ($3)"
    rm -f "$out"
    "$vpy" "$here/convert_gguf.py" --llama-cpp "$llama" --model "$2" --outtype "$3" --out "$out.part" \
        ${4:+--tokenizer "$4"} >"$logs/convert-$1-$3.log" 2>&1 && mv "$out.part" "$out" ||
        say "conversion failed (its row is skipped); see $logs/convert-$1-$3.log"
    grep -h "^convert_gguf:" "$logs/convert-$1-$3.log" | sed 's/^/  /'
}
if [ -z "$skip_llama" ]; then
    embedded=models/tiny-shakespeare
    convert tiny-shakespeare "$embedded" bf16 # the embedded model's own dtype is bf16
    convert tiny-shakespeare "$embedded" f32  # float32, as the reference holds it
    [ -f "$bench_dir/model.safetensors" ] && convert bench "$bench_dir" bf16 "$embedded/tokenizer.json"
fi

[ -n "$skip_llama" ] && say "llama.cpp skipped: $skip_llama"
[ -n "$skip_hf" ] && say "transformers skipped: $skip_hf"
exec "$python" "$here/bench_peers.py" --build "$build" --peers "$peers" \
    --llama-bench "$bench_bin" --skip-llama "$skip_llama" --hf-python "$vpy" --skip-hf "$skip_hf" "$@"
