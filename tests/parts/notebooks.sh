#!/usr/bin/env bash
# notebooks.sh BUILD COUNTS — `make notebooks` as part of `make test`: every
# cell of every notebooks-c/ notebook compiled, run and compared with its
# output block. Writes "passed failed skipped" (cells) to COUNTS.
set -u
build=${1:-build}
counts=${2:-/dev/null}
make --no-print-directory -s notebooks BUILD="$build" NOTEBOOK_ARGS="--counts $counts"
