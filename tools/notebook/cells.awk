# cells.awk — splits a Markdown notebook into its C cells and the output
# blocks that follow them. Run as: awk -v dir=DIR -f cells.awk NOTEBOOK.md
# Writes DIR/cell-N.c and DIR/expect-N.txt, and prints one line per cell:
#   N  c_open c_close  out_open out_close  tol
# (line numbers of the fences; out_open = 0 when the cell has no output
# block; tol = "-" for an exact comparison). A cell's output block must be
# the next fenced block after it. Errors go to stderr as FILE:LINE: message
# and the exit status is 2.

function fail(msg) {
    printf "%s:%d: %s\n", FILENAME, NR, msg > "/dev/stderr"
    bad = 1
    exit 2
}

# The info string of an opening fence: what follows the backticks.
function info_of(line, ticks) {
    line = substr(line, length(ticks) + 1)
    sub(/^[ \t]+/, "", line)
    sub(/[ \t]+$/, "", line)
    return line
}

BEGIN { n = 0; pending = 0; fence = "" }

fence == "" && /^```/ {
    match($0, /^`+/)
    fence = substr($0, 1, RLENGTH)
    info = info_of($0, fence)
    nw = split(info, word, /[ \t]+/)
    kind = "other"
    if (word[1] == "c" && nw == 1) {
        kind = "c"
        n++
        copen[n] = NR
        tol[n] = "-"
        file = dir "/cell-" n ".c"
        printf "" > file
    } else if (word[1] == "c") {
        fail("a C cell takes no attributes, found \"" info "\"")
    } else if (word[1] == "output") {
        if (!pending) fail("an output block must follow a ```c cell")
        kind = "output"
        oopen[pending] = NR
        for (i = 2; i <= nw; i++) {
            if (word[i] ~ /^tol=[0-9.]+([eE][-+]?[0-9]+)?$/) tol[pending] = substr(word[i], 5)
            else fail("unknown output attribute \"" word[i] "\" (known: tol=NUMBER)")
        }
        file = dir "/expect-" pending ".txt"
        printf "" > file
    }
    if (kind != "output") pending = 0
    next
}

fence != "" {
    if (index($0, fence) == 1 && $0 ~ /^`+[ \t]*$/) {  # a closing fence: at least as many backticks
        if (kind == "c") { cclose[n] = NR; pending = n }
        else if (kind == "output") { oclose[pending] = NR; pending = 0 }
        if (kind != "other") close(file)
        fence = ""
        next
    }
    if (kind == "c" || kind == "output") print > file
    next
}

END {
    if (bad) exit 2
    if (fence != "") { NR = NR + 1; fail("the fence opened with " fence " is never closed") }
    for (i = 1; i <= n; i++)
        printf "%d %d %d %d %d %s\n", i, copen[i], cclose[i], (i in oopen) ? oopen[i] : 0, \
            (i in oclose) ? oclose[i] : 0, tol[i]
}
