#!/usr/bin/env bash
# notebook-runner.sh BUILD COUNTS — the notebook runner's own test: a cell
# passes as written and fails after a one-character change to its code or
# its output block; tolerances, compile errors, crashes, timeouts, missing
# output blocks, figures and --update behave as notebooks-c/README.md says;
# and a one-character change to a cell of a real notebook makes it fail.
# Writes "passed failed skipped" to COUNTS.
set -u
build=${1:-build}
counts=${2:-/dev/null}
pass=0 fail=0 skip=0
tmp=$(mktemp -d "${TMPDIR:-/tmp}/specula-nbrun-XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# The same flags as `make notebooks`, read from the Makefile.
nb() { make --no-print-directory -s notebooks BUILD="$build" NOTEBOOKS="$*" NOTEBOOK_ARGS="--timeout 2" >"$tmp/log" 2>&1; }
nb_update() { make --no-print-directory -s notebooks-update BUILD="$build" NOTEBOOKS="$*" >"$tmp/log" 2>&1; }

check() { # check NAME CONDITION...
    local name=$1
    shift
    if "$@"; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        echo "FAIL notebook-runner: $name"
        sed 's/^/    /' "$tmp/log" | head -20
    fi
}
fails() { ! "$@"; }
skipped() { # skipped N REASON: N checks not run, counted and said
    skip=$((skip + $1))
    echo "SKIP notebook-runner: $1 checks: $2"
}
says() { grep -q -- "$1" "$tmp/log"; }

cell() { # cell CODE EXPECTED [INFO]: a notebook of one cell
    printf '# t\n\nProse.\n\n```c\n#include <stdio.h>\n%s\n```\n\n```output%s\n%s\n```\n' "$1" "${3:+ $3}" "$2"
}

d=$tmp/nb && mkdir -p "$d"
cell 'int main(void) { printf("%d\n", 6 * 7); return 0; }' 42 >"$d/01-a.md"
nb "$d/01-a.md"
check "a cell passes as written" test $? -eq 0
check "the total is printed" says "notebooks: 1 passed, 0 failed"

sed 's/6 \* 7/6 * 8/' "$d/01-a.md" >"$d/02-code.md"
nb "$d/02-code.md"
check "a one-character change to the code fails" test $? -ne 0
check "the difference is shown" says "^    +48"

sed 's/^42$/43/' "$d/01-a.md" >"$d/03-out.md"
nb "$d/03-out.md"
check "a one-character change to the output fails" test $? -ne 0

cell 'int main(void) { printf("x %.5f\n", 1.0 / 3); return 0; }' 'x 0.3334' 'tol=1e-3' >"$d/04-tol.md"
nb "$d/04-tol.md"
check "within tol passes" test $? -eq 0
sed 's/tol=1e-3/tol=1e-5/' "$d/04-tol.md" >"$d/05-tol.md"
nb "$d/05-tol.md"
check "beyond tol fails" test $? -ne 0
check "beyond tol names the numbers" says "0.3334 vs 0.33333"
sed 's/^x 0.3334$/y 0.3334/' "$d/04-tol.md" >"$d/06-tol.md"
nb "$d/06-tol.md"
check "words outside numbers must match under tol" test $? -ne 0

cell 'int main(void) { int unused; printf("1\n"); return 0; }' 1 >"$d/07-warn.md"
nb "$d/07-warn.md"
check "a warning is an error" test $? -ne 0
check "a warning is reported as a compile failure" says "does not compile"

cell 'int main(void) { printf("1\n"); return 3; }' 1 >"$d/08-status.md"
nb "$d/08-status.md"
check "a non-zero exit fails" test $? -ne 0

cell 'int main(void) { for (volatile int i = 0;; i++) {} }' 1 >"$d/09-loop.md"
nb "$d/09-loop.md"
check "a cell that never ends fails" test $? -ne 0
check "the timeout is named" says "still running after 2 s"

printf '# t\n\n```c\n#include <stdio.h>\nint main(void) { puts("hi"); return 0; }\n```\n\nno block\n' >"$d/10-noblock.md"
nb "$d/10-noblock.md"
check "a cell without an output block fails" test $? -ne 0
nb_update "$d/10-noblock.md"
nb "$d/10-noblock.md"
check "--update adds the missing block" test $? -eq 0
check "the added block holds the output" grep -q '^hi$' "$d/10-noblock.md"

cp "$d/02-code.md" "$d/11-fix.md"
nb_update "$d/11-fix.md"
nb "$d/11-fix.md"
check "--update rewrites a stale block" test $? -eq 0
check "--update keeps the prose" grep -q '^Prose.$' "$d/11-fix.md"
cp "$d/04-tol.md" "$d/12-keep.md"
nb_update "$d/12-keep.md"
check "--update leaves a block that matches within tol alone" cmp -s "$d/04-tol.md" "$d/12-keep.md"

printf '# t\n\n```c\n#include <stdio.h>\nint main(void) { puts("a"); return 0; }\n```\n\n```python\nx\n```\n\n```output\na\n```\n' >"$d/13-order.md"
nb "$d/13-order.md"
check "an output block must directly follow its cell" test $? -ne 0

# figures: data and a gnuplot script under figures/, the PNG linked
f=$tmp/fig && mkdir -p "$f"
cat >"$f/01-fig.md" <<'EOF'
# t

```c
#include <stdio.h>
int main(void) {
    FILE *f = fopen("figures/sq.dat", "w");
    for (int i = 0; i < 4; i++) fprintf(f, "%d %d\n", i, i * i);
    fclose(f);
    f = fopen("figures/sq.gp", "w");
    fprintf(f, "set terminal pngcairo size 320,240\nset output 'sq.png'\nplot 'sq.dat' with lines\n");
    fclose(f);
    puts("done");
    return 0;
}
```

```output
done
```

![squares](figures/sq.png)
EOF
nb "$f/01-fig.md"
check "figures the notebook lacks fail" test $? -ne 0
nb_update "$f/01-fig.md"
check "--update copies the figure data" test -f "$f/figures/sq.dat" -a -f "$f/figures/sq.gp"
if command -v gnuplot >/dev/null; then
    check "--update renders the PNG" test -s "$f/figures/sq.png"
    nb "$f/01-fig.md"
    check "with its figures the notebook passes" test $? -eq 0
    sed -i 's/^3 9$/3 8/' "$f/figures/sq.dat"
    nb "$f/01-fig.md"
    check "figure data that drifted fails" test $? -ne 0
    rm "$f/figures/sq.png"
    nb_update "$f/01-fig.md"
    rm "$f/figures/sq.png"
    nb "$f/01-fig.md"
    check "a missing linked image fails" test $? -ne 0
else
    skipped 4 "no gnuplot on PATH (rendering figures, and checking rendered ones)"
fi

# A real notebook: one character changed in its first cell's code (a "!"
# after the first printf's opening quote) must make it fail.
real=$(ls notebooks-c/[0-9]*.md 2>/dev/null | head -1)
if [ -n "$real" ]; then
    r=$tmp/real && mkdir -p "$r"
    [ -d notebooks-c/figures ] && cp -r notebooks-c/figures "$r/"
    awk '/^```c$/ {inc = 1} inc && !done && sub(/printf\("/, "printf(\"!") {done = 1} /^```$/ {inc = 0} {print}' \
        "$real" >"$r/$(basename "$real")"
    mutated=$r/$(basename "$real")
    one_char() { [ $(($(wc -c <"$mutated") - $(wc -c <"$real"))) -eq 1 ] && [ "$(diff "$real" "$mutated" | grep -c '^[<>]')" -eq 2 ]; }
    check "the mutation inserts one character on one line" one_char
    nb "$mutated"
    rc=$?
    check "$(basename "$real") with one character changed fails" test $rc -ne 0
else
    skipped 2 "no notebooks-c/[0-9]*.md to mutate"
fi

echo "notebook-runner: $pass passed, $fail failed, $skip skipped"
echo "$pass $fail $skip" >"$counts"
[ "$fail" -eq 0 ]
