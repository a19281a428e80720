#!/usr/bin/env bash
# bad-input-cli.sh BUILD COUNTS — the bad-input table of docs/reliability.md:
# every row is a command given one input a user gets wrong (a missing or
# broken checkpoint, a flag out of range, flags that contradict each other)
# and must exit with status 2 (the rule of cli/commands.h; never a signal,
# never 1, which is for a run that fails after its inputs were accepted) after one line on stderr that
# contains the row's fragment, naming the file, field or flag; or, for a run that fails (a model whose
# activations overflow), with status 1 and one line naming the position. Broken
# checkpoints are made once each from one generated micro model.
# With BAD_INPUT_TABLE=FILE, also writes the rows as observed, as the
# Markdown table of the docs. Writes "passed failed skipped" to COUNTS.
set -u
build=${1:-build}
counts=${2:-/dev/null}
# The binaries under test: BAD_INPUT_SPECULA replaces both (tests/parts/bad-input-asan.sh: the sanitized build,
# which has the CUDA backend on the emulator too).
specula_main=${BAD_INPUT_SPECULA:-$build/specula} specula_emu=${BAD_INPUT_SPECULA:-$build/specula-emu}
specula=$specula_main
pass=0 fail=0 skip=0
tmp=$(mktemp -d "${TMPDIR:-/tmp}/specula-bad-input-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
table=${BAD_INPUT_TABLE:-}
[ -n "$table" ] && printf '| command | input | exit | message |\n|---|---|---|---|\n' >"$table"

# row COMMAND INPUT STATUS FRAGMENT -- ARGS...: runs `specula ARGS...`.
row() {
    local cmd=$1 input=$2 want=$3 fragment=$4
    shift 5
    # 60 s of CPU, however loaded the machine; a run that blocks (a FIFO read) is stopped after 30 s without CPU
    "$build/tests/within" 60 --stall 30 "$specula" "$@" >"${row_stdout:-$tmp/out}" 2>"$tmp/err" </dev/null
    local rc=$? lines msg
    lines=$(wc -l <"$tmp/err")
    msg=$(tail -1 "$tmp/err") # the verdict: a command that reports progress (plot) says it last
    if [ "$rc" -eq "$want" ] && [ "$lines" -eq "${row_lines:-1}" ] && grep -qF -- "$fragment" <<<"$msg"; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        echo "FAIL bad-input-cli: $cmd, $input: exit $rc (want $want), $lines lines on stderr, want '$fragment':"
        head -3 "$tmp/err" | sed 's/^/    /'
    fi
    if [ -n "$table" ]; then
        msg=${msg//$tmp/…}
        printf '| %s | %s | %s | `` %s `` |\n' "$cmd" "$input" "$rc" "${msg//|/\\|}" >>"$table"
    fi
}

# le64 N: N as 8 little-endian bytes (the safetensors header length).
le64() {
    local n=$1 i
    for i in 0 1 2 3 4 5 6 7; do
        printf "\\x$(printf %02x $(((n >> (8 * i)) & 255)))"
    done
}
# handmade DIR HEADER DATA_BYTES: DIR holds the micro config and a
# model.safetensors of this header and this many zero bytes.
handmade() {
    mkdir -p "$1" && cp "$m/config.json" "$1/"
    {
        le64 ${#2}
        printf '%s' "$2"
        head -c "$3" /dev/zero
    } >"$1/model.safetensors"
}

m=$tmp/micro
"$build/genmodel" --preset micro --quiet --medusa-heads 2 "$m"
st=$m/model.safetensors
heads=$m-medusa/medusa_heads.safetensors

mkdir -p "$tmp/empty"
cut=$tmp/cut && mkdir -p "$cut" && cp "$m/config.json" "$cut/"
head -c $(($(stat -c %s "$st") / 2)) "$st" >"$cut/model.safetensors"
handmade "$tmp/hdr-past" '{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}' 8
{ le64 4096 && head -c 100 /dev/zero; } >"$tmp/hdr-past/model.safetensors"
handmade "$tmp/hdr-huge" '{}' 0
{ le64 $((1 << 62)) && head -c 100 /dev/zero; } >"$tmp/hdr-huge/model.safetensors"
handmade "$tmp/overlap" '{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},"b":{"dtype":"F32","shape":[4],"data_offsets":[8,24]}}' 24
handmade "$tmp/overflow" '{"w":{"dtype":"F32","shape":[1099511627776,1099511627776,1099511627776],"data_offsets":[0,8]}}' 8
handmade "$tmp/dtype" '{"w":{"dtype":"Q4_K","shape":[2],"data_offsets":[0,8]}}' 8
handmade "$tmp/notjson" '{"w": [' 0
# NaN in layer 0's input norm: bf16 0x7fc0 over its first element
nan=$tmp/nan && cp -r "$m" "$nan"
hlen=$(od -An -tu8 -N8 "$st" | tr -d ' ')
norm_at=$(grep -ao '"model.language_model.layers.0.input_layernorm.weight":{[^}]*}' "$st" |
    sed 's/.*data_offsets":\[\([0-9]*\),.*/\1/')
printf '\xc0\x7f' | dd of="$nan/model.safetensors" bs=1 seek=$((8 + hlen + norm_at)) conv=notrunc status=none
# +Inf (bf16 0x7f80) as element 3 of the embedding, the first tensor
inf=$tmp/inf && cp -r "$m" "$inf"
printf '\x80\x7f' | dd of="$inf/model.safetensors" bs=1 seek=$((8 + hlen + 6)) conv=notrunc status=none
# finite weights whose activations overflow float32: layer 0's input norm at the bf16 maximum (0x7f7f) on
# every element, so every logit is NaN (a run that fails, exit 1: the inputs were valid files)
overflow() { # overflow SRC DST [TENSOR]: DST is SRC with TENSOR (default that norm) at the bf16 maximum
    local src=$1/model.safetensors name=${3:-model.language_model.layers.0.input_layernorm.weight} hl at end
    cp -r "$1" "$2"
    hl=$(od -An -tu8 -N8 "$src" | tr -d ' ')
    read -r at end < <(grep -ao "\"$name\":{[^}]*}" "$src" | sed 's/.*data_offsets":\[\([0-9]*\),\([0-9]*\)\].*/\1 \2/')
    for ((i = at; i < end; i += 2)); do printf '\x7f\x7f'; done |
        dd of="$2/model.safetensors" bs=1 seek=$((8 + hl + at)) conv=notrunc status=none
}
overflow "$m" "$tmp/overflows"
# the embedding at the bf16 maximum: the final norm's sum of squares overflows, so every logit is 0, whatever
# the input (finite: before, a uniform draw with exit 0)
overflow "$m" "$tmp/embed-overflows" model.language_model.embed_tokens.weight
# files that are not regular files: a FIFO blocks the reader until someone writes (nobody will)
fifo() { cp -r "$m" "$1" && rm -f "$1/$2" && mkfifo "$1/$2"; }
fifo "$tmp/fifo-cfg" config.json
fifo "$tmp/fifo-st" model.safetensors
fifo "$tmp/fifo-tok" tokenizer.json
mkfifo "$tmp/fifo"
fifo_shard=$tmp/fifo-shard && "$build/genmodel" --preset micro --quiet --shards 2 "$fifo_shard"
rm "$fifo_shard/model-00002-of-00002.safetensors" && mkfifo "$fifo_shard/model-00002-of-00002.safetensors"
# a config.json that gives a key twice (which one was meant?); an index that names a file outside the folder
dupkey=$tmp/dupkey && cp -r "$m" "$dupkey" && sed -i 's/"hidden_size": 32,/"hidden_size": 32, "hidden_size": 64,/' "$dupkey/config.json"
escape=$tmp/escape && "$build/genmodel" --preset micro --quiet --shards 2 "$escape"
sed -i 's|"model-00002-of-00002.safetensors"|"../../model-00002-of-00002.safetensors"|' "$escape/model.safetensors.index.json"
# a sharded checkpoint that lost a shard; heads cut in half
shards=$tmp/shards && "$build/genmodel" --preset micro --quiet --shards 2 "$shards"
rm "$shards/model-00002-of-00002.safetensors"
head -c $(($(stat -c %s "$heads") / 2)) "$heads" >"$tmp/heads-cut.safetensors"
# config.json broken in ways a user makes: not JSON, a field missing
badcfg=$tmp/badcfg && mkdir -p "$badcfg" && cp "$st" "$badcfg/" && printf '{"model_type": "qwen3_5",' >"$badcfg/config.json"
nofield=$tmp/nofield && mkdir -p "$nofield" && cp "$st" "$nofield/"
grep -v '"hidden_size": 32,' "$m/config.json" >"$nofield/config.json"
badtok=$tmp/badtok && cp -r "$m" "$badtok" && printf '{"model": {' >"$badtok/tokenizer.json"
dircfg=$tmp/dircfg && mkdir -p "$dircfg/config.json"
printf '[[0],[1],[0,0],[0,0,0]]' >"$tmp/tree3.json"
printf '[[0],[0,' >"$tmp/tree-bad.json"

g() { row generate "$@"; }
"$build/genmodel" --preset micro --head-dim 15 --quiet "$tmp/odd-heads" # q4 packs two elements a byte
gm() { # generate on the micro model: row INPUT STATUS FRAGMENT -- ARGS...
    local input=$1 want=$2 fragment=$3
    shift 4
    row generate "$input" "$want" "$fragment" -- generate --model "$m" --tokens 1,2,3 --max-tokens 4 "$@"
}

# ---- checkpoints: every command that loads one ----------------------------------------
for c in info generate logits bench; do
    case $c in
    info) args=(info) && pre=() ;;
    generate) args=(generate --tokens 1,2 --max-tokens 2 --model) && pre=() ;;
    logits) args=(logits) && pre=(--tokens 1,2) ;;
    bench) args=(bench) && pre=(--plain --runs 1 --tokens 2) ;;
    esac
    row "$c" "a folder that does not exist" 2 "$tmp/nope" -- "${args[@]}" "$tmp/nope" "${pre[@]}"
    row "$c" "a folder without config.json" 2 "$tmp/empty/config.json" -- "${args[@]}" "$tmp/empty" "${pre[@]}"
    row "$c" "config.json that is a folder" 2 "$dircfg/config.json: is a folder" -- "${args[@]}" "$dircfg" "${pre[@]}"
    row "$c" "model.safetensors cut in half" 2 "truncated" -- "${args[@]}" "$cut" "${pre[@]}"
