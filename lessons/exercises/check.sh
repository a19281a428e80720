#!/bin/sh
# check.sh — the checker behind `make exercise EX=N [FILE=path]`: builds the
# project's own test suites with the student's file standing in for the
# reference function(s), runs them, and says pass or fail. The reference
# stays linked, weakened, so the student's definitions win every call — the
# library's own callers included. With FILE=reference nothing is replaced:
# the reference is the solution and must pass.
# Exit status: 0 every test passed, 1 some test failed, 2 nothing could be
# tested (bad arguments, a compile or link error).
set -u

usage() {
    cat <<'USAGE'
usage: check.sh [--cc CC] [--cflags F] [--check-cflags F] [--libs L] [--harness OBJS] [--build DIR] [--objdir DIR] [--suite S] N [FILE|reference]
  N          the exercise number (lessons/exercises/NN-*/)
  FILE       the student's C file (default: the exercise's starter.c)
  reference  check the reference implementation itself
  --suite S  run only suite S of the exercise's suites (e.g. exercise_mtp_step,
             golden): a quicker first look; the verdict that counts is a full run
  --case C   run only the test cases named C (e.g. cuts) of those suites
make passes the compiler, the project's flags and libraries, --harness (the
test harness's objects, tools/make/tests.mk's HARNESS_SRC) and --objdir (the
build's object tree, for the test suites).
USAGE
}

here=$(cd "$(dirname "$0")" && pwd)
cc=cc cflags= check_cflags= libs= build=build objdir= only= tcase= harness=
while [ $# -gt 0 ]; do
    case $1 in
    --cc) cc=$2; shift 2 ;;
    --cflags) cflags=$2; shift 2 ;;
    --check-cflags) check_cflags=$2; shift 2 ;;
    --libs) libs=$2; shift 2 ;;
    --harness) harness=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --objdir) objdir=$2; shift 2 ;;
    --suite) only=$2; shift 2 ;;
    --case) tcase=$2; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    --*) echo "check.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
    *) break ;;
    esac
done
[ $# -ge 1 ] && [ $# -le 2 ] || { usage >&2; exit 2; }
[ -n "$objdir" ] || objdir=$build/obj
[ -n "$harness" ] || harness="$objdir/tests/harness.o $objdir/tests/fixtures.o"

case $1 in *[!0-9]* | '') echo "check.sh: EX must be a number, got '$1'" >&2; exit 2 ;; esac
num=$(printf '%02d' "$1")
exdir=$(ls -d "$here/$num"-*/ 2>/dev/null | head -1)
[ -n "$exdir" ] || { echo "check.sh: no exercise $1 (known: $(cd "$here" && ls -d [0-9]*/ | tr -d / | tr '\n' ' '))" >&2; exit 2; }
exdir=${exdir%/}
name=$(basename "$exdir")
file=${2:-lessons/exercises/$name/starter.c}

# exercise.conf sets: functions (what the student writes), reference (the
# source file that holds them), suites (project suites, "unit:accept"),
# tests (the exercise's own Check files, in its folder; may be empty).
functions= reference= suites= tests=
. "$exdir/exercise.conf"

work=$build/exercises/$name
rm -rf "$work" && mkdir -p "$work/gen"
die() { echo "exercise $name: $1" >&2; [ $# -lt 2 ] || sed -n '1,40s/^/    /p' "$2" >&2; exit 2; }

# The reference, compiled position-independent so that no call to a global
# function is resolved inside its own file (GCC neither inlines nor
# specialises an interposable function), then with the exercise's functions
# made weak: a strong definition from the student's object replaces every
# use of them.
refobj=
for src in $reference; do
    o=$work/$(basename "$src" .c).o
    $cc $cflags -fPIC -c "$src" -o "$o" >"$work/cc.log" 2>&1 || die "cannot compile $src" "$work/cc.log"
    for f in $functions; do objcopy --weaken-symbol="$f" "$o" || die "objcopy failed on $o"; done
    refobj="$refobj $o"
done

student=
if [ "$file" != reference ]; then
    [ -f "$file" ] || die "no such file: $file"
    student=$work/student.o
    $cc $cflags -c "$file" -o "$student" >"$work/cc.log" 2>&1 || die "$file does not compile" "$work/cc.log"
    for f in $functions; do
        nm "$student" | awk -v f="$f" '$2 == "T" && $3 == f {found = 1} END {exit !found}' ||
            die "$file does not define $f()"
    done
fi

# The runner, with a list of just this exercise's suites.
objs= groups=
for s in $suites; do
    group=${s%%:*} suite=${s#*:}
    src=tests/$group/test_$suite.c
    grep -q "^Suite \*${suite}_suite(void)" "$src" 2>/dev/null || die "$src does not define ${suite}_suite"
    echo "SUITE($group, $suite)" >>"$work/gen/suites.h"
    objs="$objs $objdir/tests/$group/test_$suite.o"
    case " $groups " in *" $group "*) ;; *) groups="$groups $group" ;; esac
done
for group in $groups; do # a group's helper files (no suite of their own, e.g. tests/stat/stat_common.c)
    for src in tests/$group/*.c; do
        grep -q "^Suite \*[A-Za-z0-9_]*_suite(void)" "$src" || objs="$objs $objdir/${src%.c}.o"
    done
done
for t in $tests; do
    tests/list-suites.sh unit "$exdir/$t" >>"$work/gen/suites.h"
    o=$work/$(basename "$t" .c).o
    $cc $cflags $check_cflags -Itests -c "$exdir/$t" -o "$o" >"$work/cc.log" 2>&1 || die "cannot compile $t" "$work/cc.log"
    objs="$objs $o"
done
if [ -n "$only" ] && ! grep -q "^SUITE([a-z]*, $only)\$" "$work/gen/suites.h"; then
    die "no suite '$only' among this exercise's suites ($(sed 's/^SUITE([a-z]*, \(.*\))$/\1/' "$work/gen/suites.h" | tr '\n' ' '))"
fi
$cc $cflags $check_cflags -I"$work/gen" -c tests/runner.c -o "$work/runner.o" >"$work/cc.log" 2>&1 ||
    die "cannot compile the runner" "$work/cc.log"
$cc -o "$work/check" "$work/runner.o" $harness $objs $student $refobj \
    $libs >"$work/ld.log" 2>&1 || die "cannot link $file with the tests" "$work/ld.log"

echo "exercise $name: checking $( [ "$file" = reference ] && echo "the reference implementation" || echo "$file") ($functions)${only:+, suite $only only}${tcase:+, test case $tcase only}"
# A limit in CPU time, not wall time (tests/within.c): on a loaded machine the tests wait for a core as long as
# the load makes them; a solution that loops forever, or hangs without computing, is still stopped.
limit=
[ -x "$build/tests/within" ] && limit="$build/tests/within 600"
$limit "$work/check" ${only:+--suite "$only"} ${tcase:+--case "$tcase"} >"$work/out.txt" 2>&1
rc=$?
[ $rc -ne 124 ] || echo "exercise $name: stopped after 600 s of CPU time (or 2 minutes without any): a loop that does not end?"
[ $rc -ne 2 ] || die "the tests did not run" "$work/out.txt" # the runner's own error: a bad --suite or --case
grep -E '^(FAIL|SKIP)' "$work/out.txt"
tail -1 "$work/out.txt"
if [ $rc -eq 0 ]; then
    echo "exercise $name: PASS"
    exit 0
fi
echo "exercise $name: FAIL"
exit 1
