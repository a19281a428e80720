#!/usr/bin/env bash
# run.sh BUILD — the body of `make test`: the sanitizer run of the unit
# suites, every part of tests/parts, and every suite of the normal build,
# then the total. They are independent (each writes its own files and
# "passed failed skipped" to BUILD/test-counts/), so they run side by side,
# as many at a time as the machine has cores (at most 4): almost every test
# is one thread, and one at a time would leave the other cores idle. The
# longest start first. Each one's output is kept apart and printed whole
# when it ends, with its wall time; the normal build's suites come last, so
# the run ends with Check's summary of that run and then the plain total
# over all of them.
set -u
build=${1:-build}
counts=$build/test-counts
logs=$build/test-logs
rm -rf "$counts" "$logs" && mkdir -p "$counts" "$logs"
width=$(nproc 2>/dev/null || echo 1)
[ "$width" -le 4 ] || width=4

# The sanitizers slow a test down up to about 3x (docs/reliability.md, "Time
# limits"): tests/tcase_limit.c multiplies every TCase's CPU limit by CK_TIMEOUT_MULTIPLIER.
# SPECULA_TEST_LIGHT=1: the canaries run a quarter of their prompts, the same code paths (tests/harness.h).
asan() {
    SPECULA_TEST_LIGHT=1 CK_TIMEOUT_MULTIPLIER=3 ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
        UBSAN_OPTIONS=print_stacktrace=1 "$build/tests/runner-asan" --group unit --counts "$counts/1-asan"
}
main_suites() {
    "$build/tests/runner" --counts "$counts/3-main"
}
part() { # part NAME: tests/parts/NAME.sh
    "tests/parts/$1.sh" "$build" "$counts/2-$1"
}
# The notebook parts both build cells in BUILD/notebooks: one after the other.
notebook_parts() {
    part notebooks
    local rc=$?
    echo "-- notebook-runner"
    part notebook-runner && return $rc
}

# Jobs, longest first (their times on two cores are in docs/reliability.md).
queue=(main asan exercises notebooks)
for extra in tests/parts/*.sh; do
    [ -x "$extra" ] || continue
    name=$(basename "$extra" .sh)
    case $name in exercises | notebooks | notebook-runner) continue ;; esac
    queue+=("$name")
done
title() {
    case $1 in
    main) echo "unit, distribution and GPU suites" ;;
    asan) echo "unit suites under AddressSanitizer + UndefinedBehaviorSanitizer" ;;
    notebooks) echo "notebooks, then notebook-runner" ;;
    *) echo "$1" ;;
    esac
}
job_command() {
    case $1 in
    main) main_suites ;;
    asan) asan ;;
    notebooks) notebook_parts ;;
    *) part "$1" ;;
    esac
}

status=0
declare -A shown
show() { # show NAME: its output and wall time, once, after it ended
    local name=$1 rc
    rc=$(cat "$logs/$name.rc")
    echo "== $(title "$name") ($(cat "$logs/$name.seconds") s$([ "$rc" = 0 ] || echo ", exit $rc"))"
    cat "$logs/$name.log"
    [ "$rc" = 0 ] || status=1
    shown[$name]=1
}
show_ended() { # every job but the last-printed main that has ended and is not shown yet
    local name
    for name in "${queue[@]}"; do
        [ "$name" != main ] && [ -z "${shown[$name]:-}" ] && [ -e "$logs/$name.rc" ] && show "$name"
    done
}
running=0
for name in "${queue[@]}"; do
    if [ "$running" -ge "$width" ]; then
        wait -n # one job ended (bash reports each ended job to one wait -n)
        running=$((running - 1))
        show_ended
    fi
    running=$((running + 1))
    (
        started=$(date +%s)
        job_command "$name" >"$logs/$name.log" 2>&1
        rc=$?
        echo $(($(date +%s) - started)) >"$logs/$name.seconds"
        echo $rc >"$logs/$name.rc.tmp" && mv "$logs/$name.rc.tmp" "$logs/$name.rc" # last: it says the job ended
    ) &
done
while [ "$running" -gt 0 ]; do
    wait -n
    running=$((running - 1))
    show_ended
done
wait
show_ended
show main

awk '{p += $1; f += $2; s += $3} END {printf "%d passed, %d failed, %d skipped\n", p, f, s}' "$counts"/*
exit $status
