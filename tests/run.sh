#!/usr/bin/env bash
# run.sh BUILD — the body of `make test`: the sanitizer run of the unit
# suites, then every suite of the normal build, then the total. Each part
# writes "passed failed skipped" to BUILD/test-counts/; the last lines are
# Check's summary of the main run and the plain total over all parts.
set -u
build=${1:-build}
counts=$build/test-counts
rm -rf "$counts" && mkdir -p "$counts"
status=0

echo "== unit suites under AddressSanitizer + UndefinedBehaviorSanitizer"
# The sanitizers slow a test down up to about 3x (docs/reliability.md, "Time
# limits"): Check multiplies every TCase's limit by CK_TIMEOUT_MULTIPLIER.
# SPECULA_TEST_LIGHT=1: the canaries run a quarter of their prompts, the same code paths (tests/harness.h).
SPECULA_TEST_LIGHT=1 CK_TIMEOUT_MULTIPLIER=3 ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    "$build/tests/runner-asan" --group unit --counts "$counts/1-asan" || status=1

for extra in tests/parts/*.sh; do
    [ -x "$extra" ] || continue
    name=$(basename "$extra" .sh)
    echo "== $name"
    "$extra" "$build" "$counts/2-$name" || status=1
done

echo "== unit, distribution and GPU suites"
"$build/tests/runner" --counts "$counts/3-main" || status=1

awk '{p += $1; f += $2; s += $3} END {printf "%d passed, %d failed, %d skipped\n", p, f, s}' "$counts"/*
exit $status
