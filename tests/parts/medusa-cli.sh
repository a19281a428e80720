#!/usr/bin/env bash
# medusa-cli.sh BUILD COUNTS — the Medusa command lines on a random micro
# model: genmodel --medusa-heads, `specula generate --method medusa` in every
# rule (temperature 0 equals greedy), its errors (bad combinations, a tree
# that does not fit, heads of another base), and a short `specula
# medusa-train whose file loads back; the Medusa row of `specula bench`.
# Writes "passed failed skipped" to COUNTS.
# (The library is tested in tests/unit/test_medusa*.c.)
set -u
build=${1:-build}
counts=${2:-/dev/null}
specula=$build/specula
pass=0 fail=0
tmp=$(mktemp -d "${TMPDIR:-/tmp}/specula-medusa-XXXXXX")
trap 'rm -rf "$tmp"' EXIT

check() { # check NAME COMMAND...
    local name=$1
    shift
    if "$@"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL medusa-cli: $name"; fi
}

# expect_error NAME STATUS PATTERN ARGS...: exits with STATUS and says PATTERN on stderr
expect_error() {
    local name=$1 status=$2 pattern=$3
    shift 3
    "$specula" "$@" >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    if [ $rc -eq "$status" ] && grep -q -- "$pattern" "$tmp/err"; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        echo "FAIL medusa-cli: $name: exit $rc, stderr: $(cat "$tmp/err")"
    fi
}

m=$tmp/micro
"$build/genmodel" --preset micro --quiet --medusa-heads 4 "$m"
check "genmodel writes the heads beside the model" test -f "$m-medusa/medusa_heads.safetensors"
"$build/genmodel" --preset micro --seed 9 --quiet "$tmp/other"

gen() { "$specula" generate --model "$m" --tokens 3,1,4,1,5 --max-tokens 40 --no-eos --ids "$@"; }
gen --method greedy >"$tmp/greedy" 2>&1
head -1 "$tmp/greedy" >"$tmp/greedy.tokens"
check "greedy prints 40 token ids after the prompt" test "$(sed 's/.*||//' "$tmp/greedy.tokens" | wc -w)" -eq 40
for rule in greedy exact exact-norepl typical; do
    gen --method medusa --temperature 0 --rule "$rule" >"$tmp/$rule" 2>&1
    check "medusa --rule $rule at temperature 0 equals greedy" cmp -s <(head -1 "$tmp/$rule") "$tmp/greedy.tokens"
done
gen --method medusa --temperature 0 --json >"$tmp/json" 2>&1
check "--json reports the medusa run" grep -q '"method": "medusa"' "$tmp/json"
gen --method medusa --temperature 0.8 --seed 3 >"$tmp/s1" 2>&1
gen --method medusa --temperature 0.8 --seed 3 >"$tmp/s2" 2>&1
check "sampled medusa is reproducible" cmp -s <(head -1 "$tmp/s1") <(head -1 "$tmp/s2")
echo '[[0], [1], [0, 0]]' >"$tmp/tree.json"
gen --method medusa --temperature 0 --tree "$tmp/tree.json" >"$tmp/tree" 2>&1
check "--tree FILE" cmp -s <(head -1 "$tmp/tree") "$tmp/greedy.tokens"

expect_error "greedy rule above temperature 0" 2 "rule greedy decodes at temperature 0" \
    generate --model "$m" --tokens 1,2 --method medusa --rule greedy --temperature 0.5
expect_error "unknown rule" 2 "expected exact, exact-norepl, typical or greedy" \
    generate --model "$m" --tokens 1,2 --method medusa --rule fast
expect_error "typical settings without the typical rule" 2 "only apply to --rule typical" \
    generate --model "$m" --tokens 1,2 --method medusa --rule exact --typical-epsilon 0.1
expect_error "medusa flags without medusa" 2 "--tree only applies to --method medusa" \
    generate --model "$m" --tokens 1,2 --method mtp --tree "$tmp/tree.json"
echo '[[0], [0, 0], [0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0, 0]]' >"$tmp/deep.json"
expect_error "a tree deeper than the heads" 2 "depth 5, but there are only 4 Medusa heads" \
    generate --model "$m" --tokens 1,2 --method medusa --tree "$tmp/deep.json"
echo '[[0, 1]]' >"$tmp/bad.json"
expect_error "a tree with a missing prefix" 2 "needs its prefix \[0\]" \
    generate --model "$m" --tokens 1,2 --method medusa --tree "$tmp/bad.json"
expect_error "heads of another base are refused" 2 "do not belong to this model" \
    generate --model "$tmp/other" --tokens 1,2 --method medusa --medusa "$m-medusa/medusa_heads.safetensors"
"$specula" generate --model "$tmp/other" --tokens 1,2 --method medusa --medusa "$m-medusa/medusa_heads.safetensors" \
    --medusa-ignore-base >/dev/null 2>&1
check "--medusa-ignore-base lets them through" test $? -eq 0
expect_error "no heads file" 2 "cannot open" generate --model "$tmp/other" --tokens 1,2 --method medusa

