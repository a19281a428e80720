#!/usr/bin/env bash
# bench-course.sh BUILD — the body of `make bench-course`: every method on the course model (models/course, its
# draft models/course-draft and its heads models/course-medusa) on the CPU engine, at temperature 0 and 1, each
# chain method at k = 1 … 4 (MTP with argmax and with sampled drafts at temperature 1), the methods alternated
# run by run, medians with their min-max over RUNS runs beside the cost model's prediction. The speed figures of
# docs/performance.md and the lessons come from this command, with its header line (date, machine, threads).
#
#   RUNS (default 7)  TOKENS (default 128)  THREADS (default: every core)  TEMPERATURES (default "0 1")
set -u
build=${1:-build}
specula="$build/specula"
model=models/course
runs=${RUNS:-7}
tokens=${TOKENS:-128}
threads=${THREADS:-$(nproc 2>/dev/null || echo 1)}
temperatures=${TEMPERATURES:-"0 1"}
# A held-out prompt: this text is in the part of tiny-shakespeare that no model here was trained on.
prompt="BAPTISTA:
I have a daughter, sir, called Katharina.

GREMIO:
"

if [ ! -f "$model/model.safetensors" ]; then
    echo "bench-course: $model has no weights; see docs/models.md for how the course model is trained" >&2
    exit 1
fi
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -1)
echo "# make bench-course, $(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -m) ${cpu:-CPU} ($(nproc) cores)," \
    "$threads engine threads, load average $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)"
for t in $temperatures; do
    echo
    "$specula" bench "$model" --backend cpu --threads "$threads" --temperature "$t" --k-sweep 1,2,3,4 \
        --runs "$runs" --tokens "$tokens" --prompt "$prompt" || exit 1
done