done
i() { row info "$1" "$2" "$3" -- info "$tmp/$5"; }
# info runs the loader's checks, as generate does (it approved these, "assumed: no safetensors here")
handmade "$tmp/empty-header" '{}' 0
headdim=$tmp/headdim && cp -r "$m" "$headdim" && sed -i 's/"head_dim": 16/"head_dim": 15/' "$headdim/config.json"
i "a safetensors header {}" 2 "embed_tokens.weight: missing from the checkpoint" -- empty-header
i "head_dim 15 against the file's shapes" 2 "q_proj.weight: expected [120, 32]" -- headdim
tied=$tmp/tied-lm-head && cp -r "$m" "$tied" && sed -i 's/"tie_word_embeddings": false/"tie_word_embeddings": true/' "$tied/config.json"
i "tie_word_embeddings true beside its own lm_head.weight" 2 "\"tie_word_embeddings\": true, but the file has an lm_head.weight that is not the embedding" -- tied-lm-head
i "config.json not valid JSON" 2 "$badcfg/config.json" -- badcfg
i "config.json without hidden_size" 2 "hidden_size" -- nofield
i "header length past the end of the file" 2 "header length 4096 runs past the end of the file" -- hdr-past
i "header length 2^62" 2 "header length 4611686018427387904 runs past" -- hdr-huge
i "header not JSON" 2 "header is not valid JSON" -- notjson
i "overlapping tensors" 2 "overlap" -- overlap
i "a shape whose byte count overflows" 2 "absurd" -- overflow
i "an unknown dtype" 2 'dtype "Q4_K"' -- dtype
row generate "NaN in a weight" 2 "layers.0.input_layernorm.weight" -- generate --model "$nan" --tokens 1,2 --max-tokens 2
row bench "+Inf in a weight (the engine)" 2 "embed_tokens.weight" -- bench "$inf" --plain --runs 1 --tokens 2
row generate "a shard named in the index missing" 2 "model-00002-of-00002.safetensors" -- generate --model "$shards" --tokens 1,2 --max-tokens 2
gm "--medusa heads cut in half" 2 "$tmp/heads-cut.safetensors" -- --method medusa --medusa "$tmp/heads-cut.safetensors"
# unreadable: permissions do not stop root, so the row is skipped there
unread=$tmp/unread && cp -r "$m" "$unread" && chmod 000 "$unread/config.json"
if [ "$(id -u)" -ne 0 ]; then
    row info "config.json without read permission" 2 "$unread/config.json" -- info "$unread"
