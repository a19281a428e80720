#!/usr/bin/env bash
# plot-cli.sh BUILD COUNTS — checks the `specula plot` command line on random
# micro models: --help, exit status 2 and a clear message for bad flags, the
# files it writes, progress on stderr, the terminal plot, and the message
# when gnuplot is missing. Writes "passed failed skipped" to COUNTS. (The
# numbers in the files are tested in tests/unit/test_plots.c.)
set -u
build=${1:-build}
counts=${2:-/dev/null}
specula=$(cd "$(dirname "$build/specula")" && pwd)/specula
pass=0 fail=0 skip=0
tmp=$(mktemp -d "${TMPDIR:-/tmp}/specula-plot-XXXXXX")
trap 'rm -rf "$tmp"' EXIT

check() { # check NAME CONDITION...
    local name=$1
    shift
    if "$@"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL plot-cli: $name"; fi
}

# expect_error NAME STATUS PATTERN ARGS...: exits with STATUS and says PATTERN on stderr
expect_error() {
    local name=$1 status=$2 pattern=$3
    shift 3
    "$specula" plot "$@" >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    if [ $rc -eq "$status" ] && grep -q -- "$pattern" "$tmp/err"; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        echo "FAIL plot-cli: $name: exit $rc, stderr: $(cat "$tmp/err")"
    fi
}

"$specula" plot --help >"$tmp/help"
check "--help exits 0" test $? -eq 0
for flag in --out --term --model --draft --medusa --tree --no-measure --temperatures --prompts --tokens --k --seed --big --alpha \
    --context --bandwidth --tflops; do
    check "--help lists $flag" grep -q -- "$flag" "$tmp/help"
done

expect_error "unknown flag" 2 "unknown option '--frobnicate'" --frobnicate
expect_error "bad terminal" 2 "--term expects png, svg, both, dumb or none, got 'gif'" --term gif
expect_error "bad temperature" 2 "--temperatures expects a number" --temperatures 0,hot
expect_error "bad k" 2 "--k expects an integer in \[1, 32\]" --k 0
expect_error "bad alpha" 2 "--alpha expects a number in \[0, 1\]" --alpha 1.5
expect_error "missing value" 2 "--out needs a value" --out
expect_error "missing model" 2 "cannot open" --model "$tmp/nowhere" --no-measure --term none

"$build/genmodel" --quiet --preset micro --seed 3 --medusa-heads 2 "$tmp/m"
"$build/genmodel" --quiet --preset micro-draft --seed 4 "$tmp/m-draft"
expect_error "missing heads" 2 "loading Medusa heads" --model "$tmp/m" --medusa "$tmp/none.safetensors" --no-measure --term none
"$build/genmodel" --quiet --preset micro --seed 5 "$tmp/other"
mkdir -p "$tmp/other-medusa" && cp "$tmp/m-medusa/medusa_heads.safetensors" "$tmp/other-medusa/"
"$specula" plot --model "$tmp/other" --no-measure --term none --out "$tmp/o" >"$tmp/out" 2>"$tmp/err"
check "heads of another checkpoint beside the model: still exit 0" test $? -eq 0
check "heads of another checkpoint: says why Medusa is left out" grep -q "no Medusa points: .*do not belong" "$tmp/err"
expect_error "heads of another checkpoint by name" 2 "do not belong" --model "$tmp/other" \
    --medusa "$tmp/m-medusa/medusa_heads.safetensors" --no-measure --term none
run=(--model "$tmp/m" --prompts 1 --tokens 8 --temperatures 0,1 --k 2)

"$specula" plot "${run[@]}" --term none --out "$tmp/p" >"$tmp/out" 2>"$tmp/err"
check "measuring run exits 0" test $? -eq 0
check "nothing on stdout with --term none" test ! -s "$tmp/out"
check "progress on stderr" grep -q "measuring draft *T=0 " "$tmp/err"
check "MODEL-draft is found" grep -q "measuring draft" "$tmp/err"
check "MTP is measured" grep -q "measuring MTP" "$tmp/err"
check "MODEL-medusa is found" grep -q "measuring Medusa" "$tmp/err"
for f in tokens_per_pass.dat tokens_per_pass_mc.dat measured.dat measured_runs.dat acceptance.dat speedup_k.dat \
    speedup_k_opt.dat bytes_per_token.dat speedup_batch.dat speedup_batch_measured.dat tokens_per_pass.gp acceptance.gp speedup_k.gp \
    bytes_per_token.gp speedup_batch.gp; do
    check "writes $f" test -s "$tmp/p/$f"
