#!/usr/bin/env bash
# make-seeds.sh BUILD — rewrites the generated seeds of tests/fuzz/corpus/:
# a nano checkpoint (V = D = 8, two layers, made by genmodel) in three dtypes
# for safetensors, its Medusa heads for medusa_heads, its configs for config,
# and the embedded model's config.json, tokenizer.json and suggested tree.
# The hand-written seeds (argv files, texts, small trees) are left as they are.
# Seeds stay small: libFuzzer mutates faster, and the repository stays light.
set -eu
build=${1:-build}
out=tests/fuzz/corpus
tmp=$(mktemp -d "${TMPDIR:-/tmp}/specula-seeds-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
nano() { # nano DIR [genmodel options]: the checkpoint fuzz_safetensors.c's config describes
    local dir=$1
    shift
    "$build/genmodel" --quiet --vocab 8 --hidden 8 --intermediate 8 --layers 2 --layer-pattern LF --heads 2 \
        --kv-heads 1 --head-dim 8 --linear-k-heads 1 --linear-v-heads 1 --linear-k-dim 4 --linear-v-dim 4 \
        --conv-kernel 2 "$@" "$dir"
}
mkdir -p "$out"/{safetensors,config,tokenizer,encode,medusa_tree,medusa_heads,cli}
nano "$tmp/bf16" --medusa-heads 2
nano "$tmp/f32" --dtype f32 --no-mtp --medusa-heads 1 --medusa-layers 2
nano "$tmp/f16" --dtype f16 --medusa-heads 1 --medusa-shared --medusa-out "$tmp/shared.safetensors"
nano "$tmp/text" --layout text --tied
for d in bf16 f32 f16; do cp "$tmp/$d/model.safetensors" "$out/safetensors/nano-$d.safetensors"; done
cp "$tmp/bf16-medusa/medusa_heads.safetensors" "$out/medusa_heads/nano-2-heads.safetensors"
cp "$tmp/f32-medusa/medusa_heads.safetensors" "$out/medusa_heads/nano-2-layers-f32.safetensors"
cp "$tmp/shared.safetensors" "$out/medusa_heads/nano-shared-f16.safetensors"
cp "$tmp/bf16/config.json" "$out/config/nano.json"
cp "$tmp/text/config.json" "$out/config/nano-text-tied.json"
cp models/tiny-shakespeare/config.json "$out/config/tiny-shakespeare.json"
cp models/qwen3.8-27b/config.json "$out/config/qwen3.8-27b.json"
cp models/tiny-shakespeare/tokenizer.json "$out/tokenizer/tiny-shakespeare.json"
cp models/tiny-shakespeare-medusa/suggested_tree.json "$out/medusa_tree/tiny-shakespeare-suggested.json"
