#!/usr/bin/env bash
# test-under-load.sh [N] — `make test` beside N CPU-bound processes (default 6: a load near 8 on 2 cores), the
# check that no test fails for lack of CPU (docs/reliability.md, "Time limits"). Run it before calling the suite
# robust, from a clean clone. Prints make test's own output, then its wall time, the exit status and the load
# average seen every 30 s; the busy processes are this script's own and end with it.
set -u
n=${1:-6}
busy=()
for ((i = 0; i < n; i++)); do
    sh -c 'while :; do :; done' &
    busy+=($!)
done
sample() { while :; do cut -d' ' -f1 /proc/loadavg >>"$loads"; sleep 30; done; }
loads=$(mktemp)
sample &
sampler=$!
trap 'kill "${busy[@]}" "$sampler" 2>/dev/null; rm -f "$loads"' EXIT
start=$(date +%s)
make test
rc=$?
echo "test-under-load: make test beside $n busy processes on $(nproc) cores: exit $rc after $(($(date +%s) - start)) s;" \
    "load average (1 min) from $(sort -n "$loads" | head -1) to $(sort -n "$loads" | tail -1)"
exit $rc
