#!/usr/bin/env bash
# plugin-cli.sh BUILD COUNTS — a proposer plug-in built outside the tree against the installed copy (make install,
# then examples/bigram through pkg-config) runs in generate, bench, plot, verify and audit; it gives the built-in
# bigram method's tokens seed for seed on every backend; verify passes it and rejects its planted variant and a
# never-drafting setting; a library that breaks the interface is refused with one line. Writes "passed failed
# skipped" to COUNTS.
set -u
build=${1:-build}
counts=${2:-/dev/null}
spec=$build/specula
pass=0 fail=0 skip=0
tmp=$(mktemp -d "${TMPDIR:-/tmp}/specula-plugin-cli-XXXXXX")
trap 'rm -rf "$tmp"' EXIT

check() { # check NAME CONDITION...
    local name=$1
    shift
    if "$@"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL plugin-cli: $name"; fi
}

# expect_refused NAME PATTERN ARGS...: `specula generate ARGS` exits 2 with one line saying PATTERN
expect_refused() {
    local name=$1 pattern=$2
    shift 2
    "$spec" generate "$@" --max-tokens 8 >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    if [ $rc -eq 2 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q -- "$pattern" "$tmp/err"; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        echo "FAIL plugin-cli: $name: exit $rc, stderr: $(cat "$tmp/err")"
    fi
}

# the installed copy, and the plug-in built against it alone
prefix=$tmp/install
make --no-print-directory install BUILD="$build" PREFIX="$prefix" >"$tmp/install.log" 2>&1
check "make install" test $? -eq 0
check "the plug-in header is installed" test -f "$prefix/include/specula.h"
check "specula.pc is installed" test -f "$prefix/lib/pkgconfig/specula.pc"
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
check "pkg-config finds the installed copy" sh -c "pkg-config --cflags specula | grep -q -- '-I$prefix/include'"
make --no-print-directory -C examples/bigram OUT="$tmp/ex" >"$tmp/ex.log" 2>&1
check "the example builds against the installed header" test -f "$tmp/ex/libbigram.so"
check "...and nothing of the source tree" sh -c "! grep -q -- '-Ireference' '$tmp/ex.log'"
lib=$tmp/ex/libbigram.so
[ -f "$lib" ] || {
    echo "plugin-cli: $pass passed, $fail failed (no plug-in to run)"
    echo "$pass $fail 0" >"$counts"
    exit 1
}

# tokens_of SPECULA ARGS...: the generated ids and the accepted count, one line
tokens_of() {
    local bin=$1
    shift
    "$bin" generate "$@" --ids --json 2>"$tmp/err" | sed -n 's/.*"tokens": \[\([^]]*\)\].*"accepted": \([0-9]*\).*/\1 | \2/p'
}
# the plug-in against the built-in bigram method: the same tokens and acceptances, seed for seed
for backend in reference cpu; do
    for setting in "0.8|" "0|greedy" "1|min=2"; do
        t=${setting%%|*} args=${setting#*|}
        flags=()
        [ "$args" = greedy ] && flags+=(--bigram-greedy)
        [ "$args" = min=2 ] && flags+=(--bigram-min 2)
        a=$(tokens_of "$spec" --backend "$backend" --method bigram "${flags[@]}" --k 3 --temperature "$t" --seed 5 \
            --max-tokens 48)
        b=$(tokens_of "$spec" --backend "$backend" --method "plugin:$lib${args:+:$args}" --k 3 --temperature "$t" \
            --seed 5 --max-tokens 48)
        check "$backend T=$t ${args:-sampled}: the plug-in gives the built-in's tokens" test -n "$a" -a "$a" = "$b"
    done
done
if [ -x "$build/specula-emu" ]; then # the CUDA backend on the kernels' emulator: slow, a few tokens
    a=$(tokens_of "$build/specula-emu" --backend cuda --method bigram --k 2 --temperature 0.8 --seed 2 --max-tokens 10)
    b=$(tokens_of "$build/specula-emu" --backend cuda --method "plugin:$lib" --k 2 --temperature 0.8 --seed 2 \
        --max-tokens 10)
    check "cuda (emulator): the plug-in gives the built-in's tokens" test -n "$a" -a "$a" = "$b"
else
    skip=$((skip + 1))
    echo "SKIP plugin-cli: $build/specula-emu was not built"
fi

# bench, plot and audit run it
"$spec" bench --backend cpu --method "plugin:$lib" --runs 1 --tokens 16 --cost-reps 1 >"$tmp/bench" 2>&1
check "bench runs the plug-in beside plain decoding" grep -q '^plugin .* plugin libbigram.so k=4' "$tmp/bench"
"$spec" plot --method "plugin:$lib" --prompts 1 --tokens 16 --temperatures 0.8 --term none --out "$tmp/plots" \
    >"$tmp/plot" 2>&1
check "plot measures the plug-in as a series of its own" grep -q '^"plugin T=0.8" bigram' "$tmp/plots/measured.dat"
"$spec" audit --backend cpu --method "plugin:$lib" -n 100 --length 6 --no-law --quiet >"$tmp/audit" 2>&1
check "audit runs the plug-in as its on arm" grep -q '^verdict:' "$tmp/audit"

# verify: the plug-in is exact and its derived controls are rejected; its planted variant and a setting that never
# drafts fail
"$spec" verify --flags "--method plugin:$lib --k 3 --temperature 1" --scale 0.3 --quiet --json >"$tmp/v.json"
check "verify passes the plug-in" test $? -eq 0
check "...with three rows, every control rejected" sh -c "grep -c '\"verdict\": \"exact\"' '$tmp/v.json' | grep -qx 3"
check "...and says how often it drafted" grep -q '"drafted_rounds": [1-9]' "$tmp/v.json"
tests/mutants/mutate.sh argmax-drafts examples/bigram/bigram.c tests/mutants/plugin.mutants >"$tmp/planted.c" &&
    cc -std=c99 -D_POSIX_C_SOURCE=200809L -O1 -fPIC -shared $(pkg-config --cflags specula) -o "$tmp/planted.so" \
        "$tmp/planted.c"
"$spec" verify --flags "--method plugin:$tmp/planted.so --k 3 --temperature 1" --scale 0.3 --quiet >"$tmp/vp" 2>&1
check "verify rejects the plug-in with argmax drafts reported as sampled" sh -c "test $? -eq 1 && grep -q 'law differs' '$tmp/vp'"
"$spec" verify --flags "--method plugin:$lib:min=1000000 --k 3 --temperature 1" --scale 0.1 --quiet >"$tmp/vn" 2>&1
check "verify fails a plug-in that never drafts" sh -c "test $? -eq 1 && grep -q 'never drafted' '$tmp/vn'"

# a library that breaks the interface: refused with one line, exit 2
expect_refused "a missing library" "cannot load it" --method plugin:$tmp/none.so
cat >"$tmp/nosym.c" <<'EOF'
int not_the_entry(void) { return 0; }
EOF
cat >"$tmp/abi.c" <<'EOF'
#include "specula.h"
static specula_proposer p = {SPECULA_PLUGIN_ABI + 1, "future", SPECULA_CHILDREN_IID, 0, 0, 0, 0};
const specula_proposer *specula_plugin(void) { return &p; }
EOF
cc -fPIC -shared -o "$tmp/nosym.so" "$tmp/nosym.c" && cc -fPIC -shared $(pkg-config --cflags specula) -o "$tmp/abi.so" \
    "$tmp/abi.c"
expect_refused "a library without the entry point" "exports no specula_plugin" --method plugin:$tmp/nosym.so
expect_refused "another interface version" "another version of specula.h" --method plugin:$tmp/abi.so
expect_refused "arguments the plug-in refuses" "unknown argument 'sideways'" --method plugin:$lib:sideways
# a plug-in whose q row does not sum to one: the run stops with its name, exit 1
cat >"$tmp/halfq.c" <<'EOF'
#include <stdlib.h>
#include <string.h>
#include "specula.h"
static int V;
static void *create(const specula_config *c, char *e, size_t n) { (void)e, (void)n; V = c->vocab_size; return &V; }
static int propose(void *s, specula_round *r, const specula_host *h, char *e, size_t n) {
    (void)s, (void)e, (void)n;
    float *q = h->q_row(r, 0);
    memset(q, 0, (size_t)V * sizeof *q);
    q[r->root_token] = 0.5f; /* half a distribution */
    h->add(r, 0, r->root_token);
    return 0;
}
static int commit(void *s, const int *p, int l, int t, char *e, size_t n) { return (void)s, (void)p, (void)l, (void)t, (void)e, (void)n, 0; }
static void destroy(void *s) { (void)s; }
static specula_proposer p = {SPECULA_PLUGIN_ABI, "half", SPECULA_CHILDREN_IID, create, propose, commit, destroy};
const specula_proposer *specula_plugin(void) { return &p; }
EOF
cc -fPIC -shared $(pkg-config --cflags specula) -o "$tmp/halfq.so" "$tmp/halfq.c"
"$spec" generate --method plugin:$tmp/halfq.so --max-tokens 8 >"$tmp/out" 2>"$tmp/err"
check "a q row that is not a distribution stops the run" sh -c "test $? -eq 1 && grep -q 'plug-in half: the q row of node 0 sums to 0.5' '$tmp/err'"

echo "plugin-cli: $pass passed, $fail failed, $skip skipped"
echo "$pass $fail $skip" >"$counts"
[ "$fail" -eq 0 ]
