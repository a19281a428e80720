#!/usr/bin/env bash
# fuzz.sh BUILD COUNTS — the fuzz targets of tests/fuzz in `make test`: each
# replays its seed corpus and every past crash input (tests/fuzz/corpus/NAME,
# tests/fuzz/crashes/NAME) through BUILD/fuzz/replay-NAME, the target built
# with the normal compiler and its sanitizers, so this half runs everywhere;
# then, where clang's libFuzzer built BUILD/fuzz/fuzz-NAME, fuzzes each for a
# short smoke (FUZZ_SMOKE_SECONDS, default 3). Without clang the smoke checks
# are counted as skipped, with the reason. Writes "passed failed skipped" to COUNTS.
set -u
build=${1:-build}
counts=${2:-/dev/null}
seconds=${FUZZ_SMOKE_SECONDS:-3}
pass=0 fail=0 skip=0
tmp=$(mktemp -d "${TMPDIR:-/tmp}/specula-fuzz-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1

targets=$(for f in tests/fuzz/fuzz_*.c; do basename "$f" .c | sed 's/^fuzz_//'; done)
for name in $targets; do
    inputs=(tests/fuzz/corpus/"$name")
    [ -d tests/fuzz/crashes/"$name" ] && inputs+=(tests/fuzz/crashes/"$name")
    if "$build/fuzz/replay-$name" "${inputs[@]}" >"$tmp/replay-$name" 2>&1; then
        pass=$((pass + 1))
        echo "fuzz: $name: $(tail -n 1 "$tmp/replay-$name") (${inputs[*]})"
    else
        fail=$((fail + 1))
        echo "FAIL fuzz: $name: replaying ${inputs[*]} (last lines below)"
        tail -n 20 "$tmp/replay-$name"
    fi
done

missing=$(for name in $targets; do [ -x "$build/fuzz/fuzz-$name" ] || echo "$name"; done)
if [ -n "$missing" ]; then
    n=$(wc -w <<<"$targets")
    skip=$((skip + n))
    echo "SKIP fuzz: $n libFuzzer smoke runs: clang with libFuzzer (-fsanitize=fuzzer) was not found, so" \
        "$build/fuzz/fuzz-* were not built (Debian package clang)"
else
    # one run.sh per target, so each gets its own pass or fail
    for name in $targets; do
        if tests/fuzz/run.sh "$build" "$seconds" "$name" >"$tmp/smoke-$name" 2>&1; then
            pass=$((pass + 1))
        else
            fail=$((fail + 1))
            echo "FAIL fuzz: $name: a ${seconds}s libFuzzer run crashed (log: $build/fuzz/logs/$name.log)"
        fi
        tail -n 1 "$tmp/smoke-$name"
    done
fi

echo "fuzz: $pass passed, $fail failed, $skip skipped"
echo "$pass $fail $skip" >"$counts"
[ "$fail" -eq 0 ]
