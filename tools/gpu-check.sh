#!/usr/bin/env bash
# gpu-check.sh BUILD — the body of `make gpu-check`: builds gpucheck for sm_90
# from source with this machine's nvcc (no `make deps`, no network, no Check),
# runs each kernel family in its own process under a time limit (a device
# fault in one family cannot hide the others), then prints the one table and
# the Qwen3.8-27B estimate of all rows. The full log, the rows (TSV) and the
# table go to BUILD/gpu-check/ and, when $OUT is set, to $OUT as well.
# Exit status: 0 every validation passed; 1 a validation failed, a family
# (or the probe) crashed or timed out; 2 no CUDA device; 3 the build failed.
# The status is also written to BUILD/gpu-check/exit-status (make reports
# any failure as its own 2). Every family appends its rows to the TSV as it
# measures them, so a crash keeps the rows before it. Safe to rerun: every
# run starts a fresh log and result file.
set -u
build=${1:-build/gpu}
dir=$build/gpu-check
mkdir -p "$dir"
log=$dir/gpu-check.log
results=$dir/results.tsv
rm -f "$log" "$results" "$dir/table.txt" "$dir/exit-status"
if [ -n "${OUT:-}" ] && mkdir -p "$OUT" 2>/dev/null; then
    exec > >(tee "$log" "$OUT/gpu-check.log") 2>&1
else
    OUT=
    exec > >(tee "$log") 2>&1
fi
tee_pid=$!
# record the status, and let tee write the last lines before the script's caller moves on
trap 'rc=$?; echo "$rc" > "$dir/exit-status"; [ -n "$OUT" ] && cp "$dir/exit-status" "$OUT/" 2>/dev/null; exec >&- 2>&-; wait "$tee_pid" 2>/dev/null; exit $rc' EXIT

seed=${GPU_CHECK_SEED:-$(date +%s)}
echo "== gpu-check $(date -u '+%Y-%m-%d %H:%M:%S UTC') on $(uname -n), seed $seed"
command -v nvidia-smi >/dev/null &&
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem --format=csv
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
cc=$(command -v cc || command -v gcc || echo cc)
echo "nvcc: $nvcc ($("$nvcc" --version 2>/dev/null | tail -1)); cc: $cc"

start=$SECONDS
echo "== build (sm_90, $(nproc) jobs)"
if ! make --no-print-directory -j"$(nproc)" BUILD="$build" WERROR= NVCC="$nvcc" CC="$cc" \
    CUDA_ARCH="-gencode arch=compute_90,code=sm_90" "$build/cuda/gpucheck"; then
    echo "gpu-check: the build failed"
    exit 3
fi
echo "build: $((SECONDS - start)) s"
bin=$build/cuda/gpucheck
"$bin" --probe
rc=$?
case $rc in
0) ;;
4) echo "gpu-check: no usable CUDA device"; exit 2 ;; # gpucheck's "no CUDA device"
*) echo "gpu-check: the probe itself failed with status $rc (above 128: killed by signal $((rc - 128)))"; exit 1 ;;
esac

status=0
# family:seconds — guards that add up to under 7 minutes (with the build, under 7½);
# a normal run takes a fraction of each.
for spec in copy:30 matvec:150 norm:30 rope_kv:30 attention:45 kv_quant:20 deltanet:40 sample:40 graph:15; do
    fam=${spec%%:*} limit=${spec##*:}
    t0=$SECONDS
    timeout --signal=KILL "$limit" "$bin" --only "$fam" --seed "$seed" --results "$results"
    rc=$?
    echo "== $fam: exit $rc after $((SECONDS - t0)) s"
    case $rc in
    0) ;;
    1) status=1 ;;
    4) echo "gpu-check: family $fam found no CUDA device after the probe found one"; status=1 ;;
    137) echo "gpu-check: family $fam ran past its $limit s limit"; status=1 ;;
    *) echo "gpu-check: family $fam ended with status $rc (see above)"; status=1 ;;
    esac
    [ -n "$OUT" ] && [ -f "$results" ] && cp "$results" "$OUT/"
done

echo "== the table (all families, seed $seed; replay one with: $bin --only FAMILY --seed $seed)"
if [ -f "$results" ]; then
    "$bin" --report "$results" > "$dir/table.txt"
    rc=$?
    cat "$dir/table.txt"
    [ $rc -ne 0 ] && status=1
    [ -n "$OUT" ] && cp "$results" "$dir/table.txt" "$OUT/"
else
    echo "gpu-check: no results were written"
    status=1
fi
echo "gpu-check: total $((SECONDS - start)) s, exit $status"
exit $status
