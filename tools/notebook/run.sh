#!/bin/sh
# run.sh — runs Markdown notebooks of C cells and checks each cell's output
# against the ```output block under it; with --update, writes the blocks
# (and the figure files) from what the code prints. POSIX sh + awk; the
# format is described in notebooks-c/README.md. `make notebooks` calls it
# with the project's compiler flags and libraries.
set -u

usage() {
    cat <<'USAGE'
usage: run.sh [options] NOTEBOOK.md...
  --cc CC          C compiler (default cc)
  --cflags FLAGS   compiler flags for every cell (make passes the project's)
  --libs LIBS      what every cell links: the library and its -l flags
  --build DIR      scratch directory (default build); cells go to DIR/notebooks/
  --timeout S      seconds a cell may run (default 60)
  --update         rewrite the output blocks and figure files from the cells' output
  --counts FILE    also write "passed failed skipped" (cells) to FILE
Each ```c cell is compiled as a complete program and run with its working
directory set to a scratch folder holding `models` (a link to the
repository's) and an empty `figures/`. Its stdout must equal the ```output
block that follows it (word by word within tol when the block says
```output tol=X). Files it writes under figures/ must equal the notebook's
committed figures/ files, and every *.gp among them must have its PNG there;
--update copies them and renders the PNGs with gnuplot.
Prints PASS/FAIL per cell and "N passed, N failed" at the end; exits 1 when
anything failed.
USAGE
}

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cc=cc cflags= libs= build=build timeout_s=60 update=0 counts=
while [ $# -gt 0 ]; do
    case $1 in
    --cc) cc=$2; shift 2 ;;
    --cflags) cflags=$2; shift 2 ;;
    --libs) libs=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --timeout) timeout_s=$2; shift 2 ;;
    --update) update=1; shift ;;
    --counts) counts=$2; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    --*) echo "run.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
    *) break ;;
    esac
done
[ $# -gt 0 ] || { usage >&2; exit 2; }
case $build in /*) ;; *) build=$(pwd)/$build ;; esac

passed=0 failed=0

fail() { # fail WHAT MESSAGE [FILE]: one failure, with FILE's first lines as detail
    failed=$((failed + 1))
    echo "FAIL $1: $2"
    [ $# -lt 3 ] || sed -n '1,40s/^/    /p' "$3"
}

# replace_whole SRC DEST: DEST replaced by a copy of SRC made beside it,
# synced and renamed over it, so an interrupted --update leaves the old
# notebook or figure whole (docs/reliability.md). `sync FILE` is GNU; where
# it is missing the rename still keeps DEST whole, without the fsync.
replace_whole() {
    tmpf="$2.tmp.$$"
    if cp "$1" "$tmpf" && { sync "$tmpf" 2>/dev/null || :; } && mv -f "$tmpf" "$2"; then
        return 0
    fi
    rm -f "$tmpf"
    return 1
}

# same_output EXPECTED GOT TOL DIFF: 0 when they agree; the difference goes to DIFF.
same_output() {
    if [ "$3" = "-" ]; then
        cmp -s "$1" "$2" && return 0
        diff -u "$1" "$2" | sed '1,2d' >"$4"
        return 1
    fi
    awk -v tol="$3" -f "$here/numcmp.awk" "$1" "$2" >"$4"
}

# check_figures NAME DIR NBDIR TOL: the files a cell wrote under DIR/figures
# against NBDIR/figures (or, with --update, copied there and rendered).
check_figures() {
    for f in "$2"/figures/*; do
        [ -f "$f" ] || continue
        base=$(basename "$f")
        committed=$3/figures/$base
        if [ $update = 1 ]; then
            mkdir -p "$3/figures" && replace_whole "$f" "$committed"
            case $base in
            *.gp)
                if command -v gnuplot >/dev/null 2>&1; then
                    (cd "$3/figures" && gnuplot "$base") </dev/null >"$2.gnuplot" 2>&1 ||
                        { fail "$1" "gnuplot $base failed" "$2.gnuplot"; return 1; }
                else
                    echo "note: no gnuplot here; $base copied, its PNG not rendered"
                fi
                ;;
            esac
            continue
        fi
        [ -f "$committed" ] || { fail "$1" "wrote figures/$base, which the notebook does not have (run --update)"; return 1; }
        tol=$4
        case $base in *.gp) tol=- ;; esac
        same_output "$committed" "$f" "$tol" "$2.figdiff" ||
            { fail "$1" "figures/$base differs from the committed file" "$2.figdiff"; return 1; }
        case $base in
        *.gp)
            png=${base%.gp}.png
            [ -f "$3/figures/$png" ] || { fail "$1" "figures/$png is missing (render it with --update)"; return 1; }
            ;;
        esac
    done
    return 0
}

# check_links NB: every image the notebook links must exist.
check_links() {
    nbdir=$(dirname "$1")
    missing=$(sed -n 's/.*!\[[^]]*\](\([^)]*\)).*/\1/p' "$1" | while read -r img; do
        case $img in http*) continue ;; esac
        [ -f "$nbdir/$img" ] || echo "$img"
    done)
    [ -z "$missing" ] || { fail "$(basename "$1")" "linked images missing: $(echo $missing)"; return 1; }
}

for nb in "$@"; do
    name=$(basename "$nb" .md)
    nbdir=$(cd "$(dirname "$nb")" && pwd)
    work=$build/notebooks/$name
    rm -rf "$work" && mkdir -p "$work"
    if ! awk -v dir="$work" -f "$here/cells.awk" "$nb" >"$work/cells" 2>"$work/parse.err"; then
        fail "$name.md" "cannot be read as a notebook" "$work/parse.err"
        continue
    fi
    : >"$work/updated"
    while read -r n copen cclose oopen oclose tol; do
        what="$name.md cell $n (line $copen)"
        if ! $cc $cflags -o "$work/cell-$n" "$work/cell-$n.c" $libs >"$work/cc-$n.log" 2>&1; then
            fail "$what" "does not compile" "$work/cc-$n.log"
            continue
        fi
        run=$work/run-$n
        mkdir -p "$run/figures" && ln -s "$root/models" "$run/models"
        (cd "$run" && exec timeout "$timeout_s" "$work/cell-$n") >"$work/got-$n.txt" 2>"$work/err-$n.txt" </dev/null
        rc=$?
        if [ $rc -eq 124 ]; then
            fail "$what" "still running after ${timeout_s} s" "$work/err-$n.txt"
            continue
        elif [ $rc -ne 0 ]; then
            fail "$what" "exited with status $rc" "$work/err-$n.txt"
            continue
        fi
        [ ! -s "$work/got-$n.txt" ] || [ -z "$(tail -c 1 "$work/got-$n.txt")" ] || echo >>"$work/got-$n.txt"
        if grep -q '^```' "$work/got-$n.txt"; then
            fail "$what" "printed a line starting with \`\`\`, which would end its output block"
            continue
        fi
        if [ $update = 1 ]; then # rewrite only blocks that no longer match
            [ "$oopen" -ne 0 ] && same_output "$work/expect-$n.txt" "$work/got-$n.txt" "$tol" /dev/null ||
                echo "$n" >>"$work/updated"
        elif [ "$oopen" -eq 0 ]; then
            fail "$what" "has no \`\`\`output block (run --update to add one)"
            continue
        elif ! same_output "$work/expect-$n.txt" "$work/got-$n.txt" "$tol" "$work/diff-$n.txt"; then
            fail "$what" "output differs from its block (- block, + program)" "$work/diff-$n.txt"
            continue
        fi
        check_figures "$what" "$run" "$nbdir" "$tol" || continue
        passed=$((passed + 1))
        echo "PASS $what"
    done <"$work/cells"
    if [ $update = 1 ] && [ -s "$work/updated" ]; then
        awk -v dir="$work" -f "$here/rewrite.awk" "$work/cells" "$work/updated" "$nb" >"$work/new.md" &&
            { cmp -s "$work/new.md" "$nb" || { replace_whole "$work/new.md" "$nb" && echo "updated $nb"; }; }
    fi
    check_links "$nb" || true
done

echo "notebooks: $passed passed, $failed failed"
[ -z "$counts" ] || echo "$passed $failed 0" >"$counts"
[ $failed -eq 0 ]
