#!/usr/bin/env bash
# method-cli.sh BUILD COUNTS — one method description for every command:
# generate, bench, plot and verify read the same method flags (one table,
# reference/methods/method_flags.c) and name what they ran, the MTP draft
# mode included; the MTP default follows the temperature (argmax at 0,
# sampled above) the same way in all of them. On a random micro model with
# an MTP module and a draft. Writes "passed failed skipped" to COUNTS.
set -u
build=${1:-build}
counts=${2:-/dev/null}
specula=$build/specula
pass=0 fail=0
tmp=$(mktemp -d "${TMPDIR:-/tmp}/specula-method-XXXXXX")
trap 'rm -rf "$tmp"' EXIT

check() { # check NAME COMMAND...
    local name=$1
    shift
    if "$@"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL method-cli: $name"; fi
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
        echo "FAIL method-cli: $name: exit $rc, stderr: $(cat "$tmp/err")"
    fi
}

m=$tmp/micro
"$build/genmodel" --preset micro --quiet "$m"
"$build/genmodel" --preset micro-draft --quiet "$m-draft"

# generate: the help lists every flag of the table; the MTP default above temperature 0 is sampled drafts
"$specula" generate --help >"$tmp/help"
for flag in --method --k --temperature --top-k --top-p --min-p --seed --max-tokens --no-eos --mtp-sample \
    --mtp-argmax --ngram --rule --tree --tree-shape --typical-epsilon --typical-delta --beams --length-penalty --early-stopping \
    --num-return --model --draft --medusa; do
    check "generate --help lists $flag" grep -q -- "^  $flag" "$tmp/help"
done
gen() { "$specula" generate --model "$m" --tokens 1,2,3 --method mtp --k 3 --max-tokens 24 --no-eos --ids "$@"; }
gen --temperature 0.9 --seed 5 --json >"$tmp/default"
gen --temperature 0.9 --seed 5 --json --mtp-sample >"$tmp/sampled"
gen --temperature 0.9 --seed 5 --json --mtp-argmax >"$tmp/argmax"
strip() { sed 's/"ttft_s": [^,]*,//; s/"decode_s": [^,]*,//; s/"decode_tokens_per_s": [^,}]*//' "$1"; }
check "MTP above temperature 0 drafts sampled by default" cmp -s <(strip "$tmp/default") <(strip "$tmp/sampled")
check "--mtp-argmax is another method" test "$(strip "$tmp/default")" != "$(strip "$tmp/argmax")"
gen --temperature 0 --json >"$tmp/cold"
gen --temperature 0 --json --mtp-argmax >"$tmp/cold-argmax"
check "MTP at temperature 0 drafts its argmax by default" cmp -s <(strip "$tmp/cold") <(strip "$tmp/cold-argmax")
# the CPU engine's tokens do not depend on its thread count (its products and its DeltaNet heads split across
# threads compute every output the same way)
for method in sample spec mtp beam; do
    sampling=(--temperature 0.9 --seed 7)
    [ "$method" = beam ] && sampling=(--beams 3) # beam scores raw log-probabilities: no temperature
    for t in 1 2 3; do
        "$specula" generate --model "$m" --tokens 1,2,3 --method "$method" "${sampling[@]}" --max-tokens 24 --no-eos \
            --ids --json --backend cpu --threads "$t" >"$tmp/threads-$t" 2>"$tmp/threads-$t.err"
        check "generate --method $method --threads $t: tokens out" grep -q '"tokens"' "$tmp/threads-$t"
    done
    check "generate --method $method: the same tokens at 1 and 2 threads" \
        cmp -s <(strip "$tmp/threads-1") <(strip "$tmp/threads-2")
    check "generate --method $method: 3 threads as 1" cmp -s <(strip "$tmp/threads-1") <(strip "$tmp/threads-3")
done
expect_error "--mtp-argmax needs --method mtp" 2 "--mtp-argmax only applies to --method mtp" \
    generate --model "$m" --tokens 1,2 --method spec --mtp-argmax