else
    skip=$((skip + 1))
    echo "SKIP bad-input-cli: config.json without read permission: running as root, which reads it anyway"
fi
row logits "NaN in a weight" 2 "layers.0.input_layernorm.weight" -- logits "$nan" --tokens 1,2

# ---- prompts -------------------------------------------------------------------------
gm "--tokens with an id past the vocabulary (32)" 2 "--tokens" -- --tokens 1,32
gm "--tokens with a negative id" 2 "--tokens" -- --tokens 1,-1
gm "--tokens not numbers" 2 "--tokens" -- --tokens 1,x
gm "--tokens empty" 2 "--tokens" -- --tokens ""
g "--prompt empty" 2 "prompt" -- generate --prompt "" --max-tokens 2
g "--prompt and --tokens" 2 "--prompt" -- generate --prompt a --tokens 1 --max-tokens 2
row generate "--prompt on a model without tokenizer.json" 2 "tokenizer.json" -- generate --model "$m" --prompt hello
gm "a prompt longer than the context (1024)" 2 "1024" -- --tokens "$(seq -s, 1 1030 | awk -F, '{for (i = 1; i <= NF; i++) $i = $i % 30 + 1} 1' OFS=,)"
gm "prompt + --max-tokens past the context" 2 "--max-tokens" -- --max-tokens 1100 --no-eos
g "a broken tokenizer.json" 2 "$badtok/tokenizer.json" -- generate --model "$badtok" --prompt hi --max-tokens 2
row logits "--tokens with an id past the vocabulary" 2 "--tokens" -- logits "$m" --tokens 1,40
row logits "no --tokens" 2 "--tokens" -- logits "$m"
row logits "--tokens longer than the context" 2 "1024" -- logits "$m" --tokens "$(seq -s, 1 1030 | awk -F, '{for (i = 1; i <= NF; i++) $i = $i % 30 + 1} 1' OFS=,)"

