#!/usr/bin/env bash
# verify-plants.sh [-j N] BUILD [DOC [NAME...]] — `make verify-plants`: shows that the default
# `specula verify` catches bugs planted in the real source, not only the
# catalogue's own negative controls. For each plant of
# tests/mutants/verify.plants it copies the tracked source tree and BUILD
# (timestamps kept, so make recompiles only the changed file and relinks)
# under BUILD/plants/NAME, applies the one textual change
# (tests/mutants/mutate.sh), builds specula there and runs the default
# `specula verify --seed S` for each listed seed, on the plant's backend
# (reference, or cpu: `--backend cpu`, the engine in its default mode). A plant is caught at a
# seed when the run completes (its JSON is printed) and at least one row
# fails; a run that stops on an error is not a catch. Prints the table
# (plant, seeds, caught, the largest over the seeds of the smallest
# Holm-adjusted p, the rows that failed, CPU time) and, with DOC, writes it
# between the <!-- verify-docs:plants … --> markers with the date, the
# machine and the load (only when every plant runs: NAMEs select some).
# -j N runs N verifications at a time (default 1; the copies are built one
# after the other either way).
# Not part of `make test`: each run is minutes of CPU.
# Exits 1 when a plant goes uncaught at some seed.
set -euo pipefail
jobs=1
if [ "${1:-}" = -j ]; then
    jobs=$2
    shift 2
fi
build=${1:-build}
doc=${2:-}
only=" ${*:3} "
[ "$only" = "  " ] || doc="" # a partial table is printed, never recorded
root=$(cd "$(dirname "$0")/.." && pwd)
list=$root/tests/mutants/verify.plants
[ -x "$build/specula" ] || { echo "verify-plants: $build/specula is missing (make)" >&2; exit 2; }
build=$(cd "$build" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/specula-verify-plants-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
load=$(cut -d' ' -f1 /proc/loadavg)
started=$(date -u '+%Y-%m-%d %H:%M UTC')

# copy_tree DIR: the tracked sources (mtimes kept) and the build's objects and libraries
copy_tree() {
    local dir=$1
    rm -rf "$dir"
    mkdir -p "$dir/src"
    (cd "$root" && git ls-files -z | xargs -0 cp -a --parents -t "$dir/src")
    mkdir -p "$dir/src/build"
    (cd "$build" && find . -maxdepth 1 -mindepth 1 ! -name plants ! -name tests -exec cp -a -t "$dir/src/build" {} +)
}

# plant NAME FILE FROM TO DIR: the copy with the change applied to FILE
plant() {
    local name=$1 file=$2 from=$3 to=$4 dir=$5
    printf '%s\t%s\t%s\n' "$name" "$from" "$to" >"$tmp/one"
    "$root/tests/mutants/mutate.sh" "$name" "$dir/src/$file" "$tmp/one" >"$tmp/mutated"
    cat "$tmp/mutated" >"$dir/src/$file" # a newer mtime: make rebuilds this file only
}

# row_summary JSON: "MIN_P_HOLM FAILED_ROWS" of one run (failed rows joined by ';')
row_summary() {
    awk '
        /"case": / {
            name = $0; sub(/.*"case": "/, "", name); sub(/".*/, "", name)
            p = $0; sub(/.*"p_holm": /, "", p); sub(/,.*/, "", p)
            if (p == "null" || p ~ /"/) p = 0
            if (min == "" || p + 0 < min + 0) min = p
            if ($0 ~ /"pass": false/) failed = failed (failed ? ";" : "") name
        }
        END { printf "%s %s\n", (min == "" ? "none" : min), (failed == "" ? "-" : failed) }' "$1"
}

# run_seed DIR SEED BACKEND: one default run of the planted copy, its JSON, stderr and CPU seconds beside it
run_seed() {
    local dir=$1 seed=$2 backend=$3
    local TIMEFORMAT='%U %S'
    { time "$dir/src/build/specula" verify --backend "$backend" --seed "$seed" --json --quiet >"$dir/seed-$seed.json" \
        2>"$dir/seed-$seed.err"; } 2>"$dir/seed-$seed.time" || true
}

# the plants to run: NAME FILE SEEDS BACKEND FROM TO, one per line
plants=()
while IFS=$'\t' read -r name file seeds backend from to; do
    case $name in '#'* | '') continue ;; esac
    [ "$only" = "  " ] || [[ $only == *" $name "* ]] || continue
    case $backend in reference | cpu) ;; *) echo "verify-plants: $name: backend '$backend' is not reference or cpu" >&2; exit 2 ;; esac
    plants+=("$name"$'\t'"$file"$'\t'"$seeds"$'\t'"$backend"$'\t'"$from"$'\t'"$to")
