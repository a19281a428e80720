#!/usr/bin/env bash
# genmodel-cli.sh BUILD COUNTS — checks the `genmodel` command line: --help,
# clear errors with exit status 2 for bad flags and values, overrides that
# reach config.json, determinism of the files. Writes "passed failed skipped"
# to COUNTS. (The generator itself is tested in tests/unit/test_genmodel.c.)
set -u
build=${1:-build}
counts=${2:-/dev/null}
gen=$build/genmodel
pass=0 fail=0
tmp=$(mktemp -d "${TMPDIR:-/tmp}/specula-genmodel-XXXXXX")
trap 'rm -rf "$tmp"' EXIT

check() { # check NAME CONDITION...
    local name=$1
    shift
    if "$@"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL genmodel-cli: $name"; fi
}

# expect_error NAME STATUS PATTERN ARGS...: exits with STATUS and says PATTERN on stderr
expect_error() {
    local name=$1 status=$2 pattern=$3
    shift 3
    "$gen" "$@" >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    if [ $rc -eq "$status" ] && grep -q -- "$pattern" "$tmp/err"; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        echo "FAIL genmodel-cli: $name: exit $rc, stderr: $(cat "$tmp/err")"
    fi
}

"$gen" --help >"$tmp/help"
check "--help exits 0" test $? -eq 0
for flag in --preset --list-presets --draft --seed --dtype --shards --layout --tied --untied --mtp --no-mtp --vocab \
    --hidden --intermediate --layers --layer-pattern --full-attention-interval --heads --kv-heads --head-dim \
    --partial-rotary-factor --rope-theta --linear-k-heads --linear-v-heads --linear-k-dim --linear-v-dim \
    --conv-kernel --eos --rms-norm-eps --max-position; do
    check "--help lists $flag" grep -q -- "$flag" "$tmp/help"
done
"$gen" --list-presets >"$tmp/presets"
for p in micro micro-draft micro-tied micro-deep small small-draft bench; do
    check "--list-presets shows $p" grep -q "^$p " "$tmp/presets"
done

expect_error "unknown flag" 2 "unknown option --frobnicate" --frobnicate "$tmp/x"
expect_error "no output dir" 2 "no output directory" --preset micro
expect_error "bad integer" 2 "--layers expects an integer in \[1, 256\], got 'four'" --layers four "$tmp/x"
expect_error "out of range" 2 "--hidden expects an integer" --hidden 0 "$tmp/x"
expect_error "bad dtype" 2 "--dtype expects bf16, f16 or f32, got 'f8'" --dtype f8 "$tmp/x"
expect_error "bad pattern" 2 "--layer-pattern expects a string of L and F" --layer-pattern LLX "$tmp/x"
expect_error "missing value" 2 "--seed needs a value" "$tmp/x" --seed
expect_error "unknown preset" 2 "unknown preset \"huge\"" --preset huge "$tmp/x"
expect_error "eos outside vocab" 2 "--eos expects an integer in \[0, 31\], got '40'" --eos 40 "$tmp/x"
expect_error "gqa mismatch" 1 "not a multiple of num_key_value_heads" --heads 4 --kv-heads 3 "$tmp/x"
expect_error "both pattern forms" 2 "not both" --layer-pattern LF --full-attention-interval 2 "$tmp/x"

"$gen" --preset micro --seed 9 --layers 6 --layer-pattern LF --head-dim 24 --partial-rotary-factor 0.5 \
    --rope-theta 5e5 --eos 3,4 --untied --no-mtp --layout text --dtype f16 --shards 2 "$tmp/a" >"$tmp/out"
check "override run exits 0" test $? -eq 0
check "prints the parameter count" grep -q "parameters" "$tmp/out"
cfg=$tmp/a/config.json
check "text layout" grep -q '"model_type": "qwen3_5_text"' "$cfg"
check "layers" grep -q '"num_hidden_layers": 6' "$cfg"
check "pattern" grep -q '"layer_types": \["linear_attention", "full_attention", "linear_attention", "full_attention", "linear_attention", "full_attention"\]' "$cfg"
check "head_dim" grep -q '"head_dim": 24' "$cfg"
check "rotary" grep -q '"partial_rotary_factor": 0.5' "$cfg"
check "theta" grep -q '"rope_theta": 500000.0' "$cfg"
check "eos list" grep -q '"eos_token_id": \[3, 4\]' "$cfg"
check "no mtp" grep -q '"mtp_num_hidden_layers": 0' "$cfg"
check "dtype" grep -q '"dtype": "float16"' "$cfg"
check "two shards" test -f "$tmp/a/model-00002-of-00002.safetensors" -a -f "$tmp/a/model.safetensors.index.json"

"$gen" --quiet --preset micro-tied --seed 5 "$tmp/b1" >"$tmp/out" && "$gen" --quiet --preset micro-tied --seed 5 "$tmp/b2"
check "--quiet prints nothing" test ! -s "$tmp/out"
check "same seed, same bytes" cmp -s "$tmp/b1/model.safetensors" "$tmp/b2/model.safetensors"
"$gen" --quiet --preset micro-tied --seed 6 "$tmp/b3"
differs() { ! cmp -s "$1" "$2"; }
check "other seed, other bytes" differs "$tmp/b1/model.safetensors" "$tmp/b3/model.safetensors"
"$gen" --quiet --preset micro --vocab 48 "$tmp/c"
check "eos follows --vocab" grep -q '"eos_token_id": 47' "$tmp/c/config.json"

"$gen" --quiet --preset micro-deep --draft "$tmp/d"
check "--draft keeps the vocabulary" grep -q '"vocab_size": 32' "$tmp/d/config.json"
check "--draft has no MTP" grep -q '"mtp_num_hidden_layers": 0' "$tmp/d/config.json"

echo "genmodel-cli: $pass passed, $fail failed"
echo "$pass $fail 0" >"$counts"
[ "$fail" -eq 0 ]
