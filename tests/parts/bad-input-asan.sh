#!/usr/bin/env bash
# bad-input-asan.sh BUILD COUNTS — the bad-input table (tests/parts/bad-input-cli.sh) once more, through
# build/specula-asan: the command line built with AddressSanitizer (and its leak checker) and
# UndefinedBehaviorSanitizer. A refusal that reads out of bounds, leaks what it loaded or frees twice passes the
# normal table with the right line and status; here the sanitizer's report is more lines on stderr and exit 99,
# and the row fails. Writes "passed failed skipped" to COUNTS.
set -u
build=${1:-build}
counts=${2:-/dev/null}
export ASAN_OPTIONS=detect_leaks=1:exitcode=99 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:exitcode=99
# not blind: the binary must carry the sanitizer (it lists its flags when asked)
if ! ASAN_OPTIONS=help=1 "$build/specula-asan" --help 2>&1 | grep -q "Available flags for AddressSanitizer"; then
    echo "FAIL bad-input-asan: $build/specula-asan is not built with AddressSanitizer"
    echo "0 1 0" >"$counts"
    exit 1
fi
BAD_INPUT_SPECULA=$build/specula-asan exec "$(dirname "$0")/bad-input-cli.sh" "$build" "$counts"