done <"$list"

# the copies, built one after the other
status=0
declare -A built
for line in "${plants[@]}"; do
    IFS=$'\t' read -r name file seeds backend from to <<<"$line"
    dir=$build/plants/$name
    echo "verify-plants: $name: building ($file)" >&2
    copy_tree "$dir"
    plant "$name" "$file" "$from" "$to" "$dir"
    if nice -n 10 make -C "$dir/src" -j2 build/specula >"$dir/make.log" 2>&1; then
        built[$name]=1
    else
        echo "verify-plants: $name: the planted copy does not build (see $dir/make.log)" >&2
    fi
done

# every (plant, seed) run, at most $jobs at a time
running=0
for line in "${plants[@]}"; do
    IFS=$'\t' read -r name file seeds backend from to <<<"$line"
    [ -n "${built[$name]:-}" ] || continue
    for seed in $(seq "${seeds%-*}" "${seeds#*-}"); do
        echo "verify-plants: $name: seed $seed" >&2
        run_seed "$build/plants/$name" "$seed" "$backend" &
        running=$((running + 1))
        if [ "$running" -ge "$jobs" ]; then
            wait -n || true
            running=$((running - 1))
        fi
    done
done
wait

printf '%-26s %-9s %-6s %-7s %-10s %8s  %s\n' plant backend seeds caught "worst p" "CPU s" "rows that failed (first seed)" >"$tmp/table"
for line in "${plants[@]}"; do
    IFS=$'\t' read -r name file seeds backend from to <<<"$line"
    dir=$build/plants/$name
    if [ -z "${built[$name]:-}" ]; then
        printf '%-26s %-9s %-6s %-7s %-10s %8s  %s\n' "$name" "$backend" "$seeds" "no" "-" "-" "does not build" >>"$tmp/table"
        status=1
        continue
    fi
    caught=0 total=0 worst="" rows="" cpu=0
    for seed in $(seq "${seeds%-*}" "${seeds#*-}"); do
        total=$((total + 1))
        read -r user sys <"$dir/seed-$seed.time"
        cpu=$(awk -v c="$cpu" -v u="$user" -v s="$sys" 'BEGIN { printf "%.1f", c + u + s }')
        if ! grep -q '"cases_run"' "$dir/seed-$seed.json"; then
            echo "verify-plants: $name seed $seed: the run stopped: $(tail -1 "$dir/seed-$seed.err")" >&2
            continue
        fi
        read -r minp failed < <(row_summary "$dir/seed-$seed.json")
        echo "verify-plants: $name seed $seed: smallest Holm p $minp, failed: $failed" >&2
        [ "$failed" != - ] && caught=$((caught + 1))
        [ -z "$rows" ] && rows=$failed
        if [ -z "$worst" ] || awk -v a="$minp" -v b="$worst" 'BEGIN { exit !(a + 0 > b + 0) }'; then worst=$minp; fi
    done
    [ "$caught" -eq "$total" ] || status=1
    printf '%-26s %-9s %-6s %-7s %-10s %8s  %s\n' "$name" "$backend" "$seeds" "$caught/$total" "${worst:-none}" "$cpu" "$rows" \
        >>"$tmp/table"
done

cat "$tmp/table"
if [ -n "$doc" ]; then
    marker="<!-- verify-docs:plants"
    grep -q "^$marker begin -->$" "$doc" || { echo "verify-plants: $doc has no 'plants' block" >&2; exit 2; }
    cpu_model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -1)
    {
        echo "Measured $started on $(uname -m), ${cpu_model:-CPU model unknown}, $(nproc) cores, load average $load at the start (\`tools/verify-plants.sh -j $jobs\`, exit status $status):"
        echo
        printf '```text\n'
        cat "$tmp/table"
        printf '```\n'
    } >"$tmp/block"
    awk -v file="$tmp/block" -v m="$marker" '
        $0 == m " begin -->" { print; while ((getline line < file) > 0) print line; skip = 1; next }
        $0 == m " end -->" { skip = 0 }
        !skip' "$doc" >"$tmp/doc"
    cat "$tmp/doc" >"$doc"
fi
exit $status