expect_error "--rule exact-norepl on a chain" 2 "applies to trees only" \
    generate --model "$m" --tokens 1,2 --method mtp --rule exact-norepl
# trees of drafts: --tree-shape for spec and mtp; at temperature 0 the greedy tokens; bench names the tree
expect_error "--tree-shape with --k" 2 "--k and --tree-shape both set the depth" \
    generate --model "$m" --tokens 1,2 --method spec --k 3 --tree-shape 2,1
expect_error "--tree-shape needs spec or mtp" 2 "--tree-shape only applies to --method spec and mtp" \
    generate --model "$m" --tokens 1,2 --method lookup --tree-shape 2,1
expect_error "--tree-shape with a bad list" 2 "--tree-shape '2,,1'" \
    generate --model "$m" --tokens 1,2 --method spec --tree-shape 2,,1
"$specula" generate --model "$m" --tokens 1,2,3 --method greedy --max-tokens 24 --no-eos --ids >"$tmp/greedy" 2>&1
for t in "spec --tree-shape 2,2,1" "mtp --tree-shape 3,1 --rule exact-norepl" "spec --tree-budget 6 --k 3" \
    "mtp --tree-budget 5 --k 3"; do
    "$specula" generate --model "$m" --tokens 1,2,3 --method $t --temperature 0 --max-tokens 24 --no-eos --ids \
        >"$tmp/tree" 2>&1
    check "generate --method $t at temperature 0: the greedy tokens" cmp -s <(sed -n 1p "$tmp/greedy") \
        <(sed -n 1p "$tmp/tree")
done
"$specula" bench "$m" --runs 1 --tokens 8 --temperature 0.9 --method spec --tree-shape 2,2 --cost-reps 1 \
    >"$tmp/bench-tree" 2>&1
check "bench --method spec --tree-shape 2,2" \
    grep -qE "^spec .*spec tree 2,2 \(6 nodes\), exact-norepl rule$" "$tmp/bench-tree"
check "bench --tree-shape: the tree's 7 nodes in the cost model" grep -qE "^spec +- +[0-9.]+ +7 " "$tmp/bench-tree"
"$specula" bench "$m" --runs 1 --tokens 8 --temperature 0.9 --method spec --tree-budget 5 --k 3 --cost-reps 1 \
    >"$tmp/bench-dyntree" 2>&1
check "bench --method spec --tree-budget 5" \
    grep -qE "^spec .*spec tree dynamic depth 3 \(5 nodes\), exact-norepl rule$" "$tmp/bench-dyntree"
check "bench --tree-budget: the budget's 6 nodes in the cost model" grep -qE "^spec +- +[0-9.]+ +6 " "$tmp/bench-dyntree"
# the table as CSV: a header, then a row per method, a label with commas quoted; the share of rounds that drafted
"$specula" bench "$m" --runs 1 --tokens 8 --temperature 0.9 --method spec --cost-reps 1 --csv >"$tmp/bench.csv" 2>/dev/null
check "bench --csv: the header" grep -q '^method,what,backend,runs,tokens,temperature,tokens_per_s,tokens_per_pass,drafted_share,' "$tmp/bench.csv"
check "bench --csv: plain decoding, no drafted share" grep -qE '^sample,sample,[a-z]+,1,8,0.9,[0-9.e+]+,1,,' "$tmp/bench.csv"
check "bench --csv: the method's label quoted, its drafted share" grep -qE '^spec,"spec k=4, exact rule",[a-z]+,1,8,0.9,[0-9.e+]+,[0-9.]+,(0\.[0-9]+|1),' "$tmp/bench.csv"
"$specula" generate --model "$m" --tokens 1,2,3 --method spec --rule typical --temperature 0.8 --max-tokens 8 \
    >"$tmp/typ" 2>&1
check "--rule typical on a draft model's chain" test $? -eq 0

