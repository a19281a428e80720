#!/usr/bin/env bash
# course-links.sh BUILD COUNTS — every relative link and image in the course
# (lessons/*.md, lessons/exercises, notebooks-c/*.md) points at a file that
# exists, so a reader on any git host never meets a broken figure or page;
# so does every lesson or source path an exercise's C file names.
# Writes "passed failed skipped" to COUNTS.
set -u
counts=${2:-/dev/null}
pass=0 fail=0
for md in lessons/*.md lessons/exercises/*/*.md notebooks-c/*.md; do
    [ -f "$md" ] || continue
    dir=$(dirname "$md")
    # every ](target) of a Markdown link or image, minus anchors and URLs
    while read -r target; do
        target=${target%%#*}
        case $target in '' | http://* | https://* | mailto:*) continue ;; esac
        if [ -e "$dir/$target" ]; then
            pass=$((pass + 1))
        else
            fail=$((fail + 1))
            echo "FAIL course-links: $md links to $target, which does not exist"
        fi
    done < <(grep -o '](\([^)]*\))' "$md" | sed 's/^](\(.*\))$/\1/')
done
# the lesson, notebook and source paths the exercises' C files name in their
# comments (repository-relative)
for c in lessons/exercises/*/*.c; do
    [ -f "$c" ] || continue
    while read -r target; do
        if [ -e "$target" ]; then
            pass=$((pass + 1))
        else
            fail=$((fail + 1))
            echo "FAIL course-links: $c names $target, which does not exist"
        fi
    done < <(grep -o '\(lessons\|notebooks-c\|reference\|verify\|docs\)/[A-Za-z0-9_./-]*\.\(md\|h\|c\)' "$c" | sort -u)
done
echo "course-links: $pass passed, $fail failed"
echo "$pass $fail 0" >"$counts"
[ "$fail" -eq 0 ]
