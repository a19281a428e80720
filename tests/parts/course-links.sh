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
# every link to an entry of the bibliography names a heading that exists (GitHub's anchor of "### Li 2024
# (EAGLE-2)" is li-2024-eagle-2), and every entry is cited by some lesson or notebook
bib=lessons/bibliography.md
anchors=$(sed -n 's/^### //p' "$bib" | tr '[:upper:]' '[:lower:]' | sed 's/[^a-z0-9 -]//g; s/ /-/g')
while read -r ref; do
    [ -n "$ref" ] || continue
    if grep -qx -- "$ref" <<<"$anchors"; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        echo "FAIL course-links: a link to bibliography.md#$ref, which is no heading of $bib"
    fi
done < <(cat lessons/*.md notebooks-c/*.md | grep -o 'bibliography\.md#[a-z0-9-]*' | sed 's/.*#//' | sort -u)
while read -r a; do
    if cat lessons/[0-9]*.md notebooks-c/*.md | grep -q "bibliography\.md#$a)"; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        echo "FAIL course-links: the bibliography's entry #$a is cited by no lesson or notebook"
    fi
done <<<"$anchors"
echo "course-links: $pass passed, $fail failed"
echo "$pass $fail 0" >"$counts"
[ "$fail" -eq 0 ]
