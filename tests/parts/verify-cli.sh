#!/usr/bin/env bash
# verify-cli.sh BUILD COUNTS — checks the `specula verify` command line on
# small draw counts: the table, the JSON, a failing verdict's exit status,
# the beam row, and exit status 2 with a clear message for bad usage. (The
# statistics themselves are tested in tests/stat.) Writes "passed failed
# skipped" to COUNTS.
set -u
build=${1:-build}
counts=${2:-/dev/null}
spec=$build/specula
pass=0 fail=0
tmp=$(mktemp -d "${TMPDIR:-/tmp}/specula-verify-cli-XXXXXX")
trap 'rm -rf "$tmp"' EXIT

check() { # check NAME CONDITION...
    local name=$1
    shift
    if "$@"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL verify-cli: $name"; fi
}

# expect_error NAME PATTERN ARGS...: exits with 2 and says PATTERN on stderr
expect_error() {
    local name=$1 pattern=$2
    shift 2
    "$spec" verify "$@" >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    if [ $rc -eq 2 ] && grep -q -- "$pattern" "$tmp/err"; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        echo "FAIL verify-cli: $name: exit $rc, stderr: $(cat "$tmp/err")"
    fi
}

"$spec" verify --help >"$tmp/help"
check "--help exits 0" test $? -eq 0
for flag in --method --all --list --plan --backend --samples --scale --control-samples --seed --model-seed --alpha --tv-max --delta \
    --json --quiet; do
    check "--help lists $flag" grep -q -- "$flag" "$tmp/help"
done
"$spec" verify --list >"$tmp/list"
check "--list shows the default rows" test "$(grep -c '^  default' "$tmp/list")" -ge 8
check "--list shows the grid" grep -q -- '--all   spec k=4 T=1.2 top-p 0.9' "$tmp/list"

# one small case: passes without the TV requirement (2 000 draws cannot bound it by 0.02)
"$spec" verify --method "spec k=3 T=0.8" --samples 2500 --control-samples 2500 --tv-max 0 --quiet >"$tmp/t"
check "a passing case exits 0" test $? -eq 0
check "the table has its header" grep -q '^case  *pair  *samples  *statistic' "$tmp/t"
check "the row says exact" grep -q '^spec k=3 T=0.8 .*reference vs exact .* 2500 .*exact$' "$tmp/t"
# the same case with a TV requirement it cannot meet fails, and says why
"$spec" verify --method "spec k=3 T=0.8" --samples 2500 --control-samples 2500 --tv-max 0.02 --quiet >"$tmp/f"
check "a TV bound above --tv-max exits 1" test $? -eq 1
check "the row says why" grep -q 'FAIL: TV bound too wide' "$tmp/f"
# a control too small to be rejected: the method is not blamed, the test's power is
"$spec" verify --method "spec k=3 T=0.8" --samples 2500 --control-samples 100 --json --quiet >"$tmp/lp"
check "a control not rejected exits 1" test $? -eq 1
check "the method's verdict stands apart from its control's" \
    grep -q '"method_verdict": "exact", "control_verdict": "FAIL: the test lost its power (control not rejected)"' "$tmp/lp"
# a row held to its rule's own law states the rule's bias, computed
"$spec" verify --method "typical spec k=2 T=1.2 L=4" --samples 2000 --control-samples 1000 --quiet >"$tmp/tb"
check "the typical row's bias is a number" grep -qE "^typical spec k=2 T=1.2 L=4: held to its rule's own law, which lies 0\.[0-9]{4} \(TV" "$tmp/tb"

"$spec" verify --method "typical mtp k=2 T=0.8 L=4" --samples 2000 --control-samples 2000 --tv-max 0 --json --quiet \
    >"$tmp/j"
check "a biased rule's check exits 0" test $? -eq 0
check "JSON: the case" grep -q '"case": "typical mtp k=2 T=0.8 L=4"' "$tmp/j"
check "JSON: biased as expected" grep -q '"expect_biased": true, .*"verdict": "biased, as expected"' "$tmp/j"
check "JSON: closed" test "$(tail -c 2 "$tmp/j")" = "}"

"$spec" verify --method beam --quiet >"$tmp/b"
check "beam exits 0" test $? -eq 0
check "beam: no difference" grep -q '0 differ in hypotheses, scores or passes: exact' "$tmp/b"

# the engine: one grid case whose control is the engine's planted commit slip
"$spec" verify --backend cpu --method "mtp argmax k=2 T=1" --samples 2000 --control-samples 2000 --tv-max 0 --quiet >"$tmp/e"
check "--backend cpu: a passing case exits 0" test $? -eq 0
check "--backend cpu: the row names the engine and its control" \
    grep -q '^mtp argmax k=2 T=1 .*engine vs exact .* 2000 .*engine-parent-slot .*exact$' "$tmp/e"