# ---- method flags (the same parser for generate, bench and plot) -----------------------
gm "--max-tokens 0" 2 "--max-tokens" -- --max-tokens 0
gm "--max-tokens -1" 2 "--max-tokens" -- --max-tokens -1
gm "--max-tokens 10^12" 2 "--max-tokens" -- --max-tokens 1000000000000
gm "--max-tokens without a value" 2 "--max-tokens" -- --max-tokens
gm "--k 0" 2 "--k" -- --method spec --k 0
gm "--k 1000" 2 "--k" -- --method mtp --k 1000
gm "--top-p 0" 2 "--top-p" -- --top-p 0
gm "--top-p 1.5" 2 "--top-p" -- --top-p 1.5
gm "--top-p nan" 2 "--top-p" -- --top-p nan
gm "--top-p as a hexadecimal float" 2 "--top-p expects a number in [1e-06, 1], got '0x1p-1'" -- --top-p 0x1p-1
gm "--max-tokens +2" 2 "--max-tokens expects an integer in [1, 1048576], got '+2'" -- --max-tokens +2
gm "--temperature -1" 2 "--temperature" -- --temperature -1
gm "--top-k -1" 2 "--top-k" -- --top-k -1
gm "--min-p 2" 2 "--min-p" -- --min-p 2
gm "--method unknown" 2 "--method" -- --method magic
gm "an unknown flag" 2 "--frobnicate" -- --frobnicate
gm "--stream with --method beam" 2 "--stream" -- --method beam --stream
gm "--num-return past --beams" 2 "--num-return" -- --method beam --beams 2 --num-return 3
gm "--k with --method greedy" 2 "--k" -- --method greedy --k 3
gm "--tree with --method spec" 2 "--tree" -- --method spec --tree "$tmp/tree3.json"
gm "--draft with --method mtp" 2 "--draft" -- --method mtp --draft "$m"
gm "--mtp-sample with --mtp-argmax" 2 "--mtp" -- --method mtp --mtp-sample --mtp-argmax
gm "--backend unknown" 2 "--backend" -- --backend gpu9
gm "--threads 0" 2 "--threads" -- --threads 0
gm "--threads with --backend reference" 2 "--threads" -- --backend reference --threads 2
gm "--dtype f8" 2 "--dtype" -- --dtype f8
gm "--kv-cache q3" 2 "--kv-cache expects f32, bf16, q8 or q4, got 'q3'" -- --kv-cache q3
gm "--kv-cache with --backend reference" 2 "--kv-cache only applies to the engine" -- --backend reference --kv-cache q8
gm "--kv-cache q4, an odd head_dim" 2 "head_dim 15 is odd" -- --model "$tmp/odd-heads" --kv-cache q4
gm "--kv-cache f32 with --backend cuda" 2 "--kv-cache f32 is the CPU engine's: the CUDA backend keeps its KV cache in bf16 (default), q8 or q4" -- --backend cuda --kv-cache f32
row info "--kv-cache q3" 2 "--kv-cache expects f32, bf16, q8 or q4, got 'q3'" -- info "$m" --kv-cache q3
row bench "--kv-cache q3" 2 "--kv-cache expects" -- bench "$m" --kv-cache q3
gm "--seed -1" 2 "--seed" -- --seed -1
gm "--rule unknown" 2 "--rule" -- --rule maybe
gm "--method spec without a draft" 2 "draft" -- --method spec
gm "--method medusa, --medusa missing" 2 "$tmp/no-heads" -- --method medusa --medusa "$tmp/no-heads"
gm "--medusa a model file, not heads" 2 "$st" -- --method medusa --medusa "$st"
gm "--tree missing" 2 "$tmp/no-tree.json" -- --method medusa --tree "$tmp/no-tree.json"
gm "--tree not JSON" 2 "$tmp/tree-bad.json" -- --method medusa --tree "$tmp/tree-bad.json"
gm "--tree deeper than the heads (2)" 2 "tree3.json" -- --method medusa --tree "$tmp/tree3.json"
# 1088 paths: every rank at depth 1, every pair at depth 2, and 32 more
seq -s' ' 0 1087 | awk '{printf "["; for (i = 1; i <= NF; i++) { n = $i; printf "%s", (i > 1 ? "," : "");
    if (n < 32) printf "[%d]", n; else if (n < 1056) printf "[%d,%d]", int((n - 32) / 32), (n - 32) % 32;
    else printf "[0,0,%d]", n - 1056 } print "]" }' >"$tmp/tree-big.json"
