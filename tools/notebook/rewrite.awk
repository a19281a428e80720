# rewrite.awk — writes a notebook back with fresh output blocks:
#   awk -v dir=DIR -f rewrite.awk DIR/cells DIR/updated NOTEBOOK.md > NEW.md
# DIR/cells is cells.awk's table; DIR/updated lists the cells (one number a
# line) whose output DIR/got-N.txt replaces the block's contents. A cell
# without an output block gets one, right after its closing fence. The
# block's own info string (e.g. "output tol=1e-6") is kept.

function emit(n,    line, f) {
    f = dir "/got-" n ".txt"
    while ((getline line < f) > 0) print line
    close(f)
}

FILENAME == ARGV[1] { cclose[$1] = $3; oopen[$1] = $4; oclose[$1] = $5; next }
FILENAME == ARGV[2] { fresh[$1] = 1; next }

FNR == 1 {
    for (n in fresh) {
        if (oopen[n] > 0) { replace_from[oopen[n]] = n; replace_to[n] = oclose[n] }
        else insert_after[cclose[n]] = n
    }
}

skipping {
    if (FNR == replace_to[skipping]) { print; skipping = 0 }
    next
}

FNR in replace_from {
    print
    n = replace_from[FNR]
    emit(n)
    skipping = n
    next
}

{ print }

FNR in insert_after {
    n = insert_after[FNR]
    print ""
    print "```output"
    emit(n)
    print "```"
}
