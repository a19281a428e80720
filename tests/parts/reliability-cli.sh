#!/usr/bin/env bash
# reliability-cli.sh BUILD COUNTS — broken inputs answered as broken, and
# outputs written whole or not at all (docs/reliability.md): `info` on a
# truncated checkpoint fails naming the file while a config-only folder still
# says its weights are assumed; `logits --out` whose write fails (a file-size
# limit standing in for a full disk) exits 1 with a message and leaves the
# previous file as it was; `medusa-train` killed at several moments over a
# good heads file, tree and MANIFEST leaves each one either as it was or
# replaced whole, the heads loadable; notebook-runner.sh reports the checks
# it skips without gnuplot.
# Writes "passed failed skipped" to COUNTS.
set -u
build=${1:-build}
counts=${2:-/dev/null}
specula=$build/specula
pass=0 fail=0 skip=0
tmp=$(mktemp -d "${TMPDIR:-/tmp}/specula-reliability-XXXXXX")
trap 'rm -rf "$tmp"' EXIT

check() { # check NAME COMMAND...
    local name=$1
    shift
    if "$@"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL reliability-cli: $name"; fi
}
says() { grep -q -- "$2" "$1"; }
no_temporaries() { [ -z "$(find "$1" -name '*.tmp.*')" ]; }

m=$tmp/micro
"$build/genmodel" --preset micro --quiet --medusa-heads 2 "$m"

# info: a truncated safetensors file is broken, not absent
cut=$tmp/cut && mkdir -p "$cut" && cp "$m/config.json" "$cut/"
head -c $(($(stat -c %s "$m/model.safetensors") / 2)) "$m/model.safetensors" >"$cut/model.safetensors"
"$specula" info "$cut" >"$tmp/out" 2>"$tmp/err"
check "info on a truncated checkpoint exits non-zero" test $? -ne 0
check "info names the truncated file" says "$tmp/err" "$cut/model.safetensors: .*truncated"
check "info on a truncated checkpoint does not assume bf16" test ! -s "$tmp/out"
rm "$cut/model.safetensors"
"$specula" info "$cut" >"$tmp/out" 2>&1
check "info on a config-only folder exits 0" test $? -eq 0
check "info on a config-only folder says the dtype is assumed" says "$tmp/out" "assumed: no safetensors here"

# logits --out: a failed write leaves the previous file. Under a 1 KiB file
# size limit (SIGXFSZ ignored, so the write fails with EFBIG as on a full
# disk), 16 positions x 32 logits (2 KiB) fail only when the buffer is
# flushed at the close, 64 positions (8 KiB) fail at the write itself.
for T in 16 64; do
    ids=$(seq -s, 1 "$T" | awk -F, '{for (i = 1; i <= NF; i++) $i = $i % 30 + 1} 1' OFS=,)
    out=$tmp/logits-$T && mkdir -p "$out"
    "$specula" logits "$m" --tokens "$ids" --out "$out/l.bin" >/dev/null 2>&1
    check "logits --out writes $((T * 32 * 4)) bytes" test "$(stat -c %s "$out/l.bin")" -eq $((T * 32 * 4))
    cp "$out/l.bin" "$tmp/good-$T.bin"
    (trap '' XFSZ && ulimit -f 1 && exec "$specula" logits "$m" --tokens "$ids" --out "$out/l.bin") \
        >/dev/null 2>"$tmp/err"
    rc=$?
    check "logits --out ($T positions) whose write fails exits 1 (got $rc)" test $rc -eq 1
    check "logits --out ($T positions) names the file that failed" says "$tmp/err" "$out/l.bin: write failed"
    check "logits --out ($T positions) leaves the previous file intact" cmp -s "$out/l.bin" "$tmp/good-$T.bin"
    check "logits --out ($T positions) leaves no temporary" no_temporaries "$out"
done