gm "--tree of 1088 paths" 2 "1088 paths, at most 255" -- --method medusa --tree "$tmp/tree-big.json"
gm "--k with --method medusa" 2 "--k" -- --method medusa --k 3
gm "--ngram 0" 2 "--ngram" -- --method lookup --ngram 0
gm "--ngram with --method spec" 2 "--ngram" -- --method spec --ngram 2
row bench "--runs 0" 2 "--runs" -- bench "$m" --runs 0
row bench "--method beam" 2 "--method" -- bench "$m" --method beam
row bench "--tokens -5" 2 "--tokens" -- bench "$m" --tokens -5
row bench "--prompt-tokens + --tokens past the context" 2 "--tokens 1000" -- bench "$m" --plain --prompt-tokens 100 --tokens 1000
row bench "--prompt with --prompt-tokens" 2 "--prompt" -- bench "$m" --prompt "to be" --prompt-tokens 3
row bench "--prompt, no tokenizer beside the model" 2 "tokenizer" -- bench "$m" --plain --prompt "to be"
row bench "--batch 0" 2 "--batch" -- bench "$m" --batch 0
row bench "--batch with a flag it does not take" 2 "--plain" -- bench "$m" --batch 2 --plain
row bench "--batch past the context" 2 "max_position_embeddings" -- bench "$m" --batch 2 --rounds 4000
row bench "--batch --temperature -1" 2 "--temperature" -- bench "$m" --batch 2 --temperature -1
row bench "--batch --tokens 0" 2 "--tokens" -- bench "$m" --batch 2 --tokens 0
row bench "--batch --backend tpu" 2 "expects cpu or cuda" -- bench "$m" --batch 2 --backend tpu
row bench "--batch with a missing draft" 2 "the draft model" -- bench "$m" --batch 2 --draft "$tmp/nope"

# ---- files that are not regular files, and what a file may not say --------------------------------
row info "config.json a FIFO" 2 "$tmp/fifo-cfg/config.json: is a FIFO, not a regular file" -- info "$tmp/fifo-cfg"
row generate "model.safetensors a FIFO" 2 "$tmp/fifo-st/model.safetensors: is a FIFO, not a regular file" -- \
    generate --model "$tmp/fifo-st" --tokens 1,2 --max-tokens 2
row generate "a shard a FIFO" 2 "model-00002-of-00002.safetensors: is a FIFO, not a regular file" -- \
    generate --model "$fifo_shard" --tokens 1,2 --max-tokens 2
row generate "tokenizer.json a FIFO" 2 "$tmp/fifo-tok/tokenizer.json: is a FIFO, not a regular file" -- \
    generate --model "$tmp/fifo-tok" --prompt "to be" --max-tokens 2
row generate "--tree a FIFO" 2 "tree file $tmp/fifo: is a FIFO, not a regular file" -- \
    generate --model "$m" --method medusa --medusa "$heads" --tree "$tmp/fifo" --tokens 1,2 --max-tokens 2
row medusa-train "--corpus-ids a FIFO" 2 "$tmp/fifo: is a FIFO, not a regular file" -- \
    medusa-train --model "$m" --corpus-ids "$tmp/fifo" --out "$tmp/h.st"
printf '1 2 3 4\n' >"$tmp/arm.txt"
row audit "--samples-on a FIFO" 2 "--samples-on $tmp/fifo: is a FIFO, not a regular file" -- \
    audit --tokens 1,2,3 --length 4 --samples-on "$tmp/fifo" --samples-off "$tmp/arm.txt" --samples-control "$tmp/arm.txt"
