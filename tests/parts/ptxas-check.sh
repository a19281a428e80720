#!/usr/bin/env bash
# ptxas-check.sh BUILD COUNTS — registers × threads against the SM's register file, by ptxas's counts
# (tools/ptxas-check.sh over BUILD/ptxas, which `make test` builds where nvcc is found): every kernel of
# kernels/, kernels/check/ and optimized/cuda/ fits, each has its row; and the planted kernels of
# tests/gpu/plant_registers.cu are rejected, each named (an unbounded kernel of 254 registers launched at 1024
# threads; a kernel launched above its own bound), while their control (the same body bounded at 1024) passes.
# Skipped without nvcc. Writes "passed failed skipped" to COUNTS.
set -u
build=${1:-build}
counts=${2:-/dev/null}
nvcc=$(command -v nvcc || { [ -x /usr/local/cuda/bin/nvcc ] && echo /usr/local/cuda/bin/nvcc; })
if [ -z "$nvcc" ]; then
    echo "ptxas-check: skipped: no nvcc (the CUDA sources are not compiled here)"
    echo "0 0 1" >"$counts"
    exit 0
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/specula-ptxas-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
expect() { # expect WHAT COMMAND...: one thing that must hold, named when it does not
    if "${@:2}" >/dev/null 2>&1; then
        pass=$((pass + 1))
    else
        echo "FAIL ptxas-check: $1"
        fail=$((fail + 1))
    fi
}

# The project's kernels: all fit, and the table has a row for every entry of their PTX.
mapfile -t sources < <(ls kernels/*.cu kernels/check/*.cu optimized/cuda/*.cu | sort)
tools/ptxas-check.sh "$build/ptxas" "${sources[@]}" >"$tmp/project.txt" 2>&1
rc=$?
sed -n '/^FAIL/p' "$tmp/project.txt"
expect "the project's kernels fit (exit $rc; table in $build/ptxas, make ptxas-check)" [ $rc -eq 0 ]
entries=$(cat "$build"/ptxas/{kernels,kernels/check,optimized/cuda}/*.ptx 2>/dev/null | grep -c '\.entry[[:space:]]')
rows=$(sed -n 's/^ptxas-check: \([0-9]*\) kernels.*/\1/p' "$tmp/project.txt")
expect "a row for each of the $entries kernels in the PTX (${rows:-no} rows)" [ "${rows:-0}" -eq "$entries" -a "$entries" -gt 0 ]
echo "ptxas-check: ${rows:-0} project kernels, most registers a block: $(awk 'NR > 1 && NF == 7 && $6 > m { m = $6; k = $1 } END { print m " (" k ")" }' "$tmp/project.txt")"

# The plants, compiled here as make compiles the kernels (device side, sm_90).
plant=tests/gpu/plant_registers.cu
mkdir -p "$tmp/tests/gpu"
"$nvcc" -O3 -std=c++17 -arch=compute_90 -Ireference/base -Ireference/decoding -Ireference/ops -Ikernels -Ioptimized \
    -ptx "$plant" -o "$tmp/${plant%.cu}.ptx" &&
    "$(dirname "$(realpath "$nvcc")")/ptxas" -arch=sm_90 -O3 -v "$tmp/${plant%.cu}.ptx" -o /dev/null 2>"$tmp/${plant%.cu}.res"
expect "the plants compile" [ -s "$tmp/${plant%.cu}.res" ]
tools/ptxas-check.sh "$tmp" "$plant" >"$tmp/plant.txt" 2>&1
rc=$?
expect "the check rejects the plants (exit $rc)" [ $rc -eq 1 ]
expect "it names plant_unbounded at its launch of 1024 threads" \
    grep -q "^FAIL ptxas-check: plant_unbounded .*× 1024 threads (its launch at $plant:[0-9]*) .* above the SM's 65536" "$tmp/plant.txt"
expect "it names plant_overbound, launched at 512 above its bound of 256" \
    grep -q "^FAIL ptxas-check: plant_overbound .*launched with 512 threads a block at $plant:[0-9]*, above its __launch_bounds__(256)" "$tmp/plant.txt"
expect "its control plant_bounded (the same body, bounded) passes" bash -c "! grep -q '^FAIL.*plant_bounded' '$tmp/plant.txt'"
expect "ptxas fits plant_bounded to 64 registers, and gives plant_unbounded more than 64" \
    awk '$1 == "plant_bounded" { b = $3 } $1 == "plant_unbounded" { u = $3 } END { exit !(b > 0 && b <= 64 && u > 64) }' "$tmp/plant.txt"
# A source without its PTX is a failure, not a pass.
tools/ptxas-check.sh "$tmp/none" "$plant" >/dev/null 2>&1
expect "a missing PTX fails the check" [ $? -eq 1 ]
[ "$fail" -eq 0 ] || cat "$tmp/plant.txt"

echo "ptxas-check: $pass passed, $fail failed"
echo "$pass $fail 0" >"$counts"
[ "$fail" -eq 0 ]
