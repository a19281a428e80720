#!/usr/bin/env bash
# determinism-cli.sh BUILD COUNTS — the same seed gives bit-identical tokens
# on a rerun, for every method (greedy, sample, spec, mtp, beam, medusa, lookup) on
# both backends, and medusa on the CPU engine at any --threads
# (method-cli.sh covers the other methods' thread counts). Compared: the
# whole `generate --json` output less its timing fields. Negative control:
# another seed must change the tokens of every sampled method, so a
# comparison that cannot fail (an empty output, a seed ignored) is caught.
# On a random micro model with an MTP module, a draft and Medusa heads.
# Writes "passed failed skipped" to COUNTS.
set -u
build=${1:-build}
counts=${2:-/dev/null}
specula=$build/specula
pass=0 fail=0
tmp=$(mktemp -d "${TMPDIR:-/tmp}/specula-determinism-XXXXXX")
trap 'rm -rf "$tmp"' EXIT

check() { # check NAME COMMAND...
    local name=$1
    shift
    if "$@"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL determinism-cli: $name"; fi
}
strip() { sed 's/"ttft_s": [^,]*,//; s/"decode_s": [^,]*,//; s/"decode_tokens_per_s": [^,}]*//' "$1"; }
tokens() { grep -o '"tokens": \[[^]]*\]' "$1"; }
differ() { [ "$(tokens "$1")" != "$(tokens "$2")" ]; }

m=$tmp/micro
"$build/genmodel" --preset micro --quiet --medusa-heads 3 "$m"
"$build/genmodel" --preset micro-draft --quiet "$m-draft"

run() { # run OUT METHOD SEED BACKEND THREADS
    local out=$1 method=$2 seed=$3 backend=$4 threads=$5
    local how=(--temperature 0.9 --seed "$seed")
    case $method in
    greedy) how=(--temperature 0) ;;
    beam) how=(--beams 3) ;; # beam scores raw log-probabilities: no temperature, no seed
    spec) how+=(--draft "$m-draft") ;;
    esac
    [ "$backend" = cpu ] && how+=(--threads "$threads") # the reference has one thread
    "$specula" generate --model "$m" --tokens 1,2,3 --method "$method" "${how[@]}" --max-tokens 32 --no-eos \
        --ids --json --backend "$backend" >"$out" 2>"$out.err"
}

for backend in reference cpu; do
    for method in greedy sample spec mtp beam medusa lookup; do
        what="$method on --backend $backend"
        run "$tmp/a" "$method" 11 "$backend" 1
        run "$tmp/b" "$method" 11 "$backend" 1
        check "$what: tokens out" grep -q '"tokens": \[[0-9]' "$tmp/a"
        check "$what: a rerun with the same seed is bit-identical" cmp -s <(strip "$tmp/a") <(strip "$tmp/b")
        case $method in
        greedy | beam) ;;
        *)
            run "$tmp/c" "$method" 12 "$backend" 1
            check "$what: another seed changes the tokens (control)" differ "$tmp/a" "$tmp/c"
            ;;
        esac
        [ "$method" = medusa ] && [ "$backend" = cpu ] && cp "$tmp/a" "$tmp/medusa.cpu"
    done
done
for t in 2 3; do
    run "$tmp/medusa.t$t" medusa 11 cpu "$t"
    check "medusa on --backend cpu --threads $t as at 1 thread" \
        cmp -s <(strip "$tmp/medusa.cpu") <(strip "$tmp/medusa.t$t")
done
echo "determinism-cli: $pass passed, $fail failed, 0 skipped"
echo "$pass $fail 0" >"$counts"
[ "$fail" -eq 0 ]
