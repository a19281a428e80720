#!/usr/bin/env bash
# gate-cli.sh BUILD COUNTS — `specula gate` on the embedded model at its default sizes (about 5 s a run): the
# default configuration passes every row; a planted speculative bug (the residual left unnormalised) fails the
# distribution rows and nothing else; the q4 KV cache gets its measured TV and greedy divergence judged against
# the budget, and the budget is a judgement, not a printout (a budget below the measure fails the row, one
# above passes it); an exact configuration measures TV 0; a changed canary file is reported and not used; the
# frozen file is what --write-canaries writes from the reference, byte for byte. Bad input: bad-input-cli.sh.
# Writes "passed failed skipped" to COUNTS.
set -u
build=${1:-build}
counts=${2:-/dev/null}
spec=$build/specula
pass=0 fail=0
tmp=$(mktemp -d "${TMPDIR:-/tmp}/specula-gate-cli-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export XDG_CACHE_HOME=$tmp/cache # the verdicts the gate records for bench: here, not in the user's cache

check() { # check NAME CONDITION...
    local name=$1
    shift
    if "$@"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL gate-cli: $name"; fi
}
# gate NAME ARGS...: runs the gate into $tmp/NAME (stdout), its status in $tmp/NAME.rc
gate() {
    local name=$1
    shift
    "$build/tests/within" 240 --stall 60 "$spec" gate --quiet "$@" >"$tmp/$name" 2>"$tmp/$name.err" </dev/null
    echo $? >"$tmp/$name.rc"
}
rc() { cat "$tmp/$1.rc"; }
row() { grep "^$2 " "$tmp/$1"; } # row RUN CHECK: the table's row
verdict() { row "$1" "$2" | awk -v n="$(wc -w <<<"$2")" '{print $(n + 1)}'; }

"$spec" gate --help >"$tmp/help"
check "--help exits 0" test $? -eq 0
for flag in --canaries --write-canaries --samples --length --control-temperature --tv-budget --budget-tokens \
    --budget-margin --plant --method --k --temperature --backend --dtype --kv-cache; do
    check "--help lists $flag" grep -q -- "$flag" "$tmp/help"
done
check "specula --help lists gate" sh -c "'$spec' --help | grep -q '^  gate '"

# the default configuration: every row passes, exit 0
gate default
check "default: exit 0, got $(rc default)" test "$(rc default)" -eq 0
check "default: the verdict line" grep -q '^gate: passed (0 of 11 rows failed)' "$tmp/default"
for r in canaries "exact: short" "exact: long-context" "exact: multi-turn turn 3" "reference reproduces" \
    "budget: TV per position" "distribution: on vs law" "distribution: on vs off" acceptance; do
    check "default: row '$r' PASS" test "$(verdict default "$r")" = PASS
done
check "default: the canaries' sha256 printed, the one recorded" \
    grep -q "sha256 $(cut -c1-64 tests/gate/canaries.txt.sha256)" "$tmp/default"
check "default: acceptance figures (proposed, accepted, alpha-hat, per position)" \
    sh -c "grep -Eq '^acceptance +PASS +[0-9]+ of [0-9]+ drafts accepted, alpha-hat 0\.[0-9]+; per position 1:0\.[0-9]+ 2:0\.[0-9]+ 3:0\.[0-9]+' '$tmp/default'"
check "default: the TV bound the two-sample tests certify" grep -Eq 'TV\(on, off\) <= [01]\.[0-9]+ certified' "$tmp/default"

# the negative control: the residual left unnormalised in the on arm's rule fails both distribution rows (the
# greedy and TV rows do not sample and stay green)
gate planted --plant residual-unnormalised
check "planted: exit 1, got $(rc planted)" test "$(rc planted)" -eq 1
check "planted: distribution on vs law FAIL" test "$(verdict planted "distribution: on vs law")" = FAIL
check "planted: distribution on vs off FAIL" test "$(verdict planted "distribution: on vs off")" = FAIL
check "planted: the exact rows still PASS" test "$(grep -c '^exact: .* PASS ' "$tmp/planted")" -eq 5
check "planted: announced" grep -q '^planted: residual-unnormalised' "$tmp/planted"

# q4 KV: judged against the budget, the measured TV and divergence printed beside it, the verdict the numbers'
gate q4 --kv-cache q4
tv=$(row q4 "budget: TV per position" | sed -E 's/.* max ([0-9.e+-]+) .*/\1/')
check "q4: a lossy configuration" grep -q 'KV cache q4.*(a lossy configuration)' "$tmp/q4"
check "q4: measured TV '$tv' beside the budget" sh -c "grep -Eq '^budget: TV per position +(PASS|FAIL) +max [0-9.e+-]+ .*<= 0\.02 against the reference' '$tmp/q4'"
want=$(awk -v t="$tv" 'BEGIN { print (t <= 0.02) ? "PASS" : "FAIL" }')
check "q4: TV $tv judged $want" test "$(verdict q4 "budget: TV per position")" = "$want"
check "q4: the greedy rows judged by the budget" test "$(grep -c '^exact: .*budget: no divergence before token 64 where the reference.s margin > 0.5' "$tmp/q4")" -eq 5
check "q4: every divergence reported with the reference's margin" \
    sh -c "! grep '^exact: .* diverged' '$tmp/q4' | grep -vq 'reference margin there [0-9.]*'"
check "q4: exit 1 exactly when a row failed" test "$(rc q4)" -eq "$(grep -q '^gate: passed' "$tmp/q4" && echo 0 || echo 1)"
# the budget decides: below the measure the row fails (the default q4 run shows the other side when it passes)
gate q4-tight --kv-cache q4 --tv-budget 0.001 --budget-margin 0 -n 50 --length 4 # the distribution rows: not looked at
check "q4, TV budget 0.001: the TV row FAIL" test "$(verdict q4-tight "budget: TV per position")" = FAIL
check "q4, margin budget 0: its divergence FAILs" sh -c "grep '^exact: .* diverged' '$tmp/q4-tight' | grep -q ' FAIL '"
check "q4, tight budget: exit 1" test "$(rc q4-tight)" -eq 1

# an exact configuration: the reference's floats, TV 0
gate f32 --dtype f32
check "f32: exit 0" test "$(rc f32)" -eq 0
check "f32: an exact configuration, TV 0" sh -c "grep -q '(an exact configuration)' '$tmp/f32' && grep -Eq '^law: TV per position +PASS +max 0 ' '$tmp/f32'"

# a changed canary file is reported and not used; a file without its checksum is not used either
cp tests/gate/canaries.txt tests/gate/canaries.txt.sha256 "$tmp/"
sed -i '0,/^expect /s/^expect \([0-9]*\)/expect 1\1/' "$tmp/canaries.txt"
gate changed --canaries "$tmp/canaries.txt" -n 50 --length 4
check "changed: exit 1" test "$(rc changed)" -eq 1
check "changed: the canaries row FAIL, the file not used" \
    sh -c "grep -q '^canaries .* FAIL .*the file changed, not used' '$tmp/changed' && ! grep -q '^exact: ' '$tmp/changed'"
rm "$tmp/canaries.txt.sha256"
gate unrecorded --canaries "$tmp/canaries.txt" -n 50 --length 4
check "no .sha256: the canaries row FAIL" test "$(verdict unrecorded canaries)" = FAIL

# the frozen file is the reference's: --write-canaries rewrites it byte for byte, checksum too
mkdir "$tmp/w" && cp tests/gate/canaries.txt "$tmp/w/"
"$spec" gate --write-canaries --canaries "$tmp/w/canaries.txt" >"$tmp/write.out" 2>&1
check "--write-canaries: exit 0" test $? -eq 0
check "--write-canaries: the same bytes" cmp -s tests/gate/canaries.txt "$tmp/w/canaries.txt"
check "--write-canaries: the same checksum file" cmp -s tests/gate/canaries.txt.sha256 "$tmp/w/canaries.txt.sha256"
check "the recorded checksum is the file's" sh -c "cd tests/gate && sha256sum -c --quiet canaries.txt.sha256"
# a model's own set: --model without --canaries writes MODEL/gate-canaries.txt (here the embedded model again, so
# the same tokens), leaves the repository's set alone, and the gate then reads the model's own
mkdir "$tmp/own" && cp models/tiny-shakespeare/config.json models/tiny-shakespeare/model.safetensors \
    models/tiny-shakespeare/tokenizer.json "$tmp/own/"
"$spec" gate --model "$tmp/own" --write-canaries >"$tmp/own.out" 2>&1
check "--write-canaries with --model: exit 0" test $? -eq 0
check "--write-canaries with --model: MODEL/gate-canaries.txt, the same tokens (its header names the model)" \
    cmp -s <(grep -v '^#' tests/gate/canaries.txt) <(grep -v '^#' "$tmp/own/gate-canaries.txt")
check "--write-canaries with --model: the repository's set untouched" \
    sh -c "cd tests/gate && sha256sum -c --quiet canaries.txt.sha256"
"$spec" gate --model "$tmp/own" --method sample -n 50 --length 4 --quiet >"$tmp/own-gate" 2>&1
check "the gate reads the model's own set" grep -q "^canary set $tmp/own/gate-canaries.txt:" "$tmp/own-gate"

# the acceptance row's red flag can fire: a draft that is the target itself is accepted every time at T 1
gate self-draft --method spec --draft models/tiny-shakespeare -n 100
check "a draft that is the target: acceptance FAIL at alpha-hat 1" \
    grep -Eq '^acceptance +FAIL +[0-9]+ of [0-9]+ drafts accepted, alpha-hat 1\.000' "$tmp/self-draft"

# bench: the workload shape, the run's time split and the gate beside every speed figure
bench() { "$spec" bench --runs 1 --tokens 8 --cost-reps 0 --temperature 0.9 --method mtp "$@" 2>/dev/null; }
bench >"$tmp/bench-none"
check "bench: the workload shape" grep -q '^workload: prompt 4 tokens, output 8 tokens, batch 1, temperature 0.9$' "$tmp/bench-none"
check "bench: decode rate, TTFT, end to end, proposed, accepted" \
    grep -Eq '^method +decode tok/s +TTFT ms +end-to-end +proposed +accepted +alpha +gate$' "$tmp/bench-none"
check "bench: the mtp row's drafts counted" grep -Eq '^mtp +[0-9.]+ +[0-9.]+ +[0-9.]+ ms +[1-9][0-9]* +[0-9]+ +0\.[0-9]+ +withheld: no gate$' "$tmp/bench-none"
check "bench, no verdict: both rows' speed withheld" sh -c "test \$(grep -c 'withheld: no gate$' '$tmp/bench-none') -eq 2 && grep -q '^withheld: the speed figures of sample, mtp: ' '$tmp/bench-none'"
gate mtp4 --method mtp --k 4 --temperature 0.9 # the configuration of bench's mtp row
check "gate of bench's mtp row: passed" test "$(rc mtp4)" -eq 0
bench >"$tmp/bench-cached"
check "bench: the mtp row's recorded verdict, the plain row still withheld" sh -c \
    "grep -Eq '^mtp .* ms .* passed$' '$tmp/bench-cached' && grep -Eq '^sample .* ms .* withheld: no gate$' '$tmp/bench-cached' && grep -q '^withheld: the speed figures of sample: ' '$tmp/bench-cached'"
gate q4-mtp4 --method mtp --k 4 --temperature 0.9 --kv-cache q4 # the sizes are part of the key: the defaults
bench --kv-cache q4 >"$tmp/bench-q4"
check "bench --kv-cache q4: another configuration, its failed verdict" grep -Eq '^mtp .* ms .* withheld: FAILED$' "$tmp/bench-q4"
bench --gate --csv >"$tmp/bench.csv"
check "bench --gate: exit 0" test $? -eq 0
check "bench --csv: the new columns" head -1 "$tmp/bench.csv" | grep -q ',prompt_tokens,batch,decode_tokens_per_s,ttft_ms,e2e_ms,proposed,accepted,gate$'
check "bench --gate: every row's gate run first, passed" test "$(grep -c ',passed$' "$tmp/bench.csv")" -eq 2

echo "gate-cli: $pass passed, $fail failed"
echo "$pass $fail 0" >"$counts"
[ $fail -eq 0 ]
