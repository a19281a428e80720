#!/usr/bin/env bash
# verify-docs.sh BUILD COUNTS — docs/verification.md's `specula verify`
# tables against the code, cheaply (about a second, no draws):
#   - the plan blocks (cases, planned draws, controls, seeds) must be what
#     `specula verify --plan [--all]` prints now, and the coverage table
#     what `specula verify --coverage --all` prints;
#   - each recorded run (tools/verify-docs.sh) must have run the current
#     plan: the plan checksum in its header is that of `--plan` with its
#     options now; and the default run's recorded CPU time must be within
#     the budget of 180 s.
# The runs' p-values and times are recorded output, dated, not recomputed.
# On a mismatch: `make verify-docs`. Writes "passed failed skipped" to COUNTS.
set -u
build=${1:-build}
counts=${2:-/dev/null}
spec=$build/specula
doc=$(cd "$(dirname "$0")/../.." && pwd)/docs/verification.md
pass=0 fail=0
tmp=$(mktemp -d "${TMPDIR:-/tmp}/specula-verify-docs-XXXXXX")
trap 'rm -rf "$tmp"' EXIT

ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL verify-docs: $* (make verify-docs rewrites the tables)"; }

# inner NAME: the lines of NAME's block, without the markers and the fences
inner() {
    awk -v name="$1" '
        $0 == "<!-- verify-docs:" name " end -->" { on = 0 }
        on && !/^```/ { print }
        $0 == "<!-- verify-docs:" name " begin -->" { on = 1 }' "$doc"
}

# printed NAME ARGS...: the block is what `specula verify ARGS` prints now
printed() {
    local name=$1
    shift
    "$spec" verify "$@" >"$tmp/now" 2>"$tmp/err" || { bad "specula verify $*: $(cat "$tmp/err")"; return; }
    inner "$name" >"$tmp/doc"
    if [ ! -s "$tmp/doc" ]; then
        bad "$doc has no '$name' block"
    elif diff -u "$tmp/doc" "$tmp/now" >"$tmp/diff"; then
        ok
    else
        bad "the '$name' table differs from \`specula verify $*\`:"
        head -20 "$tmp/diff"
    fi
}

# run NAME MAX_CPU ARGS...: the recorded run used today's plan (and took at most MAX_CPU s)
run() {
    local name=$1 max=${2:-}
    shift 2
    inner "$name" >"$tmp/block"
    local header
    header=$(head -2 "$tmp/block" | tr '\n' ' ')
    if ! grep -q '^Measured 20[0-9][0-9]-[0-1][0-9]-[0-3][0-9] on ' "$tmp/block"; then
        bad "the '$name' block has no 'Measured DATE on MACHINE' line"
        return
    fi
    local sum recorded cpu
    sum=$("$spec" verify --plan "$@" | cksum | cut -d' ' -f1)
    recorded=$(sed -n 's/.*plan checksum \([0-9]*\)\..*/\1/p' <<<"$header")
    if [ "$recorded" = "$sum" ]; then ok; else bad "the '$name' run was recorded with plan $recorded, the code plans $sum now"; fi
    grep -q 'exit status 0;' <<<"$header" && ok || bad "the recorded '$name' run did not pass"
    if [ -n "$max" ]; then
        cpu=$(sed -n 's/.* wall, \([0-9.]*\) s CPU.*/\1/p' <<<"$header")
        if [ -n "$cpu" ] && awk -v c="$cpu" -v m="$max" 'BEGIN { exit !(c <= m) }'; then
            ok
        else
            bad "the '$name' run took ${cpu:-?} s CPU, above the budget of $max s"
        fi
    fi
}

printed plan --plan
printed plan-all --plan --all
printed coverage --coverage --all
run run 180
run run-engine "" --backend cpu --seed 2
if grep -q '^<!-- verify-docs:run-all begin -->$' "$doc"; then run run-all "" --all; fi

echo "verify-docs: $pass passed, $fail failed"
echo "$pass $fail 0" >"$counts"
[ "$fail" -eq 0 ]
