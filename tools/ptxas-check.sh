#!/usr/bin/env bash
# ptxas-check.sh DIR SRC.cu... — registers × threads against the SM, from ptxas's own counts: for every kernel
# of the sources, the registers ptxas gave it (DIR/SRC.res, `ptxas -v` of DIR/SRC.ptx, as `make ptxas-check`
# writes them) times the most threads a block of it may have must fit a Hopper SM's register file, or a GPU
# refuses the launch ("too many resources requested"), a failure the CPU emulator cannot show.
#
# The most threads a block: the kernel's __launch_bounds__ (.maxntid in its PTX, macros resolved); without
# bounds, the largest block a KN_LAUNCH of it asks for in the sources where that block is a constant
# (literals and the files' integer #defines), and at least 256, the most the emulator lets an unbounded
# kernel have at any launch (EMU_RULE_BOUNDS, kernels/emu/emu.h). The rules, each failing with the kernel named:
#   - at most 255 registers a thread;
#   - registers, rounded up to ptxas's allocation unit (8 a thread: 256 a warp), × the block's warps ≤ 65536,
#     and × the blocks per SM a bound promises (__launch_bounds__'s second argument) too;
#   - no constant KN_LAUNCH block above the kernel's own bound.
# Prints a table (kernel, registers, threads and whence, registers a block, spill bytes) and the failures;
# exits 1 on any failure, or when a source has no PTX or ptxas output in DIR (nothing is passed unchecked).
set -u
[ $# -ge 2 ] || { echo "usage: ptxas-check.sh DIR SRC.cu..." >&2; exit 2; }
dir=$1
shift
sm_regs=65536 max_regs=255 unbounded_threads=256 warp=32 unit=256

fail=0
flag() { # flag MESSAGE
    echo "FAIL ptxas-check: $1"
    fail=1
}
demangle() { if command -v c++filt >/dev/null; then c++filt "$1"; else echo "$1"; fi; }
shown_of() { # a kernel as the table shows it, from its demangled signature: no return type, arguments or spaces
    local s=${1%%(*}
    s=${s#void }
    echo "${s// /}"
}
base_of() { # the kernel's name in its source: no template arguments or scope
    local s=${1%%<*}
    echo "${s##*::}"
}

# Launch sites: "KERNEL FILE:LINE BLOCK" for every KN_LAUNCH of the sources, its arguments split at top-level
# commas as the preprocessor splits them (a template with a comma is in parentheses), across lines.
sites=$(awk '
    FNR == 1 { inside = 0 }
    /^[ \t]*#[ \t]*define[ \t]+KN_LAUNCH/ { next }
    {
        line = $0
        sub(/\/\/.*/, "", line)
        if (!inside) {
            at = index(line, "KN_LAUNCH(")
            if (!at) next
            inside = 1; depth = 1; arg = ""; n = 0; where = FILENAME ":" FNR
            line = substr(line, at + 10)
        }
        for (i = 1; i <= length(line) && inside; i++) {
            c = substr(line, i, 1)
            if (c == "(") depth++
            if (c == ")") depth--
            if ((c == "," && depth == 1) || depth == 0) {
                args[++n] = arg; arg = ""
                if (depth == 0 || n == 3) {
                    k = args[1]; gsub(/[ \t()]/, "", k); sub(/<.*/, "", k)
                    b = args[3]; gsub(/[ \t]/, "", b)
                    if (n >= 3) print k, where, b
                    inside = 0
                }
                continue
            }
            arg = arg c
        }
    }' "$@")

# The sources' #defines (FILE NAME VALUE) and kernels/kn_common.cuh's (KN_WARP), to evaluate a block.
declare -A defs
while read -r file name value; do
    defs["$file|$name"]=$value
done < <(awk '/^#define [A-Za-z_][A-Za-z0-9_]* +[A-Za-z0-9_(]/ {
                  v = $0; sub(/\/[*\/].*/, "", v); sub(/^#define [A-Za-z0-9_]+ +/, "", v); sub(/ +$/, "", v)
                  print (FILENAME ~ /kn_common.cuh$/ ? "common" : FILENAME), $2, v }' \
    "$@" "$(dirname "$0")/../kernels/kn_common.cuh")
block_value() { # block_value FILE EXPR: its value when it is an integer constant, else nothing
    local file=$1 expr=$2 out id value pass
    for pass in 1 2 3 4; do # defines of defines
        out=""
        while [[ $expr =~ ^([^A-Za-z_]*)([A-Za-z_][A-Za-z0-9_]*)(.*)$ ]]; do
            out+=${BASH_REMATCH[1]} id=${BASH_REMATCH[2]} expr=${BASH_REMATCH[3]}
            value=${defs["$file|$id"]:-${defs["common|$id"]:-}}
            if [ -n "$value" ]; then out+="($value)"; else out+=$id; fi
        done
        expr=$out$expr
    done
    [[ $expr =~ ^[0-9()*/+\ -]+$ ]] && echo $((expr))
}

declare -A launch_max launch_where
while read -r kernel where block; do
    [ -n "$kernel" ] || continue
    value=$(block_value "${where%:*}" "$block")
    [ -n "$value" ] || continue
    if [ "$value" -gt "${launch_max[$kernel]:-0}" ]; then
        launch_max[$kernel]=$value
        launch_where[$kernel]=$where
    fi
done <<<"$sites"

printf '%-34s %-22s %5s %7s %-8s %9s %6s\n' kernel source regs threads from regs/blk spill
rows=0
for src in "$@"; do
    ptx=$dir/${src%.cu}.ptx res=$dir/${src%.cu}.res
    if [ ! -s "$ptx" ] || [ ! -f "$res" ]; then
        flag "$src: no PTX or ptxas output in $dir (make ptxas-check builds them)"
        continue
    fi
    # "ENTRY MAXNTID MINBLOCKS" from the PTX; "ENTRY REGS SPILL" from ptxas -v
    declare -A bound=() min_blocks=() regs=() spill=()
    while read -r entry threads blocks; do
        bound[$entry]=$threads min_blocks[$entry]=$blocks
    done < <(awk '
        function flush() { if (entry != "") print entry, threads, blocks; entry = "" }
        /\.entry[ \t]/ { flush(); entry = $0; sub(/.*\.entry[ \t]+/, "", entry); sub(/[ \t(].*/, "", entry)
                         threads = 0; blocks = 1 }
        entry != "" && /^[ \t]*\.(maxntid|reqntid)/ { s = $0; sub(/.*ntid[ \t]+/, "", s); split(s, d, /[ \t,]+/)
                         threads = d[1] * (d[2] ? d[2] : 1) * (d[3] ? d[3] : 1) }
        entry != "" && /^[ \t]*\.minnctapersm/ { blocks = $2 + 0 }
        END { flush() }' "$ptx")
    while read -r entry r s; do
        regs[$entry]=$r spill[$entry]=$s
    done < <(awk '
        /Compiling entry function/ { entry = $0; sub(/.*function \047/, "", entry); sub(/\047.*/, "", entry); s = 0 }
        entry != "" && /bytes spill stores/ { s = $5 + $9 }
        entry != "" && /Used [0-9]+ registers/ { for (i = 1; i < NF; i++) if ($(i + 1) ~ /^registers/) r = $i
                                                  print entry, r, s; entry = "" }' "$res")
    for entry in $(printf '%s\n' "${!bound[@]}" | sort); do
        rows=$((rows + 1))
        shown=$(shown_of "$(demangle "$entry")")
        kernel=$(base_of "$shown")
        r=${regs[$entry]:-}
        if [ -z "$r" ]; then
            flag "$shown ($src): no register count in $res"
            continue
        fi
        threads=${bound[$entry]} from=bounds
        if [ "$threads" -eq 0 ]; then
            threads=$unbounded_threads from=rule
            launched=${launch_max[$kernel]:-0}
            [ "$launched" -gt "$threads" ] && threads=$launched from=launch
        elif [ "${launch_max[$kernel]:-0}" -gt "$threads" ]; then
            flag "$shown ($src): launched with ${launch_max[$kernel]} threads a block at ${launch_where[$kernel]}, above its __launch_bounds__($threads)"
        fi
        warps=$(((threads + warp - 1) / warp))
        per_warp=$((((r * warp + unit - 1) / unit) * unit))
        block_regs=$((per_warp * warps))
        blocks=${min_blocks[$entry]}
        printf '%-34s %-22s %5d %7d %-8s %9d %6d\n' "$shown" "${src##*/}" "$r" "$threads" "$from" "$block_regs" \
            "${spill[$entry]}"
        if [ "$r" -gt "$max_regs" ]; then
            flag "$shown ($src): $r registers a thread, above the $max_regs a thread can have"
        fi
        if [ "$block_regs" -gt "$sm_regs" ]; then
            how="its __launch_bounds__($threads)"
            [ "$from" = launch ] && how="its launch at ${launch_where[$kernel]}"
            flag "$shown ($src): $r registers × $threads threads ($how) = $block_regs registers a block, above the SM's $sm_regs: a GPU refuses the launch (too many resources requested); declare __launch_bounds__($threads) so that ptxas fits it, or launch smaller blocks"
        elif [ $((block_regs * blocks)) -gt "$sm_regs" ]; then
            flag "$shown ($src): $r registers × $threads threads × $blocks blocks (__launch_bounds__'s promise) = $((block_regs * blocks)) registers, above the SM's $sm_regs"
        fi
    done
    unset bound min_blocks regs spill
done
echo "ptxas-check: $rows kernels, $(if [ $fail -eq 0 ]; then echo "all fit"; else echo "failures above"; fi)"
exit $fail
