#!/usr/bin/env bash
# exercises.sh BUILD COUNTS — every course exercise's checker, both ways: the
# reference implementation (the solution) must pass, and the untouched
# starter file must compile, link and then fail some of its tests (a build
# error does not count), so no checker is blind. Writes "passed failed skipped" to COUNTS.
set -u
build=${1:-build}
counts=${2:-/dev/null}
pass=0 fail=0
log=$(mktemp "${TMPDIR:-/tmp}/specula-exercises-XXXXXX")
trap 'rm -f "$log"' EXIT

expect() { # expect WHAT PASS|FAIL EX [FILE]: the checker ran the tests and said PASS or FAIL
    local what=$1 want=$2
    shift 2
    make --no-print-directory -s exercise BUILD="$build" EX="$1" ${2:+FILE="$2"} >"$log" 2>&1
    local rc=$? verdict
    verdict=$(sed -n 's/^exercise [^ ]*: \(PASS\|FAIL\)$/\1/p' "$log")
    local ok=0
    case $want/$verdict/$rc in PASS/PASS/0) ok=1 ;; FAIL/FAIL/0) ;; FAIL/FAIL/*) ok=1 ;; esac
    if [ $ok = 1 ]; then
        pass=$((pass + 1))
        echo "PASS exercise $1: $what"
    else
        fail=$((fail + 1))
        echo "FAIL exercise $1: $what (checker said '${verdict:-nothing}', exit $rc)"
        sed 's/^/    /' "$log" | head -30
    fi
}

for dir in lessons/exercises/[0-9]*/; do
    n=$(basename "$dir" | sed 's/-.*//; s/^0*//')
    expect "the reference passes" PASS "$n" reference
    expect "the starter fails its tests" FAIL "$n"
done

echo "exercises: $pass passed, $fail failed"
echo "$pass $fail 0" >"$counts"
[ "$fail" -eq 0 ]
