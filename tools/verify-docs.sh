#!/usr/bin/env bash
# verify-docs.sh BUILD [DOC [BLOCK...]] — `make verify-docs`: rewrites the tables of
# docs/verification.md that `specula verify` produces, each between the
# marker lines <!-- verify-docs:NAME begin --> and <!-- verify-docs:NAME end -->:
#   coverage        `specula verify --coverage --all`: what each row covers (a
#                   markdown table, no draws)
#   plan, plan-all  `specula verify --plan [--all]`: the cases, their planned
#                   draws, their controls' and their seeds (no draws; what
#                   tests/parts/verify-docs.sh compares with the code)
#   run             `specula verify`, the default run, timed
#   run-engine      `specula verify --backend cpu --seed 2`, timed
#   run-all         `specula verify --all`, timed: only with VERIFY_DOCS_ALL=1
#                   (the long grid), else left as recorded
# BLOCKs name the timed blocks to rerun (e.g. run-engine after a change of
# the engine's controls); the plans and the coverage table are always rewritten.
# A timed block opens with the date, the machine (uname -m, the CPU model
# from /proc/cpuinfo, the cores), the load, wall and CPU time, and the
# checksum of the plan it ran (so the test can tell a recorded run from a
# stale one). Exits 1 when a run fails (its table is still recorded).
set -euo pipefail
build=${1:-build}
doc=${2:-docs/verification.md}
wanted=" ${*:3} "
# wanted NAME: block NAME is to be run (every block when none is named)
wanted() { [ "$wanted" = "  " ] || [[ $wanted == *" $1 "* ]]; }
spec=$build/specula
[ -x "$spec" ] || { echo "verify-docs: $spec is missing (make)" >&2; exit 2; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/specula-verify-docs-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
status=0

# block NAME FILE: the lines between NAME's markers become FILE.
block() {
    local name=$1 file=$2
    grep -q "^<!-- verify-docs:$name begin -->$" "$doc" || { echo "verify-docs: $doc has no '$name' block" >&2; exit 2; }
    awk -v name="$name" -v file="$file" '
        $0 == "<!-- verify-docs:" name " begin -->" { print; while ((getline line < file) > 0) print line; skip = 1; next }
        $0 == "<!-- verify-docs:" name " end -->" { skip = 0 }
        !skip' "$doc" >"$tmp/doc"
    cat "$tmp/doc" >"$doc"
}

# fenced FILE: FILE inside a ```text fence
fenced() { printf '```text\n'; cat "$1"; printf '```\n'; }

machine() {
    local cpu
    cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -1)
    echo "$(uname -m), ${cpu:-CPU model unknown}, $(nproc) cores"
}

# timed NAME PLAN_ARGS -- RUN_ARGS: runs `specula verify RUN_ARGS --quiet` timed into block NAME.
timed() {
    local name=$1
    shift
    local plan_args=() run_args=()
    while [ "$1" != -- ]; do plan_args+=("$1"); shift; done
    shift
    run_args=("$@")
    "$spec" verify --plan "${plan_args[@]}" >"$tmp/$name.plan"
    local sum load rc=0 what="specula verify${run_args[*]:+ ${run_args[*]}}"
    sum=$(cksum <"$tmp/$name.plan" | cut -d' ' -f1)
    load=$(cut -d' ' -f1 /proc/loadavg)
    echo "verify-docs: $what (plan $sum)" >&2
    local TIMEFORMAT='%R %U %S'
    { time "$spec" verify "${run_args[@]}" --quiet >"$tmp/$name.out" 2>"$tmp/$name.err"; } 2>"$tmp/$name.time" || rc=$?
    read -r wall user sys <"$tmp/$name.time"
    local cpu
    cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.1f", u + s }')
    {
        echo "Measured $(date -u +%Y-%m-%d) on $(machine), load average $load at the start:"
        echo "\`$what\` took $wall s wall, $cpu s CPU (user + sys); exit status $rc; plan checksum $sum."
        echo
        fenced "$tmp/$name.out"
        [ -s "$tmp/$name.err" ] && { echo; echo "stderr:"; fenced "$tmp/$name.err"; }
    } >"$tmp/$name.block"
    block "$name" "$tmp/$name.block"
    echo "verify-docs: $name: $wall s wall, $cpu s CPU, exit status $rc" >&2
    [ "$rc" -eq 0 ] || status=1
}

"$spec" verify --plan >"$tmp/plan"
fenced "$tmp/plan" >"$tmp/plan.block"
block plan "$tmp/plan.block"
"$spec" verify --plan --all >"$tmp/plan-all"
fenced "$tmp/plan-all" >"$tmp/plan-all.block"
block plan-all "$tmp/plan-all.block"
"$spec" verify --coverage --all >"$tmp/coverage"
block coverage "$tmp/coverage"

if wanted run; then timed run --; fi
if wanted run-engine; then timed run-engine --backend cpu --seed 2 -- --backend cpu --seed 2; fi
if [ "${VERIFY_DOCS_ALL:-0}" = 1 ] && wanted run-all; then timed run-all --all -- --all; fi

echo "verify-docs: $doc rewritten" >&2
exit $status
