#!/usr/bin/env bash
# audit-cli.sh BUILD COUNTS — checks the `specula audit` command line on
# the embedded model at a small size: the three sources of arms (specula's
# decoding, sample files, an adapter program) give the same report for the
# same draws; an adapter that fails or prints too little is an error (exit
# 4), never a short sample; bad usage exits 2 with one line. (The
# statistics are tested in tests/stat/test_audit.c.) Writes "passed failed
# skipped" to COUNTS.
set -u
build=${1:-build}
counts=${2:-/dev/null}
spec=$build/specula
pass=0 fail=0
tmp=$(mktemp -d "${TMPDIR:-/tmp}/specula-audit-cli-XXXXXX")
trap 'rm -rf "$tmp"' EXIT

check() { # check NAME CONDITION...
    local name=$1
    shift
    if "$@"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL audit-cli: $name"; fi
}

# expect_status NAME STATUS PATTERN ARGS...: exits with STATUS after one line on stderr matching PATTERN
expect_status() {
    local name=$1 want=$2 pattern=$3
    shift 3
    "$build/tests/within" 120 --stall 30 "$spec" audit --quiet "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
    local rc=$?
    if [ $rc -eq "$want" ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q -- "$pattern" "$tmp/err"; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        echo "FAIL audit-cli: $name: exit $rc (want $want), stderr: $(head -3 "$tmp/err")"
    fi
}

"$spec" audit --help >"$tmp/help"
check "--help exits 0" test $? -eq 0
for flag in --engine-cmd --samples-on --samples-off --samples-control --save-samples --samples --length --prompt \
    --tokens --control-temperature --ban-tokens --no-law --alpha --delta --json --quiet --method --backend; do
    check "--help lists $flag" grep -q -- "$flag" "$tmp/help"
done

expect_status "--length 0" 2 "--length" --length 0
expect_status "temperature 0" 2 "must be above 0" --temperature 0
expect_status "beam" 2 "deterministic" --method beam
expect_status "one sample file" 2 "all three" --samples-on x
expect_status "--method with an adapter" 2 "the engine decides" --engine-cmd true --method spec
expect_status "unknown flag" 2 "unknown option '--bogus'" --bogus
expect_status "equal control" 2 "must differ" --temperature 0.8 --control-temperature 0.8
expect_status "--ban-tokens outside V" 2 "ban-tokens" --ban-tokens 100000
expect_status "--max-tokens refused" 2 "--length" --max-tokens 5

common=(--tokens 1,2,3 --temperature 0.8 -n 100 --length 4 --seed 7 --json)
"$spec" audit --quiet "${common[@]}" --method spec --k 2 --save-samples "$tmp/arms" >"$tmp/own.json" 2>"$tmp/err"
own=$?
check "specula's arms: passed or underpowered (0 or 3), got $own" test $own -eq 0 -o $own -eq 3
check "specula's arms: the JSON closes" test "$(tail -c 2 "$tmp/own.json")" = "}"
check "specula's arms: saved" test "$(wc -l <"$tmp/arms/control.txt")" -eq 100
check "specula's arms: four tokens a line" test "$(awk '{print NF}' "$tmp/arms/on.txt" | sort -u)" = 4

# the statistics alone, from the report
stats() { grep -o '"tests": .*' "$1" | sed 's/"draw_seconds[^,]*,//; s/"law_seconds[^,]*,//'; }
"$spec" audit --quiet "${common[@]}" --samples-on "$tmp/arms/on.txt" --samples-off "$tmp/arms/off.txt" \
    --samples-control "$tmp/arms/control.txt" >"$tmp/files.json" 2>"$tmp/err"
check "sample files: the same exit status" test $? -eq $own
check "sample files: the same tests" test "$(stats "$tmp/files.json")" = "$(stats "$tmp/own.json")"

head -n 60 "$tmp/arms/off.txt" >"$tmp/off60.txt"
"$spec" audit --quiet --tokens 1,2,3 --length 4 --json --samples-on "$tmp/arms/on.txt" --samples-off "$tmp/off60.txt" \
    --samples-control "$tmp/arms/control.txt" >"$tmp/short.json" 2>"$tmp/err"
check "sample files without -n: the shortest file's count" grep -q '"n": 60,' "$tmp/short.json"
expect_status "sample files shorter than -n" 2 "has 60 samples" --tokens 1,2,3 --length 4 -n 100 \
    --samples-on "$tmp/arms/on.txt" --samples-off "$tmp/off60.txt" --samples-control "$tmp/arms/control.txt"

# an adapter program that replays the saved arms: the command line it is given, and its lines
cat >"$tmp/replay.sh" <<'SH'
#!/bin/sh
# replay.sh DIR --arm A --n N ...: the first N lines of DIR/A.txt; the arguments it was given to DIR/args.A
dir=$1; shift
echo "$@" >"$dir/args.$2"
head -n "$4" "$dir/$2.txt"
SH
chmod +x "$tmp/replay.sh"
"$spec" audit --quiet "${common[@]}" --engine-cmd "$tmp/replay.sh $tmp/arms" >"$tmp/cmd.json" 2>"$tmp/err"
check "adapter: the same exit status" test $? -eq $own
check "adapter: the same tests" test "$(stats "$tmp/cmd.json")" = "$(stats "$tmp/own.json")"
check "adapter: told the arm and its settings" grep -q -- '^--arm control --n 100 --length 4 --temperature 1.2 --top-k 0 --top-p 1 --min-p 0 --seed [0-9]* --prompt-ids 1,2,3$' "$tmp/arms/args.control"
check "adapter: distinct seed ranges" test "$(cut -d' ' -f16 "$tmp/arms"/args.* | sort -u | wc -l)" -eq 3

expect_status "an adapter that fails" 4 "engine command failed" "${common[@]}" --engine-cmd false
expect_status "an adapter that prints too little" 4 "printed 1 samples" "${common[@]}" --engine-cmd "echo 1 2 3 4 #"
expect_status "an adapter that prints garbage" 4 "found 'x'" "${common[@]}" --engine-cmd "echo 1 2 x 4 #"

# an on arm that never drafts tests plain sampling, not its method: never "passed" (exit 3, the counts said); the
# size of change the two-sample tests can see is stated
"$spec" audit --quiet --backend cpu --method bigram --bigram-min 1000000 -n 120 --length 6 --no-law >"$tmp/idle" 2>&1
check "an arm that never drafts: exit 3" test $? -eq 3
check "...verdict untested, with the arm's counts" sh -c "grep -q '^verdict: untested' '$tmp/idle' && grep -q '^on arm: 0 of [0-9]* rounds drafted' '$tmp/idle'"
check "...and the size of change it could see" grep -q '^power: at n = 120 an arm, a position whose law on and off differ by TV >= 0\.[0-9]*' "$tmp/idle"
"$spec" audit --quiet --backend cpu --method spec --k 2 -n 120 --length 6 --no-law --json >"$tmp/drafts.json" 2>&1
check "the JSON: the on arm's drafting and the detectable change" sh -c "grep -q '\"drafting\": {\"rounds\": [1-9]' '$tmp/drafts.json' && grep -q '\"detectable_tv\": 0\.' '$tmp/drafts.json'"

echo "audit-cli: $pass passed, $fail failed"
echo "$pass $fail 0" >"$counts"
[ $fail -eq 0 ]
