#!/usr/bin/env bash
# demo.sh BUILD — the body of `make demo`: one prompt, every decoding method
# on the embedded models, each with its continuation, tokens per target pass
# and acceptance per draft position.
set -u
build=${1:-build}
specula="$build/specula"
model=models/tiny-shakespeare
prompt=${DEMO_PROMPT:-"ROMEO:
"}
tokens=${DEMO_TOKENS:-60}

if [ ! -f "$model/model.safetensors" ]; then
    echo "demo: $model has no weights; see docs/models.md for how they are trained" >&2
    exit 1
fi

run() {
    local title=$1
    shift
    echo
    echo "=== $title"
    echo "\$ specula generate $*"
    "$specula" generate --prompt "$prompt" --max-tokens "$tokens" "$@" || exit 1
}

"$specula" info "$model" | sed -n '1,12p'
run "greedy (temperature 0)" --method greedy
run "sampled (temperature 0.8, top-p 0.95)" --method sample --temperature 0.8 --top-p 0.95 --seed 7
run "spec, greedy (temperature 0): the output must equal plain greedy" --method spec --temperature 0
run "spec, sampled (temperature 0.8)" --method spec --temperature 0.8 --seed 7
run "mtp, greedy (temperature 0): the output must equal plain greedy" --method mtp --k 3 --temperature 0
# argmax drafts suit greedy decoding; when sampling, drafts sampled from the MTP's own distribution match p better
run "mtp, sampled drafts (temperature 0.8)" --method mtp --k 3 --mtp-sample --temperature 0.8 --seed 7
if "$specula" generate --help | grep -q -- "--medusa"; then
    run "medusa, typical acceptance (temperature 0.8)" --method medusa --rule typical --temperature 0.8 --seed 7
    run "medusa, exact acceptance (temperature 0.8)" --method medusa --rule exact --temperature 0.8 --seed 7
fi
# no model drafts: the tokens after an earlier occurrence of the context's last few tokens
run "prompt lookup, greedy (temperature 0): the output must equal plain greedy" --method lookup --k 4 --temperature 0
if "$specula" generate --help | grep -q -- "--beams"; then
    run "beam search (4 beams)" --method beam --beams 4
fi

# The course model (docs/models.md): the 27B's proportions in miniature — 16 layers, 31 MiB read per decode step,
# an MTP step at 7 % of it — on which MTP speculation beats plain decoding on a CPU, by a margin that the cost of a
# pass over k + 1 positions bounds (docs/performance.md). Plain decoding and MTP side by side on the CPU engine,
# alternated run by run.
course=models/course
if [ -f "$course/model.safetensors" ]; then
    threads=$(nproc 2>/dev/null || echo 1)
    echo
    echo "=== the course model: plain decoding against MTP speculation on the CPU engine ($threads threads)"
    for t in 0 1; do
        echo "\$ specula bench $course --backend cpu --threads $threads --temperature $t --method mtp" \
            "--k-sweep ${DEMO_COURSE_KS:-2,3} --runs 3 --tokens 96 --cost-reps 0 --prompt <a held-out prompt>"
        "$specula" bench "$course" --backend cpu --threads "$threads" --temperature "$t" --method mtp \
            --k-sweep "${DEMO_COURSE_KS:-2,3}" --runs 3 --tokens 96 --cost-reps 0 \
            --prompt "BAPTISTA:
I have a daughter, sir, called Katharina.

GREMIO:
" | awk '/^(withheld|gate):/ { exit } { print }' || exit 1
    done
fi