# bench: every row says what it ran, the MTP draft mode as generate resolves it
"$specula" bench "$m" --runs 1 --tokens 8 --temperature 0.9 >"$tmp/bench" 2>&1
check "bench exits 0" test $? -eq 0
check "bench's MTP row: sampled drafts above temperature 0" grep -qE "^mtp .*mtp k=4, sampled drafts, exact rule$" "$tmp/bench"
check "bench's plain row at temperature 0.9 is sampling" grep -qE "^sample " "$tmp/bench"
check "bench's draft row" grep -qE "^spec .*spec k=4, exact rule$" "$tmp/bench"
check "bench's prompt-lookup row" grep -qE "^lookup .*lookup k=4, ngram 3, exact rule$" "$tmp/bench"
"$specula" bench "$m" --runs 1 --tokens 8 --method lookup --ngram 2 --k 3 --cost-reps 1 >"$tmp/bench4" 2>&1
check "bench --method lookup --ngram 2 --k 3" grep -qE "^lookup .*lookup k=3, ngram 2, exact rule$" "$tmp/bench4"
check "bench --method lookup: in the cost model (m = k + 1)" grep -qE "^lookup +([0-9.]+|-) +[0-9.]+ +4 " "$tmp/bench4"
if [ -f models/tiny-shakespeare/model.safetensors ]; then # --prompt needs a tokenizer beside the model
    "$specula" bench --runs 1 --tokens 8 --method lookup --cost-reps 0 --prompt "To be, or not to be: to be" \
        --json >"$tmp/bench5" 2>&1
    check "bench --prompt TEXT: the encoded prompt's length" grep -qE '"prompt_tokens": [0-9]+, ' "$tmp/bench5"
fi
"$specula" bench "$m" --runs 1 --tokens 8 --temperature 0.9 --mtp-argmax --k 2 --method mtp >"$tmp/bench2" 2>&1
check "bench --method mtp --mtp-argmax --k 2" grep -qE "^mtp .*mtp k=2, argmax drafts, exact rule$" "$tmp/bench2"
check "bench --method mtp: plain decoding and MTP only" \
    test "$(sed -E '/^method +decode tok/q' "$tmp/bench2" | grep -cE '^(greedy|sample|mtp|spec|medusa) ')" -eq 2
check "bench --method mtp: the same two rows in the table of the runs' time and drafts" \
    test "$(sed -En '/^method +decode tok/,/^engine B\/token/p' "$tmp/bench2" | grep -cE '^(greedy|sample|mtp|spec|medusa) ')" -eq 2
expect_error "bench has no beam row" 2 "--beams does not apply here" bench "$m" --beams 2
expect_error "bench sets its own budget" 2 "--max-tokens does not apply here" bench "$m" --max-tokens 5
expect_error "bench --method sample" 2 "bench compares a method that drafts" bench "$m" --method sample
# bench --plain --json (what make bench-peers reads): the plain row alone, prefill and decode rates apart
"$specula" bench "$m" --runs 1 --tokens 8 --prompt-tokens 6 --plain --json >"$tmp/bench3" 2>&1
check "bench --plain --json exits 0" test $? -eq 0
check "bench --plain --json: one greedy row with both rates" grep -qE \
    '"prompt_tokens": 6, .*"rows": \[\{"method": "greedy", .*"prefill_tokens_per_s": [0-9.e+]+, "decode_tokens_per_s": [0-9.e+]+, [^{]*\}\]\}$' \
    "$tmp/bench3"