# medusa-train --out over a good heads file, killed while it runs: the old
# file stays byte for byte and still decodes; a run left alone replaces it.
gen() { "$specula" generate --model "$m" --tokens 3,1,4 --max-tokens 12 --no-eos --ids "$@"; }
h=$tmp/heads && mkdir -p "$h"
train() {
    "$specula" medusa-train --model "$m" --random-prompts --heads 2 --sequences 4 --eval-sequences 2 \
        --prompt-len 4 --gen-len 16 --steps "$1" --batch 8 --out "$h/heads.safetensors" --tree-out "$h/tree.json" \
        --manifest "$h/MANIFEST"
}
remember() { # the files as they are now
    rm -rf "$tmp/good" && cp -r "$h" "$tmp/good"
}
# Each file is either the previous one or a whole new one: a run killed
# between its renames may have replaced the heads and not yet the tree.
whole_heads() { # intact or replaced whole: either way it loads
    gen --method medusa --temperature 0 --medusa "$h/heads.safetensors" >/dev/null 2>&1
}
whole_tree() {
    cmp -s "$h/tree.json" "$tmp/good/tree.json" ||
        gen --method medusa --temperature 0 --medusa "$h/heads.safetensors" --tree "$h/tree.json" >/dev/null 2>&1
}
whole_manifest() { cmp -s "$h/MANIFEST" "$tmp/good/MANIFEST" || tail -1 "$h/MANIFEST" | grep -q '^medusa.expected_accepted'; }
train 5 >"$tmp/train" 2>&1
check "medusa-train writes a first heads file" test -s "$h/heads.safetensors" -a -s "$h/tree.json" -a -s "$h/MANIFEST"
remember
# The kill moments are fractions of a run's expected length, measured here
# (10x a 2000-step run), so the later ones fall near its end, where the
# files are written, or after it, on a fast machine as on a loaded one.
t0=$(date +%s.%N)
train 2000 >/dev/null 2>&1
span=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f", 10 * (b - a) }')
remember
killed=0 finished=0
for frac in 0.02 0.2 0.5 0.8 0.9 0.95 1 1.1; do
    delay=$(awk -v s="$span" -v f="$frac" 'BEGIN { printf "%.3f", s * f }')
    train 20000 >/dev/null 2>&1 &
    pid=$!
    sleep "$delay"
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    rc=$?
    if [ $rc -eq 137 ]; then
        killed=$((killed + 1))
        check "killed after ${delay}s: the heads file is whole and loads" whole_heads
        check "killed after ${delay}s: the tree file is whole" whole_tree
        check "killed after ${delay}s: the MANIFEST is whole" whole_manifest
        find "$h" -name '*.tmp.*' -delete # a killed run may leave its temporary; never the final name
    else
        check "a run that finished before ${delay}s exits 0" test $rc -eq 0
        finished=$((finished + 1))
    fi
    remember
done
check "at least 3 medusa-train runs were killed before they finished (killed $killed)" test "$killed" -ge 3
echo "reliability-cli: medusa-train killed $killed times, $finished runs finished first (a run: about ${span}s)"
train 3 >"$tmp/train" 2>&1
check "a medusa-train run left alone replaces the heads" test $? -eq 0
check "the new heads differ from the old" test -n "$(cmp "$h/heads.safetensors" "$tmp/good/heads.safetensors" 2>&1)"
check "the new heads load" "$specula" info "$m" >/dev/null
gen --method medusa --temperature 0 --medusa "$h/heads.safetensors" >"$tmp/new" 2>&1
check "the new heads decode" test $? -eq 0
check "a finished run leaves no temporary" no_temporaries "$h"

# Honest skip counts: notebook-runner.sh on a PATH without gnuplot (every
# other program linked into one folder) counts its figure checks as skipped
# and says why, instead of dropping them.
nogp=$tmp/bin-without-gnuplot && mkdir -p "$nogp"
IFS=: read -r -a path_dirs <<<"$PATH"
for d in "${path_dirs[@]}"; do
    for x in "$d"/*; do
        b=$(basename "$x")
        [ -x "$x" ] && [ "$b" != gnuplot ] && [ ! -e "$nogp/$b" ] && ln -s "$x" "$nogp/$b"
    done
done
PATH=$nogp tests/parts/notebook-runner.sh "$build" "$tmp/nb-counts" >"$tmp/nb" 2>&1
check "notebook-runner without gnuplot passes" test $? -eq 0
check "notebook-runner without gnuplot counts 4 skipped" test "$(cut -d' ' -f3 "$tmp/nb-counts")" = 4
check "notebook-runner without gnuplot says why it skips" says "$tmp/nb" "SKIP notebook-runner: 4 checks: no gnuplot"

echo "reliability-cli: $pass passed, $fail failed, $skip skipped"
echo "$pass $fail $skip" >"$counts"
[ "$fail" -eq 0 ]
