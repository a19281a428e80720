# numcmp.awk — compares a program's output with its expected output when the
# notebook states a tolerance: awk -v tol=1e-6 -f numcmp.awk EXPECTED GOT
# The two must have the same lines and, on each line, the same
# whitespace-separated words. Words that are both plain decimal numbers may
# differ by at most tol (absolute); every other word must match exactly.
# Prints the first difference and exits 1, or exits 0 when they agree.

function is_number(w) { return w ~ /^[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$/ }

function differ(msg) {
    printf "line %d: %s\n", FNR, msg
    status = 1
    exit 1
}

FILENAME == ARGV[1] { want[FNR] = $0; nwant = FNR; next }

{
    ngot = FNR
    if (FNR > nwant) differ("extra output: " $0)
    a = split(want[FNR], w, " ")
    b = split($0, g, " ")
    if (a != b) differ("expected \"" want[FNR] "\", got \"" $0 "\"")
    for (i = 1; i <= a; i++) {
        if (w[i] == g[i]) continue
        if (is_number(w[i]) && is_number(g[i])) {
            d = w[i] - g[i]
            if (d < 0) d = -d
            if (d <= tol + 0) continue
            differ(sprintf("%s vs %s: differs by %g, more than tol=%s", w[i], g[i], d, tol))
        }
        differ("expected \"" w[i] "\", got \"" g[i] "\"")
    }
}

END {
    if (status) exit status
    if (ngot < nwant) { FNR = ngot + 1; differ("missing output: " want[ngot + 1]) }
}