expect_error "bench --plain with --method" 2 "give --plain or --method, not both" bench "$m" --plain --method mtp
check "bench --plain: no cost model unless asked" bash -c "! grep -q pass_costs '$tmp/bench3'"
# bench's cost model: the pass costs (one node, k + 1, up to 64), the proposer steps, a finite prediction beside
# the measured speed-up of every speculative row, the time per token part by part, every flagged row explained;
# on both backends. Finite: printed as digits ("nan", "inf" and "-" do not match). No timing is asserted.
num='[0-9]+\.[0-9]+'
jnum='[0-9.]+(e[-+][0-9]+)?'
for backend in cpu reference; do
    out=$tmp/bench-cost-$backend
    "$specula" bench "$m" --backend $backend --runs 1 --tokens 8 --cost-reps 2 >"$out" 2>&1
    check "bench --backend $backend --cost-reps 2 exits 0" test $? -eq 0
    check "bench ($backend): pass cost of one node, ratio 1" grep -qE "^ +1 +$num +1\.00$" "$out"
    check "bench ($backend): pass cost of k + 1 = 5 nodes" grep -qE "^ +5 +$num +$num +<- k \+ 1" "$out"
    check "bench ($backend): pass cost of 64 nodes" grep -qE "^ +64 +$num +$num$" "$out"
    check "bench ($backend): the draft's step" grep -qE "^draft model step, 1 position +$num +$num$" "$out"
    check "bench ($backend): the MTP's step" grep -qE "^MTP module step, 1 position +$num +$num$" "$out"
    for r in mtp spec; do
        check "bench ($backend): $r measured and predicted" \
            grep -qE "^$r +$num +$num-$num +$num +[0-9]+%( +[0-9.e+]+){3} +${num}x +${num}-${num}x +${num}x\*? +$r k=4" "$out"
        check "bench ($backend): $r in the cost model" \
            grep -qE "^$r +$num +$num +5 +$num +$num +${num}x +${num}x +[-+][0-9]+%( \*)?$" "$out"
        check "bench ($backend): $r time per token" grep -qE "^$r( +$num){9}$" "$out"
    done
    check "bench ($backend): every flagged row explained" test "$(grep -cE '^(mtp|spec) .*%( \*)$' "$out")" -eq \
        "$(grep -cE '^  (mtp|spec) [-+][0-9]+ %: plain decoding .* Most: ' "$out")"
done
"$specula" bench "$m" --runs 1 --tokens 8 --cost-reps 2 --json >"$tmp/bench5" 2>&1
check "bench --json with costs exits 0" test $? -eq 0
check "bench --json: the pass costs" grep -qE \
    "\"pass_costs\": \{\"reps\": 2, \"k\": 4, \"passes\": \[\{\"m\": 1, \"ms\": $jnum, \"ratio\": 1\}, .*\{\"m\": 5, \"ms\": $jnum, \"ratio\": $jnum\}" \
    "$tmp/bench5"
check "bench --json: the steps" grep -qE "\"draft_step_ms\": $jnum, \"mtp_step_ms\": $jnum, \"medusa_round_ms\": null" \
    "$tmp/bench5"
for r in mtp spec; do
    check "bench --json: $r predicted and measured" grep -qE \
        "\{\"method\": \"$r\", [^}]*\"predicted_speedup\": $jnum, \"measured_speedup\": $jnum, \"alpha\": $jnum, \"verify_nodes\": 5, \"pass_ms_per_token\": $jnum, \"pass_at_median_ms_per_token\": $jnum, \"proposer_ms_per_token\": $jnum, \"prefill_ms_per_token\": $jnum, \"other_ms_per_token\": -?$jnum\}" \
        "$tmp/bench5"
done
# --k-sweep: a row per k for each chain method, MTP at both draft kinds above temperature 0, each with its spread
# and its run-by-run speed-up, and the cost model's pass of every k + 1
"$specula" bench "$m" --backend cpu --runs 2 --tokens 8 --cost-reps 1 --k-sweep 1,3 --temperature 1 >"$tmp/sweep" 2>&1
check "bench --k-sweep exits 0" test $? -eq 0
for k in 1 3; do
    check "bench --k-sweep: spec at k=$k, with its spread and run-by-run range" \
        grep -qE "^spec +$num +$num-$num +$num .* +${num}x +${num}-${num}x +${num}x\*? +spec k=$k, " "$tmp/sweep"
    for kind in argmax sampled; do
        check "bench --k-sweep: mtp k=$k with $kind drafts" grep -qE "^mtp .* mtp k=$k, $kind drafts" "$tmp/sweep"
    done
    check "bench --k-sweep: lookup at k=$k" grep -qE "^lookup .* lookup k=$k, " "$tmp/sweep"
    check "bench --k-sweep: a pass of k + 1 = $((k + 1)) nodes timed" grep -qE "^ +$((k + 1)) +$num +$num" "$tmp/sweep"