row info "config.json with a key given twice" 2 "duplicate object key" -- info "$dupkey"
row generate "config.json with a key given twice" 2 "duplicate object key" -- generate --model "$dupkey" --tokens 1 --max-tokens 2
row generate "a shard index naming a file outside the folder" 2 "a shard must be a file name in the model's folder" -- \
    generate --model "$escape" --tokens 1,2 --max-tokens 2

# ---- a model that overflows: exit 1 with the position, every method, both backends ------------------
for method in greedy sample spec mtp lookup beam; do
    for backend in reference cpu; do
        draft=() && [ $method = spec ] && draft=(--draft "$m")
        row generate "--method $method --backend $backend, a model that overflows" 1 \
            "position 2: 32 of the 32 logits are NaN or infinite: the model's activations overflow" -- \
            generate --model "$tmp/overflows" --tokens 1,2,3 --max-tokens 4 --method $method --backend $backend "${draft[@]}"
    done
done
row logits "a model that overflows" 1 "position 0: 32 of the 32 logits are NaN" -- logits "$tmp/overflows" --tokens 1,2
for backend in reference cpu; do
    row generate "--backend $backend, embeddings at the bf16 maximum" 1 "position 2: all 32 logits are 0, whatever the input" -- \
        generate --model "$tmp/embed-overflows" --tokens 1,2,3 --max-tokens 4 --backend $backend
done
row_lines=2 # plot's progress line, then the verdict
row plot "a model that overflows (its MTP module drafts first)" 1 "the MTP module: position 2: 32 of the 32 logits are NaN" -- \
    plot --model "$tmp/overflows" --term none --prompts 1 --tokens 4 --out "$tmp/plots"
row_lines=
row bench "--batch, a model that overflows" 1 "32 of the 32 logits are NaN or infinite" -- \
    bench "$tmp/overflows" --batch 2 --rounds 2 --tokens 4
# the CUDA backend on the kernels' emulator (head_dim 32: micro-tied): the logits stay on the device, the
# acceptance draws there, and the round loop refuses the token −1 it returns
"$build/genmodel" --preset micro-tied --quiet "$tmp/tied" && overflow "$tmp/tied" "$tmp/tied-overflows"
specula=$specula_emu
for method in greedy sample; do
    row generate "--method $method --backend cuda (emulated), a model that overflows" 1 \
        "position 2: the target drew token -1, outside the vocabulary [0, 32): its distribution there was empty" -- \
        generate --model "$tmp/tied-overflows" --tokens 1,2,3 --max-tokens 4 --method $method --backend cuda
done
# q8 and q4 caches run on the CUDA backend; q4 of an odd head width is refused there as on the CPU, by name
row generate "--kv-cache q4 --backend cuda (emulated), an odd head_dim" 2 "head_dim 15 is odd" -- \
    generate --model "$tmp/odd-heads" --tokens 1,2,3 --max-tokens 4 --backend cuda --kv-cache q4
specula=$specula_main

# ---- standard output on a full disk (/dev/full): exit 1, not 0 with the output lost ------------
row_stdout=/dev/full
full="cannot write the output: No space left on device"
row info "stdout on a full disk" 1 "$full" -- info "$m"
row generate "stdout on a full disk" 1 "$full" -- generate --model "$m" --tokens 1,2 --max-tokens 3
row generate "--json, stdout on a full disk" 1 "$full" -- generate --model "$m" --tokens 1,2 --max-tokens 3 --json
row logits "stdout on a full disk" 1 "$full" -- logits "$m" --tokens 1,2
row verify "--plan --json, stdout on a full disk" 1 "$full" -- verify --plan --json
row_stdout=

# ---- the other commands ---------------------------------------------------------------
row logits "--out into a missing folder" 2 "$tmp/nope/l.bin" -- logits "$m" --tokens 1,2 --out "$tmp/nope/l.bin"
row logits "--mtp-chain-from without --mtp-out" 2 "--mtp-chain-from" -- logits "$m" --tokens 1,2 --mtp-chain-from 0
row verify "--samples 0" 2 "--samples" -- verify --samples 0
row verify "--scale -1" 2 "--scale" -- verify --scale -1
row verify "--method unknown" 2 "--method" -- verify --method magic
row verify "--alpha 2" 2 "--alpha" -- verify --alpha 2
row plot "--prompts 0" 2 "--prompts" -- plot --prompts 0 --no-measure --out "$tmp/plots"
row plot "--term unknown" 2 "--term" -- plot --term jpeg --out "$tmp/plots"
row plot "--alpha 1.5" 2 "--alpha" -- plot --alpha 1.5 --out "$tmp/plots"
row plot "--ngram" 2 "--ngram" -- plot --ngram 2 --out "$tmp/plots"
row plot "--tokens past the context" 2 "--tokens 2000" -- plot --model "$m" --tokens 2000 --term none --out "$tmp/plots"
row plot "a broken tokenizer.json" 2 "$badtok/tokenizer.json" -- plot --model "$badtok" --term none --out "$tmp/plots"
row plot "--out under a file, not a folder" 2 "cannot create the folder $tmp/arm.txt/plots: Not a directory" -- \
    plot --model "$m" --term none --prompts 1 --tokens 4 --out "$tmp/arm.txt/plots"
