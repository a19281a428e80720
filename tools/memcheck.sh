#!/usr/bin/env bash
# memcheck.sh BUILD — the body of `make memcheck`: the main command paths
# under valgrind's memcheck, each on a small input: info, generate with every
# method and both trees of drafts on both backends (the engine at --threads
# 1, and 2 for two methods), bench, logits, two refusals that free what
# they loaded, verify at a small --scale and its --plan, a few steps of
# medusa-train, plot --term dumb. A command passes when valgrind reports no error and no definitely
# lost block and the command exits with its own expected status. One line
# per command, then a summary; valgrind's log of each command is kept in
# BUILD/memcheck/. A planted uninitialised read and leak, caught first, is
# the negative control.
# Slow (a few minutes): not part of `make test`.
set -u
build=${1:-build}
specula=$(realpath "$build/specula")
genmodel=$(realpath "$build/genmodel")
logs=$build/memcheck
command -v valgrind >/dev/null || { echo "memcheck: valgrind is not installed (Debian package valgrind)" >&2; exit 1; }
rm -rf "$logs" && mkdir -p "$logs"
logs=$(realpath "$logs")
tmp=$(mktemp -d "${TMPDIR:-/tmp}/specula-memcheck-XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# --error-exitcode is 99, not 1: the commands' own statuses are 0, 1 and 2.
# Definite leaks count as errors; "possibly lost" and "still reachable" are
# left in the log (every command has 8 bytes still reachable: a block libgomp
# allocates when it is loaded; at --threads 2, its threads' stacks). No
# suppression file: none is needed.
vg=(valgrind --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite)
pass=0 fail=0 n=0
started=$(date +%s)

vg_run() { # vg_run LOG COMMAND... — sets rc, errors and definite from valgrind's log
    local log=$1
    shift
    (cd "$tmp" && "${vg[@]}" --log-file="$log.vg" "$@" >"$log.out" 2>"$log.err")
    rc=$?
    errors=$(sed -n 's/.*ERROR SUMMARY: \([0-9]*\) errors.*/\1/p' "$log.vg" | tail -1)
    definite=$(sed -n 's/.*definitely lost: \([0-9,]*\) bytes.*/\1/p' "$log.vg" | tail -1)
}

mc() { # mc NAME STATUS COMMAND... — one command under memcheck, expecting exit STATUS
    local name=$1 want=$2
    shift 2
    n=$((n + 1))
    local log t0 verdict=ok
    log=$logs/$(printf '%02d' "$n")-$(echo "$name" | sed 's/[^A-Za-z0-9.]\{1,\}/-/g; s/-$//')
    t0=$(date +%s%N)
    vg_run "$log" "$@"
    if [ "${errors:-x}" != 0 ] || [ "${definite:-0}" != 0 ] || [ "$rc" != "$want" ]; then
        verdict=FAIL
        fail=$((fail + 1))
    else
        pass=$((pass + 1))
    fi
    printf '%-4s %-58s %s errors, %s B definitely lost, exit %s (expected %s), %5.1f s\n' "$verdict" "$name" \
        "${errors:-?}" "${definite:-0}" "$rc" "$want" "$(awk -v d=$(($(date +%s%N) - t0)) 'BEGIN {print d / 1e9}')"
}

echo "memcheck: $(valgrind --version), logs in $logs"

# Negative control: a program that exits with a status computed from an
# uninitialised byte and loses a block must be caught (two errors, 16 bytes definitely lost,
# valgrind's exit status), or the verdicts below mean nothing.
printf '%s\n' '#include <stdlib.h>' 'int main(void) {' '    char *lost = malloc(16);' \
    '    int status = lost[3] == 7;' '    lost = NULL;' '    return status;' '}' >"$tmp/planted.c"
${CC:-cc} -O0 -g -o "$tmp/planted" "$tmp/planted.c" || { echo "memcheck: cannot build the control" >&2; exit 1; }
vg_run "$logs/00-control" "$tmp/planted"
if [ "${errors:-0}" = 2 ] && [ "${definite:-0}" = 16 ] && [ "$rc" = 99 ]; then
    echo "ok   control: a planted uninitialised read and leak are caught ($errors errors, $definite B definitely lost)"
else
    echo "FAIL control: a planted uninitialised read and leak: ${errors:-?} errors, ${definite:-0} B definitely lost," \
        "exit $rc (expected 2, 16 and 99)"
    fail=$((fail + 1))
fi

emb=$(realpath "$(dirname "$0")/../models/tiny-shakespeare")
m=$tmp/micro
"$genmodel" --preset micro --quiet --medusa-heads 4 "$m"
"$genmodel" --preset micro-draft --quiet "$m-draft"

mc "info (embedded model)" 0 "$specula" info "$emb"
mc "info (micro, --medusa heads)" 0 "$specula" info "$m"
for backend in reference cpu; do
    threads=()
    [ "$backend" = cpu ] && threads=(--threads 1)
    for method in greedy sample beam spec mtp medusa lookup; do
        seed=(--seed 3)
        [ "$method" = beam ] && seed=() # beam search draws nothing at random
        mc "generate --method $method --backend $backend" 0 "$specula" generate --model "$emb" --method "$method" \
            --max-tokens 12 --no-eos "${seed[@]}" --backend "$backend" "${threads[@]}"
    done
    mc "generate --method medusa --backend $backend (micro)" 0 "$specula" generate --model "$m" --tokens 1,2,3 \
        --method medusa --max-tokens 12 --no-eos --ids --json --backend "$backend" "${threads[@]}"
    for method in spec mtp; do # trees of drafts: 2 children under the root, 2 under each, 1 under those
        mc "generate --method $method --tree-shape 2,2,1 --backend $backend" 0 "$specula" generate --model "$emb" \
            --method "$method" --tree-shape 2,2,1 --temperature 0.8 --max-tokens 12 --no-eos --seed 3 \
            --backend "$backend" "${threads[@]}"
    done
    mc "bench --backend $backend (micro, every row and the cost model)" 0 "$specula" bench "$m" --runs 1 --tokens 6 \
        --cost-reps 1 --backend "$backend" "${threads[@]}"
    mc "logits --backend $backend --out --mtp-out" 0 "$specula" logits "$emb" --tokens 3,1,4,1,5,9,2,6 \
        --out "$tmp/l.bin" --mtp-out "$tmp/m.bin" --mtp-chain-from 3 --backend "$backend" "${threads[@]}"
done
# the engine's OpenMP loops on two threads (libgomp's thread stacks show as
# "possibly lost": they are its pool's, kept until exit)
for method in spec medusa; do
    mc "generate --method $method --backend cpu --threads 2 (micro)" 0 "$specula" generate --model "$m" \
        --tokens 1,2,3 --method "$method" --max-tokens 12 --no-eos --ids --backend cpu --threads 2
done
mc "logits (printed)" 0 "$specula" logits "$m" --tokens 3,1,4,1,5
# refusals free what they loaded: a second output that cannot be created
# after the first was opened, a Medusa tree deeper than the heads
mc "logits --out, --mtp-out into a missing folder (refused)" 2 "$specula" logits "$m" --tokens 3,1,4 \
    --out "$tmp/l2.bin" --mtp-out "$tmp/nope/m.bin"
printf '[[0],[0,0],[0,0,0],[0,0,0,0],[0,0,0,0,0]]\n' >"$tmp/deep-tree.json"
mc "generate --method medusa --tree deeper than the heads (refused)" 2 "$specula" generate --model "$m" \
    --tokens 1,2,3 --method medusa --tree "$tmp/deep-tree.json" --max-tokens 4
mc "verify --plan --all" 0 "$specula" verify --plan --all
# 200 draws per case and 100 per planted bug: too few for the controls to
# be rejected (they need 1 000 to 15 500), so verify reports them and exits 1;
# every case's code runs all the same.
mc "verify --samples 200 --control-samples 100" 1 "$specula" verify --samples 200 --control-samples 100 --quiet
mc "medusa-train (micro, 3 steps)" 0 "$specula" medusa-train --model "$m" --random-prompts --out "$tmp/heads.safetensors" \
    --heads 2 --sequences 4 --eval-sequences 2 --prompt-len 8 --gen-len 8 --steps 3 --batch 4 --warmup 1 \
    --tree-out "$tmp/tree.json" --manifest "$tmp/manifest" --log-every 1
mc "plot --term dumb" 0 "$specula" plot --out "$tmp/plots" --term dumb --temperatures 0 --prompts 1 --tokens 8

printf 'memcheck: %d commands, %d clean, %d failed (%s; %d s)\n' "$n" "$pass" "$fail" "$(valgrind --version)" \
    "$(($(date +%s) - started))"
[ "$fail" = 0 ]
