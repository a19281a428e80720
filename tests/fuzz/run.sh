#!/usr/bin/env bash
# run.sh BUILD SECONDS NAME... — runs each libFuzzer target BUILD/fuzz/fuzz-NAME
# for SECONDS, one after the other, from its seeds (tests/fuzz/corpus/NAME)
# and what earlier runs found (BUILD/fuzz/corpus/NAME, where new inputs go),
# and prints one line per target: executions, coverage (libFuzzer's cov:
# edges, ft: features), corpus size, and the crash file if it crashed. A
# crash input lands in BUILD/fuzz/crashes/NAME/; the full log in
# BUILD/fuzz/logs/NAME.log. Exits 1 when any target crashed or did not run.
# FUZZ_NICE=19 runs the fuzzers at that niceness (long runs on a shared machine).
set -u
build=$1 seconds=$2
shift 2
status=0
printf '%-14s %8s %12s %9s %8s %8s %7s  %s\n' target seconds executions exec/s cov ft corpus result
for name in "$@"; do
    bin=$build/fuzz/fuzz-$name
    corpus=$build/fuzz/corpus/$name crashes=$build/fuzz/crashes/$name log=$build/fuzz/logs/$name.log
    mkdir -p "$corpus" "$crashes" "$(dirname "$log")"
    seeds=tests/fuzz/corpus/$name
    start=$(date +%s)
    # -close_fd_mask=3: the library's own messages (usage text, refusals) would drown the log; libFuzzer
    # and the sanitizers still report. -timeout: an input that takes 10 s is a hang, reported as one.
    nice -n "${FUZZ_NICE:-0}" "$bin" -max_total_time="$seconds" -timeout=10 -print_final_stats=1 -close_fd_mask=3 \
        -artifact_prefix="$crashes/" "$corpus" "$seeds" >"$log" 2>&1
    rc=$?
    took=$(($(date +%s) - start))
    # the last status line, e.g. "#123456  DONE   cov: 512 ft: 1534 corp: 87/9Kb exec/s: 4115 rss: 60Mb"
    last=$(grep -E '^#[0-9]+' "$log" | tail -n 1)
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
    ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
    corp=$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' <<<"$last")
    result=ok
    if [ "$rc" -ne 0 ]; then
        status=1
        artifact=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -n 1)
        result="FAILED (exit $rc) ${artifact:-see $log}"
    fi
    printf '%-14s %8s %12s %9s %8s %8s %7s  %s\n' "$name" "$took" "${execs:-?}" \
        "$([ -n "$execs" ] && [ "$took" -gt 0 ] && echo $((execs / took)) || echo '?')" "${cov:-?}" "${ft:-?}" \
        "${corp:-?}" "$result"
done
exit $status