done
check "bench --k-sweep: plain decoding has no run-by-run range" grep -qE "^sample +$num +$num-$num .* 1\.00x +- " \
    "$tmp/sweep"
"$specula" bench "$m" --backend cpu --runs 2 --tokens 8 --cost-reps 0 --k-sweep 2 --method mtp --json >"$tmp/sweep.json" 2>&1
check "bench --k-sweep --json: the spread of each row" grep -qE \
    "\{\"method\": \"mtp\", [^}]*\"tokens_per_s_min\": $jnum, \"tokens_per_s_max\": $jnum, \"speedup_run_min\": $jnum, \"speedup_run_max\": $jnum" \
    "$tmp/sweep.json"
for bad in "0" "1,1" "1,x" "33" "1,2,3,4,5,6,7,8,9" ""; do
    "$specula" bench "$m" --backend cpu --k-sweep "$bad" >"$tmp/sweep-bad" 2>&1
    check "bench --k-sweep '$bad' is refused (exit 2, one line naming it)" \
        sh -c "test $? -eq 2 && grep -q -- '--k-sweep' '$tmp/sweep-bad' && test \$(wc -l <'$tmp/sweep-bad') -eq 1"
done
"$specula" bench "$m" --backend cpu --k-sweep 1,2 --k 3 >"$tmp/sweep-bad" 2>&1
check "bench --k-sweep with --k is refused" sh -c "test $? -eq 2 && grep -q 'without --k' '$tmp/sweep-bad'"
"$specula" bench "$m" --runs 1 --tokens 8 --cost-reps 0 --method spec >"$tmp/bench6" 2>&1
check "bench --cost-reps 0: no prediction" grep -qE "^spec .*x +- +spec k=4" "$tmp/bench6"
check "bench --cost-reps 0: no pass costs" bash -c "! grep -q '^pass cost' '$tmp/bench6'"
expect_error "bench --cost-reps -1" 2 "cost-reps" bench "$m" --cost-reps -1

# plot: the measured MTP points name their draft mode, as generate resolves it
"$specula" plot --model "$m" --out "$tmp/plots" --term none --prompts 1 --tokens 6 --temperatures 0,0.9 \
    >"$tmp/plot.out" 2>"$tmp/plot.err"
check "plot exits 0" test $? -eq 0
check "plot names MTP's argmax drafts at temperature 0" grep -q "measuring MTP .*T=0 .*drafts argmax" "$tmp/plot.err"
check "plot names MTP's sampled drafts at temperature 0.9" grep -q "measuring MTP .*T=0.9 .*drafts sampled" "$tmp/plot.err"
check "measured.dat's drafts column" grep -qE '^"MTP T=0.9" mtp .* sampled [0-9.]+$' "$tmp/plots/measured.dat"
expect_error "plot measures at --temperatures" 2 "--temperature does not apply here" plot --model "$m" --temperature 1

# verify: every case is written in generate's flags
"$specula" verify --list >"$tmp/list"
check "verify --list shows each case's flags" grep -q -- "--method mtp --k 2 --temperature 1 --mtp-argmax" "$tmp/list"
check "verify names the MTP draft mode" grep -q "mtp sampled k=3 T=0.6 L=5" "$tmp/list"

echo "method-cli: $pass passed, $fail failed"
echo "$pass $fail 0" >"$counts"
[ "$fail" -eq 0 ]