# the engine's exact cross-test mode, and the typical rule held to its own law on the engine's default mode
"$spec" verify --backend cpu --dtype f32 --method "mtp argmax k=2 T=1" --samples 2000 --control-samples 2000 --quiet \
    >"$tmp/ef"
check "--backend cpu --dtype f32: a passing case exits 0" test $? -eq 0
"$spec" verify --backend cpu --method "typical spec k=2 T=1.2 L=4" --samples 3000 --control-samples 1000 --quiet \
    >"$tmp/et"
check "--backend cpu: the typical row passes against the rule's law" test $? -eq 0
check "--backend cpu: the typical row says what it is held to" grep -q "^typical spec k=2 T=1.2 L=4 .*engine vs rule's law" "$tmp/et"
check "--backend cpu: the engine's own laws held to the reference's" \
    grep -qE "^The engine's own laws \(enumerated through it, in its default mode\) are at most [0-9.e+-]+ from" "$tmp/et"
expect_error "--dtype without --backend cpu" "give it with --backend cpu" --dtype f32 --method spec
expect_error "--dtype bf8" "expects bf16 or f32" --backend cpu --dtype bf8
"$spec" verify --backend cpu --list >"$tmp/el"
check "--backend cpu --list: Medusa's engine control" grep -q 'medusa iid T=1 top-k 5 .*control: engine-sibling-kv' "$tmp/el"
"$spec" verify --backend cpu --method beam --quiet >"$tmp/eb" 2>&1
check "--backend cpu: beam is refused" test $? -eq 2

# --plan: sizes and seeds, no draws; a case's seed comes from its name, whatever else is selected
"$spec" verify --plan >"$tmp/p"
check "--plan exits 0" test $? -eq 0
check "--plan: a row with its world, window, draws, control size and seed" \
    grep -q '^spec k=3 T=0.8 L=5  *reference vs exact  *3 5  *243  *[0-9][0-9]*  *[0-9][0-9]*  .* 2266803967c9b1ea  drafts' "$tmp/p"
"$spec" verify --plan --method "spec k=3 T=0.8 L=5" >"$tmp/p1"
check "--plan: the seed does not depend on the selection" grep -q ' 2266803967c9b1ea  drafts' "$tmp/p1"
"$spec" verify --plan --seed 2 >"$tmp/p2"
check "--plan: another --seed, other seeds" test "$(grep -c 2266803967c9b1ea "$tmp/p2")" -eq 0

expect_error "unknown flag" "unknown option '--frobnicate'" --frobnicate
expect_error "unknown method" "no case matches 'medusa-typo'" --method medusa-typo
expect_error "bad count" "--samples expects an integer" --samples 10
expect_error "bad scale" "--scale expects a number" --scale 0
expect_error "bad alpha" "--alpha expects a number" --alpha 2
expect_error "scale too small" "fewer than 100 draws" --scale 0.001
expect_error "unknown backend" "--backend expects reference or cpu" --backend gpu
expect_error "--json and --csv" "give --json or --csv, not both" --json --csv
expect_error "--flags with --method" "--flags runs its own rows" --flags "--method lookup" --method spec
expect_error "--flags of plain sampling" "has no proposer to test this way" --flags "--method sample"
expect_error "--flags that do not parse" "'--frob' is not a method flag" --flags "--method lookup --frob"

# the rows as CSV: a header, then one row per case
"$spec" verify --method lookup --scale 0.2 --csv --quiet >"$tmp/v.csv" 2>/dev/null
check "--csv: the header" grep -q '^case,method,flags,pair,k,L,seed,samples,' "$tmp/v.csv"
check "--csv: the case's row" grep -qE '^lookup k=2 T=1 L=4,lookup,--method lookup --k 2 --temperature 1,reference vs exact,2,4,[0-9a-f]{16},' "$tmp/v.csv"
# any method by its flags: a built-in that drafts, its three rows, each with a control derived from it
"$spec" verify --flags "--method bigram --k 2 --temperature 1" --plan >"$tmp/vf" 2>&1
check "--flags: three rows with derived controls" sh -c "grep -c '^bigram k=2, min 1, exact rule T=1 L=4' '$tmp/vf' | grep -qx 3 && grep -q 'q half another depth' '$tmp/vf' && grep -q 'q reported uniform' '$tmp/vf' && grep -q 'bonus-from-parent' '$tmp/vf'"

echo "verify-cli: $pass passed, $fail failed"
echo "$pass $fail 0" >"$counts"
[ "$fail" -eq 0 ]