done
check "six measured points" test "$(grep -vc '^#' "$tmp/p/measured.dat")" -eq 6
# plot (e)'s measured points: B = 1, 2, 4, 8 on the CPU engine (the model has an MTP module), drawn beside the model
check "measures the batch points" grep -q "measuring batch B=8 on the CPU engine" "$tmp/err"
check "four measured batch sizes" test "$(grep -v '^#' "$tmp/p/speedup_batch_measured.dat" | awk '{print $1}' | tr '\n' ,)" = "1,2,4,8,"
check "batch points: plain and four k a row" test "$(grep -v '^#' "$tmp/p/speedup_batch_measured.dat" | awk '{print NF}' | sort -u)" = 14
check "batch points: positive speed-ups" test "$(grep -v '^#' "$tmp/p/speedup_batch_measured.dat" | awk '$11 > 0 && $2 > 0' | wc -l)" -eq 4
check "batch points: date and load in the file" grep -q "^# measured .* UTC, load average" "$tmp/p/speedup_batch_measured.dat"
check "plot (e) draws the measured points" grep -q "'speedup_batch_measured.dat' using 1:11 " "$tmp/p/speedup_batch.gp"

"$specula" plot --no-measure --model "$tmp/m" --term none --out "$tmp/q" 2>"$tmp/err"
check "--no-measure runs nothing" test "$(grep -c measuring "$tmp/err")" -eq 0
check "--no-measure leaves out the acceptance plot" test ! -e "$tmp/q/acceptance.gp"
check "--no-measure measures no batch points" test ! -e "$tmp/q/speedup_batch_measured.dat"

env PATH=/nonexistent "$specula" plot --no-measure --model "$tmp/m" --out "$tmp/r" >"$tmp/out" 2>"$tmp/err"
check "no gnuplot: exit 1" test $? -eq 1
check "no gnuplot: says so" grep -q "gnuplot is not installed" "$tmp/err"
check "no gnuplot: data still written" test -s "$tmp/r/tokens_per_pass.dat"

if command -v gnuplot >/dev/null 2>&1; then
    "$specula" plot "${run[@]}" --term png --out "$tmp/s" >"$tmp/out" 2>"$tmp/err"
    check "png run exits 0" test $? -eq 0
    for n in tokens_per_pass acceptance speedup_k bytes_per_token speedup_batch; do
        check "draws $n.png" test -s "$tmp/s/$n.png"
        check "lists $n.png" grep -q "$n.png" "$tmp/out"
    done
    check "--term png draws no svg" test ! -e "$tmp/s/tokens_per_pass.svg"
    "$specula" plot --no-measure --model "$tmp/m" --term dumb --out "$tmp/t" >"$tmp/out" 2>"$tmp/err"
    check "dumb run exits 0" test $? -eq 0
    check "dumb draws plot (a) here" grep -q "Expected tokens per target pass" "$tmp/out"
    check "dumb names the curves" grep -q "k = 8" "$tmp/out"
else
    skip=$((skip + 1))
    echo "SKIP plot-cli/images: gnuplot is not installed (Debian: gnuplot-nox)"
fi

# points of one's own on (a): copied into extra.dat and drawn; a bad line is refused with its number, exit 2
printf '# a method of mine\nmine-a 0.55 2.1\nmine-b 0.8 3.4 # deeper\n' >"$tmp/extra.txt"
"$specula" plot --no-measure --extra "$tmp/extra.txt" --term none --out "$tmp/x" >"$tmp/out" 2>"$tmp/err"
check "--extra: exit 0" test $? -eq 0
check "--extra: its points in extra.dat" sh -c "grep -q '^\"mine-a\" 0.55 2.1\$' '$tmp/x/extra.dat' && grep -q '^\"mine-b\" 0.8 3.4\$' '$tmp/x/extra.dat'"
check "--extra: drawn on (a)" grep -q "'extra.dat' using 2:3:1 with labels" "$tmp/x/tokens_per_pass.gp"
printf 'mine 0.5 2\nbad 1.5 2\n' >"$tmp/bad-extra.txt"
expect_error "--extra: an alpha outside [0, 1]" 2 "bad-extra.txt:2: expected LABEL ALPHA TOKENS_PER_PASS" --no-measure \
    --term none --out "$tmp/y" --extra "$tmp/bad-extra.txt"
expect_error "--extra: a missing file" 2 "--extra $tmp/nowhere.txt: No such file" --no-measure --term none \
    --out "$tmp/y" --extra "$tmp/nowhere.txt"

echo "plot-cli: $pass passed, $fail failed, $skip skipped"
echo "$pass $fail $skip" >"$counts"
[ "$fail" -eq 0 ]
