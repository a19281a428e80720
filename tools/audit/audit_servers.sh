#!/usr/bin/env bash
# audit_servers.sh — `specula audit` of llama.cpp's speculative decoding
# through its OpenAI-compatible server (llama-server) on loopback: one
# server without speculation (the off arm) and one per speculative setting
# (the on arm and its control), audited by tools/audit/openai_sample.py.
#
#   tools/audit/audit_servers.sh SERVER TARGET.gguf DRAFT.gguf OUTDIR [N L T]
#
# SERVER: a llama-server binary; TARGET.gguf: the embedded model converted
# (tools/peer/convert_gguf.py); DRAFT.gguf: its draft model converted.
# Audits "draft" (-md DRAFT, the separate draft model) and "mtp"
# (--spec-type draft-mtp, the target's own MTP layer). Writes
# OUTDIR/NAME.txt (the report), NAME.err (progress, the servers' logs
# under OUTDIR/server-*.log). Every server is started here and stopped by
# its process id on exit. N, L, T default to 2000, 16, 0.8. Needs python3
# (standard library) and curl or python3 for the health checks.
set -u
server=$1 target=$2 draft=$3 out=$4
n=${5:-2000} len=${6:-16} temp=${7:-0.8}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
specula=$root/build/specula
mkdir -p "$out"
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done' EXIT

# start NAME PORT ARGS...: a server on 127.0.0.1:PORT, waits for /health
start() {
    local name=$1 port=$2
    shift 2
    "$server" -m "$target" --host 127.0.0.1 --port "$port" -t 1 -c 4096 -np 1 --no-webui "$@" \
        >"$out/server-$name.log" 2>&1 &
    pids+=($!)
    for _ in $(seq 1 120); do
        curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && return 0
        python3 -c "import urllib.request,sys; urllib.request.urlopen('http://127.0.0.1:$port/health', timeout=1)" \
            2>/dev/null && return 0
        sleep 1
    done
    echo "audit_servers: the $name server did not come up; see $out/server-$name.log" >&2
    return 1
}

start off 8090 || exit 4
# -md alone loads the draft but drafts nothing ("no implementations
# specified"): the type must be named
start draft 8091 -md "$draft" --spec-type draft-simple --spec-draft-n-max 4 || exit 4
start mtp 8092 --spec-type draft-mtp --spec-draft-n-max 3 || exit 4

# the end-of-generation tokens llama.cpp masks under ignore_eos: the added
# tokens its vocabulary loader marks EOG by their text (src/llama-vocab.cpp)
eog=$(python3 - "$root/models/tiny-shakespeare/tokenizer.json" <<'PY'
import json, sys
names = {"<|endoftext|>", "<|im_end|>", "<|eot_id|>", "<|end|>", "<end_of_turn>", "<|eom_id|>", "<EOT>",
         "<|end_of_text|>", "<end_of_utterance>"}
added = json.load(open(sys.argv[1])).get("added_tokens", [])
print(",".join(str(t["id"]) for t in added if t["content"] in names))
PY
)
echo "audit_servers: end-of-generation tokens banned in the law: ${eog:-none}"

status=0
for setting in draft:8091 mtp:8092; do
    name=${setting%%:*} port=${setting##*:}
    start_time=$(date -u +%FT%TZ)
    "$specula" audit --engine-cmd "python3 $here/openai_sample.py --url-on http://127.0.0.1:$port --url-off http://127.0.0.1:8090" \
        --temperature "$temp" -n "$n" --length "$len" --backend cpu --dtype f32 ${eog:+--ban-tokens "$eog"} \
        --save-samples "$out/$name-arms" >"$out/$name.txt" 2>"$out/$name.err"
    rc=$?
    echo "exit $rc, started $start_time, ended $(date -u +%FT%TZ)" >>"$out/$name.txt"
    # an audit of a server that never speculated says nothing about speculation
    drafted=$(grep -c "draft acceptance" "$out/server-$name.log")
    grep "draft acceptance" "$out/server-$name.log" |
        sed -E 's/.*\( *([0-9]+) accepted \/ *([0-9]+) generated.*/\1 \2/' | awk '{a += $1; g += $2} END {
        if (g) printf "llama-server drafts: %d accepted of %d drafted over the requests\n", a, g}' >>"$out/$name.txt"
    if [ "$drafted" -eq 0 ]; then
        echo "audit_servers: the $name server drafted nothing: not an audit of its speculation" | tee -a "$out/$name.txt" >&2
        rc=4
    fi
    echo "audit_servers: llama-server $name: exit $rc ($out/$name.txt)"
    [ $rc -le $status ] || status=$rc
done
exit $status