row plot "--model missing" 2 "$tmp/nope" -- plot --model "$tmp/nope" --out "$tmp/plots"
mt() { # medusa-train on the micro model
    local input=$1 want=$2 fragment=$3
    shift 4
    row medusa-train "$input" "$want" "$fragment" -- medusa-train --model "$m" --steps 1 --sequences 2 \
        --eval-sequences 1 --heads 2 --prompt-len 2 --gen-len 4 "$@"
}
mt "no --out" 2 "--out" -- --random-prompts
mt "no prompts source" 2 "--corpus" -- --out "$tmp/h.st"
mt "--corpus and --random-prompts" 2 "--corpus" -- --random-prompts --corpus "$tmp/x" --out "$tmp/h.st"
mt "--corpus-ids missing" 2 "$tmp/no-corpus.txt" -- --corpus-ids "$tmp/no-corpus.txt" --out "$tmp/h.st"
mt "--corpus on a model without tokenizer.json" 2 "tokenizer.json" -- --corpus "$tmp/x" --out "$tmp/h.st"
echo 1 2 32 4 >"$tmp/ids.txt"
mt "--corpus-ids with an id past the vocabulary" 2 "$tmp/ids.txt: entry 2" -- --corpus-ids "$tmp/ids.txt" --out "$tmp/h.st"
mt "--heads 0" 2 "--heads" -- --random-prompts --heads 0 --out "$tmp/h.st"
mt "--lr 0" 2 "--lr" -- --random-prompts --lr 0 --out "$tmp/h.st"
mt "--steps -1" 2 "--steps" -- --random-prompts --steps -1 --out "$tmp/h.st"
mt "--prompt-len past the context" 2 "--prompt-len 5000" -- --random-prompts --prompt-len 5000 --out "$tmp/h.st"
mt "--prompt-len + --gen-len past the context" 2 "--gen-len 1000" -- --random-prompts --prompt-len 100 --gen-len 1000 --out "$tmp/h.st"
# Medusa metadata that says neither yes nor no (the same length as "false": no offset moves)
sed 's/"medusa_shared_lm_head":"false"/"medusa_shared_lm_head":"maybe"/' "$heads" >"$tmp/heads-maybe.safetensors"
row generate "Medusa heads with medusa_shared_lm_head \"maybe\"" 2 "medusa_shared_lm_head = \"maybe\": expected \"true\" or \"false\"" -- \
    generate --model "$m" --method medusa --medusa "$tmp/heads-maybe.safetensors" --tokens 1,2 --max-tokens 2

# ---- precision: an f32 checkpoint rounded to bf16 by the cpu engine's default is said, not done in silence ----
"$build/genmodel" --preset micro --quiet --dtype f32 "$tmp/f32"
row generate "an f32 checkpoint on the cpu engine, no --dtype (a note; the run goes on)" 0 \
    "stores F32 weights; the cpu engine computes with them rounded to BF16 (--dtype f32 keeps them)" -- \
    generate --model "$tmp/f32" --tokens 1,2 --max-tokens 2 --backend cpu

# ---- outputs: only a regular file or a new name, never one of the run's inputs, checked before the work ----
mkfifo "$tmp/out-fifo" && ln -s "$tmp/arm.txt" "$tmp/out-link" && mkdir -p "$tmp/out-dir"
row logits "--out a symbolic link" 2 "$tmp/out-link: is a symbolic link; an output may only be a regular file or a new name" -- \
    logits "$m" --tokens 1,2 --out "$tmp/out-link"
row logits "--out a FIFO" 2 "$tmp/out-fifo: is a FIFO; an output may only be" -- logits "$m" --tokens 1,2 --out "$tmp/out-fifo"
row logits "--out /dev/null" 2 "/dev/null: is a character device; an output may only be" -- \
    logits "$m" --tokens 1,2 --out /dev/null
