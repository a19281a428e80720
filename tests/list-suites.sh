#!/bin/sh
# list-suites.sh GROUP FILE... — prints one SUITE(group, name) line for every
# `Suite *name_suite(void)` defined in the given test sources.
group=$1
shift
for f in "$@"; do
    sed -n 's/^Suite \*\([A-Za-z0-9_]*\)_suite(void).*/SUITE('"$group"', \1)/p' "$f"
done