"$specula" medusa-train --model "$m" --random-prompts --heads 2 --sequences 4 --eval-sequences 2 --prompt-len 4 \
    --gen-len 16 --steps 20 --batch 8 --log-every 10 --out "$tmp/trained/heads.safetensors" \
    --tree-out "$tmp/trained/tree.json" >"$tmp/train" 2>&1
check "medusa-train exits 0" test $? -eq 0
check "medusa-train reports every head" grep -q "t+3" "$tmp/train"
gen --method medusa --temperature 0 --medusa "$tmp/trained/heads.safetensors" --tree "$tmp/trained/tree.json" \
    >"$tmp/trained.out" 2>&1
check "trained heads and their suggested tree decode greedily" cmp -s <(head -1 "$tmp/trained.out") "$tmp/greedy.tokens"
# the datasets from the CPU engine: the same heads file, loading back and decoding greedily
"$specula" medusa-train --model "$m" --random-prompts --heads 2 --sequences 4 --eval-sequences 2 --prompt-len 4 \
    --gen-len 16 --steps 20 --batch 8 --log-every 0 --backend cpu --threads 2 \
    --out "$tmp/engine/heads.safetensors" --manifest "$tmp/engine/MANIFEST" >"$tmp/train-engine" 2>&1
check "medusa-train --backend cpu exits 0" test $? -eq 0
check "medusa-train --backend cpu: the manifest records the backend" grep -q -- "--backend cpu" "$tmp/engine/MANIFEST"
gen --method medusa --temperature 0 --medusa "$tmp/engine/heads.safetensors" >"$tmp/engine.out" 2>&1
check "heads trained on the engine's continuations decode greedily" \
    cmp -s <(head -1 "$tmp/engine.out") "$tmp/greedy.tokens"
expect_error "medusa-train --backend cuda is refused" 2 "expected reference or cpu" \
    medusa-train --model "$m" --random-prompts --backend cuda --out "$tmp/never/heads.safetensors"
check "a refused backend writes nothing" test ! -e "$tmp/never"
expect_error "medusa-train --threads without --backend cpu is refused" 2 "applies to --backend cpu" \
    medusa-train --model "$m" --random-prompts --threads 2 --out "$tmp/never/heads.safetensors"
check "a refused --threads writes nothing" test ! -e "$tmp/never"
# heads that project through the target's lm_head: on the engine's bf16 weights they get a float32 copy of it
"$specula" medusa-train --model "$m" --random-prompts --heads 2 --sequences 4 --eval-sequences 2 --prompt-len 4 \
    --gen-len 16 --steps 5 --batch 8 --shared-lm-head --out "$tmp/shared/heads.safetensors" >"$tmp/train-shared" 2>&1
check "medusa-train --shared-lm-head exits 0" test $? -eq 0
for backend in cpu reference; do
    gen --method medusa --temperature 0 --medusa "$tmp/shared/heads.safetensors" --backend "$backend" \
        >"$tmp/shared.$backend" 2>&1
    check "heads sharing the lm_head decode greedily on --backend $backend" \
        cmp -s <(head -1 "$tmp/shared.$backend") <(gen --method greedy --backend "$backend" 2>&1 | head -1)
done
# bench: a Medusa row from the heads beside the model, and the same refusal of foreign heads
"$specula" bench "$m" --runs 1 --tokens 8 >"$tmp/bench" 2>&1
check "bench exits 0 with heads beside the model" test $? -eq 0
check "bench prints a medusa row beside greedy" grep -qE "^medusa +[0-9.]+ +[0-9.]+ " "$tmp/bench"
num='[0-9]+\.[0-9]+'
check "bench: the pass over the heads' tree" grep -qE "^ +[0-9]+ +$num +$num +<- the Medusa heads' tree" "$tmp/bench"
check "bench: the heads' round" grep -qE "^Medusa heads, 1 round's proposal +$num +$num$" "$tmp/bench"
check "bench: medusa measured and predicted" grep -qE "^medusa +$num +$num-$num +$num +([0-9]+%|-)( +[0-9.e+]+){3} +${num}x +${num}-${num}x +${num}x\*? +medusa" "$tmp/bench"
check "bench: medusa in the cost model, no alpha" grep -qE "^medusa +- +$num +[0-9]+ +$num +$num +${num}x" "$tmp/bench"
expect_error "bench refuses heads of another base" 2 "do not belong to this model" \
    bench "$tmp/other" --runs 1 --tokens 8 --medusa "$m-medusa/medusa_heads.safetensors"
expect_error "medusa-train needs a prompt source" 2 "exactly one prompt source" medusa-train --model "$m" --out "$tmp/x"
expect_error "medusa-train needs --out" 2 "with --out" medusa-train --model "$m" --random-prompts

echo "medusa-cli: $pass passed, $fail failed"
echo "$pass $fail 0" >"$counts"
[ "$fail" -eq 0 ]