row logits "--out a folder" 2 "$tmp/out-dir: is a folder" -- logits "$m" --tokens 1,2 --out "$tmp/out-dir"
row logits "--out the model's config.json" 2 "$m/config.json is one of this run's inputs" -- \
    logits "$m" --tokens 1,2 --out "$m/config.json"
mt "--out the base checkpoint" 2 "$m/model.safetensors is one of this run's inputs" -- --random-prompts \
    --out "$m/model.safetensors"
mt "--tree-out into a missing folder" 2 "$tmp/nope/t.json: cannot create a temporary file beside it" -- \
    --random-prompts --out "$tmp/h.st" --tree-out "$tmp/nope/t.json"
: >"$tmp/empty.txt" && printf '1 2 3 99999\n' >"$tmp/past.txt"
audit_files() { row audit "$1" 2 "$2" -- audit --tokens 1,2,3 --length 4 --samples-on "$3" --samples-off "$tmp/arm.txt" \
    --samples-control "$tmp/arm.txt"; }
audit_files "an empty sample file" "--samples-on $tmp/empty.txt has no samples" "$tmp/empty.txt"
audit_files "a sample past the vocabulary" "line 1: token 99999 is outside the vocabulary (512)" "$tmp/past.txt"
row audit "--save-samples into a missing folder" 2 "$tmp/nope/dir/on.txt: cannot create a temporary file" -- \
    audit --tokens 1,2,3 --length 4 --samples 100 --save-samples "$tmp/nope/dir"

# specula gate: its flags, and a canary file that cannot be used (missing, malformed, past the vocabulary, without
# its expected tokens)
row gate "--temperature 0" 2 "--temperature must be above 0" -- gate --temperature 0
row gate "--plant with a method that does not speculate" 2 "--method sample has none" -- gate --method sample --plant residual-unnormalised
row gate "beam search" 2 "--method beam decodes at temperature 0 only" -- gate --method beam
row gate "--plant an unknown bug" 2 "--plant: 'bogus' is not a planted bug" -- gate --plant bogus
row gate "--max-tokens" 2 "--max-tokens does not apply here" -- gate --max-tokens 4
row gate "--samples 0" 2 "--samples" -- gate --samples 0
row gate "--kv-cache on the reference" 2 "--kv-cache only applies to the engine" -- gate --backend reference --kv-cache q4
row gate "--canaries a missing file" 2 "$tmp/nope.txt: cannot open" -- gate --canaries "$tmp/nope.txt"
printf 'case a\nprompt 1 2\ntokens 2\nexpect 3 4\nmargin 0.1 0.2\nbogus 1\n' >"$tmp/gate-bad.txt"
row gate "a canary file with an unknown line" 2 "$tmp/gate-bad.txt:6: unknown line 'bogus'" -- gate --canaries "$tmp/gate-bad.txt"
printf 'case a\nprompt 1 99999\ntokens 2\nexpect 3 4\nmargin 0.1 0.2\n' >"$tmp/gate-past.txt"
row gate "a canary token past the vocabulary" 2 "case a: token 99999 is outside the model's vocabulary (512)" -- \
    gate --canaries "$tmp/gate-past.txt"
printf 'case a\nprompt 1 2\ntokens 2\n' >"$tmp/gate-noexp.txt"
row gate "canaries without their expected tokens" 2 "no expect and margin lines (write them with --write-canaries)" -- \
    gate --canaries "$tmp/gate-noexp.txt"
printf 'case a\nprompt 1 2\ntokens 2\nexpect 3 4 5\n' >"$tmp/gate-count.txt"
row gate "more expected tokens than the tokens line" 2 "3 expected tokens, the tokens line says 2" -- \
    gate --canaries "$tmp/gate-count.txt"

# an unknown flag or a stray argument: one line, for every command
row info "a second folder" 2 "unexpected argument" -- info "$m" "$m"
row logits "a second folder" 2 "unexpected argument" -- logits "$m" --tokens 1 "$m"
row bench "an unknown flag" 2 "--frobnicate" -- bench "$m" --frobnicate
row plot "an unknown flag" 2 "--frobnicate" -- plot --frobnicate
row verify "an unknown flag" 2 "--frobnicate" -- verify --frobnicate
row medusa-train "an unknown flag" 2 "--frobnicate" -- medusa-train --frobnicate
row gate "an unknown flag" 2 "--frobnicate" -- gate --frobnicate
row specula "an unknown command" 2 "frobnicate" -- frobnicate

echo "bad-input-cli: $pass passed, $fail failed, $skip skipped"
echo "$pass $fail $skip" >"$counts"
[ "$fail" -eq 0 ]
