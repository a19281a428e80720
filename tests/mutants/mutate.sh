#!/bin/sh
# mutate.sh NAME SOURCE MUTANTS — writes SOURCE with mutant NAME of the
# MUTANTS file applied to stdout. Fails, naming the mutant, when its text
# does not occur in SOURCE exactly once (the source moved on: update the
# mutant, never drop it silently).
set -eu
name=$1 src=$2 list=$3
awk -F '\t' -v name="$name" -v src="$src" '
    FNR == NR {
        if ($0 !~ /^#/ && $1 == name) { from = $2; to = $3; found = 1 }
        next
    }
    FNR == 1 && (!found || from == "") {
        print "mutate.sh: no mutant named " name " (with a text to replace)" > "/dev/stderr"
        failed = 1
        exit 2
    }
    {
        line = $0
        while ((i = index(line, from)) > 0) {
            hits++
            out = out substr(line, 1, i - 1) to
            line = substr(line, i + length(from))
        }
        print out line
        out = ""
    }
    END {
        if (failed) exit 2
        if (hits != 1) { print "mutate.sh: mutant " name ": its text occurs " hits + 0 " times in " src ", not once" > "/dev/stderr"; exit 2 }
    }' "$list" "$src"
