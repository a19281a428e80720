#!/usr/bin/env bash
# code-size.sh BUILD COUNTS — the size limits the project holds itself to:
# no C, CUDA or header file over 800 lines, no function over 120 lines; and
# the specification stays readable in one sitting: decode_run, the round
# loop, within 80 lines, and the model, its target and the loop (the files of
# READING below) within 2500 lines together
# (a function: from the first line of its definition, which clang-format with
# the project's .clang-format starts at column 0 — Check's START_TEST
# included — to the lone "}" at column 0 that closes it). Split by concept
# before either limit is reached. Writes "passed failed skipped" to COUNTS.
set -u
counts=${2:-/dev/null}
max_file=800 max_function=120
pass=0 fail=0
while IFS= read -r f; do
    lines=$(wc -l <"$f")
    if [ "$lines" -gt "$max_file" ]; then
        echo "FAIL code-size: $f has $lines lines (at most $max_file)"
        fail=$((fail + 1))
    else
        pass=$((pass + 1))
    fi
    long=$(awk -v max="$max_function" '
        /^[A-Za-z_]/ && !/;$/ && !/^extern "C"/ { if (!start) { start = NR; head = $0 } }
        /;$/ && !/^[ }]/ { start = 0 }
        /^\}$/ && start { if (NR - start + 1 > max) printf "%d lines: %s\n", NR - start + 1, substr(head, 1, 90); start = 0 }
        /^\}./ { start = 0 }
    ' "$f")
    if [ -n "$long" ]; then
        while IFS= read -r l; do echo "FAIL code-size: $f: a function of $l (at most $max_function)"; done <<<"$long"
        fail=$((fail + 1))
    else
        pass=$((pass + 1))
    fi
done < <(find reference verify cli kernels tools tests optimized lessons notebooks-c -type f \
    \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' -o -name '*.cc' \) | sort)
loop=$(awk '/^int decode_run\(/ { start = NR } start && /^\}$/ { print NR - start + 1; exit }' reference/decoding/decode.c)
if [ -n "$loop" ] && [ "$loop" -le 80 ]; then
    pass=$((pass + 1))
else
    echo "FAIL code-size: decode_run in reference/decoding/decode.c has ${loop:-no} lines (at most 80)"
    fail=$((fail + 1))
fi
READING="reference/model/* reference/ops/* reference/backend/* reference/decoding/decode.[ch] reference/decoding/decode_round.h
         reference/decoding/target.h reference/decoding/stepper.h reference/decoding/proposer.h"
sitting=$(cat $READING | wc -l)
if [ "$sitting" -le 2500 ]; then
    pass=$((pass + 1))
else
    echo "FAIL code-size: the model, its target and the round loop have $sitting lines (at most 2500)"
    fail=$((fail + 1))
fi
echo "code-size: $pass passed, $fail failed"
echo "$pass $fail 0" >"$counts"
[ "$fail" -eq 0 ]
