#!/usr/bin/env bash
# course-timings.sh BUILD COUNTS — every timing the course quotes says where
# it came from. A paragraph of lessons/*.md or notebooks-c/*.md (code blocks
# left out) that quotes a time or a speed (N ms, N µs, N s, N minutes,
# N tokens/s, wall time, ms per pass, Nx plain decoding or sampling) must,
# within two paragraphs either side, either give a date (YYYY-MM-DD)
# together with its spread (median, range, lowest … highest, or "one run"),
# or label the figure as not measured (predicted, prediction, model,
# nominal, data sheet), or, for a figure someone else reported, say
# "reported" and cite the bibliography. First the check is run on scratch
# files holding one bare timing each, which it must flag (so it cannot pass
# blind). Writes "passed failed skipped".
set -u
counts=${2:-/dev/null}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/specula-timings-XXXXXX")
trap 'rm -rf "$tmp"' EXIT

check() { # check FILE...: prints one line per unsourced paragraph, exits 1 when there is one
    python3 - "$@" <<'PY'
import re, sys
timing = re.compile(r"\d\s?tokens/s|ms per pass|\d\s?[x×] plain (decoding|sampling)|s of CPU|wall time|"
                    r"\d\s?ms\b|\d\s?µs\b|\d\s?s\b|\d\s?(min|minutes)\b")
dated = re.compile(r"20\d\d-\d\d-\d\d")
spread = re.compile(r"median|range|lowest|one run", re.I)
unmeasured = re.compile(r"predict|prediction|\bmodel\b|nominal|data sheet|data-sheet", re.I)
reported = re.compile(r"reported", re.I)
bad = 0
for path in sys.argv[1:]:
    text = re.sub(r"```.*?```", "", open(path, encoding="utf-8").read(), flags=re.S)
    paras = text.split("\n\n")
    for i, p in enumerate(paras):
        if not timing.search(p):
            continue
        ctx = "\n\n".join(paras[max(0, i - 2): i + 3])
        if (dated.search(ctx) and spread.search(ctx)) or unmeasured.search(ctx) or \
           (reported.search(ctx) and "bibliography.md#" in ctx):
            continue
        bad += 1
        print(f"FAIL course-timings: {path}: a timing without date and spread, or a label: "
              f"{' '.join(p.split())[:160]}")
sys.exit(1 if bad else 0)
PY
}

pass=0 fail=0
printf '# A lesson\n\nThe pass took 12.5 ms on this machine.\n' >"$tmp/bare.md"
printf '# A lesson\n\nThe audit took 16 s, and training 6.1 minutes.\n' >"$tmp/bare-seconds.md"
for bare in bare bare-seconds; do
    if check "$tmp/$bare.md" >/dev/null; then
        fail=$((fail + 1))
        echo "FAIL course-timings: the check passed a bare timing ($bare.md, a negative control)"
    else
        pass=$((pass + 1))
    fi
done
printf '# A lesson\n\nThe pass took 12.5 ms (median of 9 runs, range 11.0 to 14.2 ms, 2026-12-02).\n' >"$tmp/sourced.md"
if check "$tmp/sourced.md" >/dev/null; then pass=$((pass + 1)); else
    fail=$((fail + 1))
    echo "FAIL course-timings: the check refused a timing with its date and spread"
fi
for md in lessons/*.md notebooks-c/*.md; do
    if check "$md"; then pass=$((pass + 1)); else fail=$((fail + 1)); fi
done
echo "course-timings: $pass passed, $fail failed"
echo "$pass $fail 0" >"$counts"
[ "$fail" -eq 0 ]
