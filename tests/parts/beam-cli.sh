#!/usr/bin/env bash
# beam-cli.sh BUILD COUNTS — checks `specula generate --method beam` on a
# generated micro model: --help lists the beam flags, width 1 prints the
# greedy tokens, --json carries the n-best list and the accounting, and every
# invalid combination exits 2 with a message naming the flag. Writes
# "passed failed skipped" to COUNTS. (The search itself is tested in
# tests/unit/test_beam*.c.)
set -u
build=${1:-build}
counts=${2:-/dev/null}
spec=$build/specula
pass=0 fail=0
tmp=$(mktemp -d "${TMPDIR:-/tmp}/specula-beam-XXXXXX")
trap 'rm -rf "$tmp"' EXIT

check() { # check NAME CONDITION...
    local name=$1
    shift
    if "$@"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL beam-cli: $name"; fi
}

# expect_error NAME PATTERN ARGS...: exits with status 2 and says PATTERN on stderr
expect_error() {
    local name=$1 pattern=$2
    shift 2
    "$spec" generate --model "$tmp/m" --tokens 1,2,3 "$@" >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    if [ $rc -eq 2 ] && grep -q -- "$pattern" "$tmp/err"; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        echo "FAIL beam-cli: $name: exit $rc, stderr: $(cat "$tmp/err")"
    fi
}

"$build/genmodel" --quiet --preset micro --dtype f32 --seed 7 "$tmp/m" || { echo "beam-cli: genmodel failed"; exit 1; }

"$spec" generate --help >"$tmp/help"
for flag in "beam |" --beams --length-penalty --early-stopping --num-return; do
    check "--help lists $flag" grep -q -- "$flag" "$tmp/help"
done

# the tokens of the first "tokens" array of a JSON output
first_tokens() { grep -o '"tokens": \[[^]]*\]' "$1" | head -1; }

prompt=5,9,2,7,1,3,8,4,6,10,11,12,13,14,15,16,17,18,19,20 # 20 tokens: beams share a full KV block
"$spec" generate --model "$tmp/m" --tokens $prompt --method greedy --max-tokens 12 --no-eos --json >"$tmp/greedy"
"$spec" generate --model "$tmp/m" --tokens $prompt --method beam --beams 1 --max-tokens 12 --no-eos --json >"$tmp/b1"
check "width 1 runs" test $? -eq 0
check "width 1 prints the greedy tokens" test "$(first_tokens "$tmp/greedy")" = "$(first_tokens "$tmp/b1")"
check "greedy tokens are there" test -n "$(first_tokens "$tmp/greedy")"

"$spec" generate --model "$tmp/m" --tokens $prompt --method beam --beams 4 --num-return 3 --length-penalty 0.5 \
    --early-stopping never --max-tokens 10 --json >"$tmp/b4"
check "width 4 runs" test $? -eq 0
check "three hypotheses" test "$(grep -o '"score":' "$tmp/b4" | wc -l)" -eq 3
check "settings echoed" grep -q '"beams": 4, "length_penalty": 0.5, "early_stopping": "never"' "$tmp/b4"
check "accounting" grep -q '"method": "beam", "k": 0, "target_passes": 10' "$tmp/b4"
check "beam figures" grep -q '"kv_blocks_peak": [0-9]*, "kv_blocks_unshared_peak"' "$tmp/b4"
check "DeltaNet bytes" grep -q '"deltanet_bytes_per_beam": [1-9]' "$tmp/b4"

"$spec" generate --model "$tmp/m" --tokens $prompt --method beam --beams 2 --max-tokens 4 >"$tmp/text"
check "text output ranks the hypotheses" grep -q '^#1 score' "$tmp/text"
check "text output reports the blocks" grep -q 'KV blocks at the peak' "$tmp/text"

# text in and out through a tokenizer.json beside the model
"$build/genmodel" --quiet --preset micro --vocab 512 --eos 0 --dtype f32 "$tmp/t" &&
    cp models/tiny-shakespeare/tokenizer.json "$tmp/t/"
"$spec" generate --model "$tmp/t" --prompt "ROMEO:" --method beam --beams 3 --num-return 2 --max-tokens 6 \
    --json >"$tmp/tj"
check "text prompt runs" test $? -eq 0
check "each hypothesis carries its text" test "$(grep -o '"text": "' "$tmp/tj" | wc -l)" -eq 2
check "the encoded prompt is echoed" grep -q '"prompt_tokens": \[[0-9]' "$tmp/tj"
"$spec" generate --model "$tmp/t" --prompt "ROMEO:" --method beam --beams 2 --max-tokens 4 >"$tmp/tt"
check "text output starts with the prompt" grep -q '^#1 ROMEO:' "$tmp/tt"

expect_error "beam flag without beam" "--beams only applies to --method beam" --method greedy --beams 3
expect_error "penalty without beam" "--length-penalty only applies" --method sample --length-penalty 2
expect_error "temperature with beam" "--temperature does not apply to --method beam" --method beam --temperature 0.7
expect_error "top-k with beam" "--top-k does not apply to --method beam" --method beam --top-k 5
expect_error "seed with beam" "--seed does not apply" --method beam --seed 4
expect_error "stream with beam" "--stream does not apply" --method beam --stream
expect_error "k with beam" "--k does not apply" --method beam --k 3
expect_error "draft with beam" "--draft only applies to --method spec" --method beam --draft "$tmp/m"
expect_error "bad mode" "--early-stopping expects true, heuristic or never" --method beam --early-stopping false
expect_error "num-return above beams" "--num-return 5 exceeds --beams 4" --method beam --num-return 5
expect_error "zero beams" "--beams expects an integer" --method beam --beams 0

echo "beam-cli: $pass passed, $fail failed"
echo "$pass $fail 0" >"$counts"
[ "$fail" -eq 0 ]
