#!/usr/bin/env bash
# exercises.sh BUILD COUNTS — every course exercise's checker, all ways: the
# reference implementation (the solution) must pass; the untouched starter
# file must compile, link and then fail some of its tests (a build error
# does not count), so no checker is blind; and so must each of the
# exercise's wrong solutions (wrong/*.c, at least three, each named in the
# checker's source with its mistake), so no checker is toothless. A wrong
# solution is run on the one suite (and test case: SUITE/CASE) its "Caught
# by:" line names, which keeps this part quick; failing a part of the
# checker fails the checker. The exercises run side by side, as many at a
# time as the machine has cores (at most 4): each checker builds in its own
# folder (BUILD/exercises/NAME), and one exercise's checks stay in order.
# Their reports are printed in exercise order. Writes "passed failed
# skipped" to COUNTS.
set -u
build=${1:-build}
counts=${2:-/dev/null}
out=$(mktemp -d "${TMPDIR:-/tmp}/specula-exercises-XXXXXX")
trap 'rm -rf "$out"' EXIT
jobs=$(nproc 2>/dev/null || echo 1)
[ "$jobs" -le 4 ] || jobs=4

expect() { # expect WHAT PASS|FAIL EX [FILE [SUITE [CASE]]]: the checker ran the tests and said PASS or FAIL
    local what=$1 want=$2
    shift 2
    make --no-print-directory -s exercise BUILD="$build" EX="$1" ${2:+FILE="$2"} ${3:+SUITE="$3"} ${4:+CASE="$4"} >"$log" 2>&1
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

broken() { # broken EX WHAT: a wrong solution that is not set up as this part expects
    fail=$((fail + 1))
    echo "FAIL exercise $1: $2"
}

# check_exercise DIR: every check of one exercise, in order; its report on stdout, "passed failed" in the last
# line of DIR's counts file.
check_exercise() {
    local dir=$1 pass=0 fail=0 n w mistake caught suite tcase sources n_wrong
    local log=$out/$(basename "$dir").log
    n=$(basename "$dir" | sed 's/-.*//; s/^0*//')
    expect "the reference passes" PASS "$n" reference
    expect "the starter fails its tests" FAIL "$n"
    # the checker's source: its own test files, or exercise.conf when it has none
    sources=$(ls "$dir"test_*.c 2>/dev/null || echo "$dir"exercise.conf)
    n_wrong=0
    for w in "$dir"wrong/*.c; do
        [ -f "$w" ] || continue
        n_wrong=$((n_wrong + 1))
        mistake=$(sed -n 's/^ \* Mistake: //p' "$w" | head -1)
        caught=$(sed -n 's/^ \* Caught by: \([A-Za-z0-9_/]*\).*/\1/p' "$w" | head -1) # SUITE or SUITE/CASE
        suite=${caught%%/*} tcase=
        [ "$caught" = "$suite" ] || tcase=${caught#*/}
        if [ -z "$mistake" ] || [ -z "$suite" ]; then
            broken "$n" "$w has no 'Mistake:' or no 'Caught by:' line"
        elif ! grep -q "$(basename "$w")" $sources; then
            broken "$n" "$(basename "$w") is not listed in the checker's source ($sources)"
        else
            expect "wrong $(basename "$w") fails ($mistake)" FAIL "$n" "$w" "$suite" "$tcase"
        fi
    done
    [ "$n_wrong" -ge 3 ] || broken "$n" "only $n_wrong wrong solutions in ${dir}wrong/ (at least 3)"
    echo "$pass $fail" >"$out/$(basename "$dir").counts"
}

# what every checker links, built once before they run side by side
if ! make --no-print-directory -s exercise-deps BUILD="$build" >"$out/deps.log" 2>&1; then
    echo "FAIL exercises: the checkers' objects do not build"
    sed 's/^/    /' "$out/deps.log" | head -30
    echo "0 1 0" >"$counts"
    exit 1
fi
running=0
for dir in lessons/exercises/[0-9]*/; do
    check_exercise "$dir" >"$out/$(basename "$dir").report" 2>&1 &
    running=$((running + 1))
    if [ "$running" -ge "$jobs" ]; then
        wait -n
        running=$((running - 1))
    fi
done
wait
pass=0 fail=0
for dir in lessons/exercises/[0-9]*/; do
    name=$(basename "$dir")
    cat "$out/$name.report"
    if [ -f "$out/$name.counts" ]; then
        read -r p f <"$out/$name.counts"
    else
        p=0 f=1
        echo "FAIL exercise $name: its checks did not finish"
    fi
    pass=$((pass + p)) fail=$((fail + f))
done

echo "exercises: $pass passed, $fail failed"
echo "$pass $fail 0" >"$counts"
[ "$fail" -eq 0 ]
