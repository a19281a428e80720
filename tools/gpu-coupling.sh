#!/usr/bin/env bash
# gpu-coupling.sh SPECULA MODEL SEEDS TOKENS — sampled generation on the CUDA
# engine beside the CPU engine, seed for seed, for a GPU session
# (tools/gpu-session.sh). Every draw of a run is a function of its rng site,
# and the CUDA engine accepts on the device at the sites the CPU engine uses
# on the host, so the two runs of one seed are a coupling of the two output
# laws: the fraction of seeds whose tokens differ bounds their
# total-variation distance (tests/gpu/test_accept_coupling.c, where the
# emulator holds the device path to the host path). Here the logits differ
# by the device's numerics (bf16 KV cache), so a draw within that of a tie
# may go either way; the count and its Clopper–Pearson bound are reported,
# not judged. Exit status: 0, or 1 when a run fails.
set -u
spec=$1 model=$2 seeds=$3 tokens=$4
tmp=$(mktemp -d "${TMPDIR:-/tmp}/specula-coupling-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
differ=0 runs=0
for method in "spec --k 3" "mtp --k 3 --mtp-sample" "sample"; do
    for ((s = 1; s <= seeds; s++)); do
        for backend in cuda cpu; do
            # shellcheck disable=SC2086 # the method's flags are words
            "$spec" generate --model "$model" --backend $backend --method $method --prompt "ROMEO:" \
                --max-tokens "$tokens" --temperature 0.8 --seed "$s" --json >"$tmp/json" 2>"$tmp/err" &&
                python3 -c 'import json, sys; print(json.load(sys.stdin)["tokens"])' <"$tmp/json" >"$tmp/$backend" || {
                echo "gpu-coupling: --method $method --seed $s on $backend failed: $(tail -2 "$tmp/err")"
                exit 1
            }
        done
        cmp -s "$tmp/cuda" "$tmp/cpu" || differ=$((differ + 1))
        runs=$((runs + 1))
    done
done
python3 - "$differ" "$runs" "$tokens" <<'PY'
import math, sys
x, n, tokens = (int(a) for a in sys.argv[1:])
def tail(u):  # P(Bin(n, u) <= x)
    return sum(math.comb(n, i) * u**i * (1 - u) ** (n - i) for i in range(x + 1))
lo, hi = x / n, 1.0  # the one-sided 95 % Clopper-Pearson bound: tail(u) = 0.05
for _ in range(60):
    mid = (lo + hi) / 2
    lo, hi = (mid, hi) if tail(mid) > 0.05 else (lo, mid)
bound = 1.0 if x == n else hi
print(f"sampled tokens, cuda beside cpu: {x} of {n} runs of {tokens} tokens differ "
      f"(spec, mtp, plain sampling; T = 0.8): TV <= {bound:.3f} at 95 %")
PY
