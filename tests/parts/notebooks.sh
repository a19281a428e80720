#!/usr/bin/env bash
# notebooks.sh BUILD COUNTS — `make notebooks` as part of `make test`: every
# cell of every notebooks-c/ notebook compiled, run and compared with its
# output block. Writes "passed failed skipped" (cells) to COUNTS.
set -u
build=${1:-build}
counts=${2:-/dev/null}
# --timeout 120: the longest cells take about 10 s of CPU; a hung cell still
# ends the part, and a machine shared with other work does not.
make --no-print-directory -s notebooks BUILD="$build" NOTEBOOK_ARGS="--counts $counts --timeout 120"
