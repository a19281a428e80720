"""bench_peers.py — the measuring half of `make bench-peers` (bench_peers.sh
prepares the peers and calls it): on the same checkpoints, in one run, the
machine's streaming read bandwidth, specula's reference (and the engine's
row, once `specula bench --backend cpu` exists), llama.cpp's llama-bench and
Hugging Face transformers; one table per checkpoint, then the ratios, all
from numbers measured in this run. Standard library only: the peers run in
their own processes, whose peak resident memory is read with wait4.

What a row holds (medians of --runs runs):
  decode tok/s   greedy tokens per second after the first token
                 (llama.cpp: its tg test, N tokens from an empty context)
  prefill tok/s  prompt tokens per second of the prompt pass
                 (the reference: one position after another, so about its decode rate)
  weight GB/s    decode tok/s x weight bytes one decode step reads, with the
                 project's count (reference/base/footprint.h, `specula info`):
                 every trunk matrix and norm and the whole lm_head, one row of
                 the embedding, no MTP (plain decoding does not run it), at the
                 bytes per parameter the implementation holds (the reference 4:
                 it keeps float32 copies; bf16 2; f32 4)
  % read BW      weight GB/s over the read bandwidth at the same thread count
                 (readbw, measured before and after the rows; the higher median)
  max RSS        the process's peak resident set (model load included)
"""

import argparse
import datetime
import json
import os
import shlex
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def log(msg=""):
    print(msg, flush=True)


def run(cmd, logs, tag, env=None):
    """Runs cmd with stdout and stderr to logs/TAG.out and .err; returns
    (exit status, stdout text, peak RSS in KiB, wall seconds)."""
    log("  $ " + shlex.join(cmd))
    out_path, err_path = os.path.join(logs, tag + ".out"), os.path.join(logs, tag + ".err")
    t0 = time.monotonic()
    with open(out_path, "w") as out, open(err_path, "w") as err:
        try:
            p = subprocess.Popen(cmd, stdout=out, stderr=err, env=env)
        except OSError as e:
            err.write(str(e))
            return 127, "", 0, 0.0
        _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)  # tell Popen it is gone
    with open(out_path) as f:
        text = f.read()
    if p.returncode:
        with open(err_path) as f:
            tail = f.read()[-600:]
        log("    exit %d; the end of %s:\n    %s" % (p.returncode, err_path, tail.replace("\n", "\n    ")))
    return p.returncode, text, usage.ru_maxrss, time.monotonic() - t0


def last_json(text):
    """The last line of text that parses as a JSON object or list (None if none)."""
    for line in reversed(text.strip().splitlines()):
        try:
            return json.loads(line)
        except ValueError:
            continue
    try:
        return json.loads(text)
    except ValueError:
        return None


def machine():
    info = {"date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
            "load_average_start": os.getloadavg(), "online_cpus": os.cpu_count()}
    try:
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for line in lscpu.splitlines():
            key, _, value = line.partition(":")
            if key.strip() in ("Model name", "CPU(s)", "Thread(s) per core", "L3 cache", "Hypervisor vendor"):
                info[key.strip()] = value.strip()
    except OSError:
        pass
    return info


def row(ck, impl, dtype, threads, held_bytes, decode=None, prefill=None, rss_kb=None, note="", raw=None):
    return {"checkpoint": ck["name"], "implementation": impl, "weights": dtype, "threads": threads,
            "held_bytes_per_param": held_bytes, "decode_tokens_per_s": decode, "prefill_tokens_per_s": prefill,
            "max_rss_kb": rss_kb, "note": note, "raw": raw}


# ---- the implementations ------------------------------------------------------------

def bench_reference(a, ck):
    """specula's plain-C reference: single-threaded by design."""
    cmd = [a.specula, "bench", ck["dir"], "--plain", "--json", "--prompt-tokens", str(a.prompt),
           "--tokens", str(a.tokens), "--runs", str(a.runs), "--backend", "reference"]
    rc, out, rss, _ = run(cmd, a.logs, "%s-reference" % ck["name"])
    j = last_json(out) if rc == 0 else None
    rows = []
    if not j:
        rows.append(row(ck, "specula reference", "f32 copy", 1, 4, note="failed (see logs)"))
    else:
        r = j["rows"][0]
        rows.append(row(ck, "specula reference", "f32 copy", 1, 4, r["decode_tokens_per_s"],
                        r["prefill_tokens_per_s"], rss, raw=j))
    for t in a.threads[1:]:
        rows.append(row(ck, "specula reference", "f32 copy", t, 4, note="single-threaded by design"))
    return rows


def bench_engine(a, ck):
    """The CPU engine: the reference's command with `--backend cpu --threads T`,
    bf16 weights (2 bytes per parameter), one process per thread count, under
    the caller's OpenMP settings (a pass holds its threads from first op to
    last, optimized/cpu/team.h, so libgomp's default wait policy costs nothing
    within a step; a policy the caller set is noted in the row)."""
    rows = []
    for t in a.threads:
        cmd = [a.specula, "bench", ck["dir"], "--plain", "--json", "--prompt-tokens", str(a.prompt),
               "--tokens", str(a.tokens), "--runs", str(a.runs), "--backend", "cpu", "--threads", str(t)]
        policy = os.environ.get("OMP_WAIT_POLICY") if t > 1 else None
        rc, out, rss, _ = run(cmd, a.logs, "%s-engine-t%d" % (ck["name"], t))
        j = last_json(out) if rc == 0 else None
        if not j:
            rows.append(row(ck, "specula engine (cpu)", "bf16", t, 2, note="failed (see logs)"))
        else:
            r = j["rows"][0]
            rows.append(row(ck, "specula engine (cpu)", "bf16", t, 2, r["decode_tokens_per_s"],
                            r["prefill_tokens_per_s"], rss, raw=j,
                            note="OMP_WAIT_POLICY=" + policy if policy else ""))
    return rows


def bench_llama(a, ck):
    """llama.cpp's llama-bench, one process per GGUF and thread count."""
    rows = []
    for dtype, path in sorted(ck["gguf"].items()):
        held = 4 if dtype == "f32" else 2
        for t in a.threads:
            if a.skip_llama or not os.path.exists(path):
                why = a.skip_llama or "no GGUF file (conversion failed; see build/peers/logs)"
                rows.append(row(ck, "llama.cpp", dtype, t, held, note="skipped: " + why))
                continue
            cmd = [a.llama_bench, "-m", path, "-t", str(t), "-p", str(a.prompt), "-n", str(a.tokens),
                   "-r", str(a.runs), "-o", "json"]
            rc, out, rss, _ = run(cmd, a.logs, "%s-llama-%s-t%d" % (ck["name"], dtype, t))
            tests = last_json(out) if rc == 0 else None
            if not isinstance(tests, list):
                rows.append(row(ck, "llama.cpp", dtype, t, held, note="failed (see logs)"))
                continue
            pp = [x for x in tests if x.get("n_prompt") == a.prompt and x.get("n_gen") == 0]
            tg = [x for x in tests if x.get("n_gen") == a.tokens and x.get("n_prompt") == 0]
            med = lambda xs: statistics.median(xs[0]["samples_ts"]) if xs else None  # noqa: E731
            rows.append(row(ck, "llama.cpp", dtype, t, held, med(tg), med(pp), rss, raw=tests))
    return rows


def bench_hf(a, ck):
    """transformers, one process per dtype and thread count (hf_bench.py)."""
    rows = []
    for dtype in ("bf16", "f32"):
        held = 4 if dtype == "f32" else 2
        for t in a.threads:
            if a.skip_hf:
                rows.append(row(ck, "transformers", dtype, t, held, note="skipped: " + a.skip_hf))
                continue
            env = dict(os.environ, OMP_NUM_THREADS=str(t), MKL_NUM_THREADS=str(t))
            cmd = [a.hf_python, os.path.join(HERE, "hf_bench.py"), ck["dir"], "--threads", str(t), "--dtype", dtype,
                   "--prompt-tokens", str(a.prompt), "--tokens", str(a.tokens), "--runs", str(a.runs)]
            rc, out, rss, _ = run(cmd, a.logs, "%s-hf-%s-t%d" % (ck["name"], dtype, t), env)
            j = last_json(out) if rc == 0 else None
            if not j:
                rows.append(row(ck, "transformers", dtype, t, held, note="failed (see logs)"))
            else:
                rows.append(row(ck, "transformers", dtype, t, held, j["decode_tokens_per_s"],
                                j["prefill_tokens_per_s"], rss, raw=j))
    return rows


def greedy_agreement(a, ck, rows):
    """specula's first 16 greedy tokens on each of its CPU backends (the plain-C reference and the engine in its
    default mode, each named: `generate` alone would run the engine) beside transformers' f32 ones (same prompt ids):
    a check that both ran the same model, not a test. One line per backend."""
    hf = [r for r in rows if r["implementation"] == "transformers" and r["weights"] == "f32" and r["raw"]]
    if not hf:
        return ["greedy tokens: no transformers f32 run to compare with"]
    theirs = hf[0]["raw"]["first_tokens"]
    lines = []
    for backend in ("reference", "cpu"):
        cmd = [a.specula, "generate", "--model", ck["dir"], "--tokens", ",".join(str(i + 1) for i in range(a.prompt)),
               "--ids", "--json", "--max-tokens", "16", "--no-eos", "--method", "greedy", "--backend", backend]
        rc, out, _, _ = run(cmd, a.logs, "%s-%s-tokens" % (ck["name"], backend))
        j = last_json(out) if rc == 0 else None
        if not j:
            lines.append("greedy tokens: specula --backend %s's could not be read" % backend)
            continue
        same = sum(1 for x, y in zip(j["tokens"], theirs) if x == y)
        lines.append("greedy tokens: specula --backend %s and transformers f32 agree on %d of the first %d"
                     % (backend, same, len(theirs)))
    return lines


# ---- the table --------------------------------------------------------------------

def fill_bandwidth(rows, params_per_step, bw):
    for r in rows:
        r["weight_gb_per_s"] = r["pct_read_bandwidth"] = None
        if r["decode_tokens_per_s"]:
            gbs = r["decode_tokens_per_s"] * params_per_step * r["held_bytes_per_param"] / 1e9
            r["weight_gb_per_s"] = gbs
            if bw.get(r["threads"]):
                r["pct_read_bandwidth"] = 100 * gbs / bw[r["threads"]]


def fmt(x, digits):
    if x is None:
        return ""
    return "%.*f" % (digits, x) if x < 10 ** 6 else "%.3g" % x


def table(rows):
    lines = ["| implementation | weights | threads | decode tok/s | prefill tok/s | weight GB/s | % read BW "
             "| max RSS MiB | note |",
             "|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        rate = lambda x: fmt(x, 1 if x and x >= 100 else 2)  # noqa: E731
        lines.append("| %s | %s | %d | %s | %s | %s | %s | %s | %s |" % (
            r["implementation"], r["weights"], r["threads"], rate(r["decode_tokens_per_s"]),
            rate(r["prefill_tokens_per_s"]), fmt(r["weight_gb_per_s"], 2), fmt(r["pct_read_bandwidth"], 0),
            fmt(r["max_rss_kb"] / 1024 if r["max_rss_kb"] else None, 0), r["note"]))
    return lines


def best(rows, impl, key="decode_tokens_per_s"):
    have = [r for r in rows if r["implementation"] == impl and r[key]]
    return max(have, key=lambda r: r[key]) if have else None


def ratio_lines(rows):
    def name(r):
        return "%s %s, %d thread%s" % (r["implementation"], r["weights"], r["threads"], "s" if r["threads"] > 1 else "")

    out = []
    ref, hf, eng, lc = (best(rows, i) for i in ("specula reference", "transformers", "specula engine (cpu)",
                                                 "llama.cpp"))
    for goal, base, factor in (("engine / reference", ref, 10), ("engine / transformers", hf, 3)):
        if not base:
            out.append("- %s (decode, best settings): no %s figure in this run" % (goal, goal.split(" / ")[1]))
        elif not eng:
            out.append("- %s (decode, best settings): no engine figure in this run (the goal, >= %dx, is >= %.1f "
                       "tok/s over %s)" % (goal, factor, factor * base["decode_tokens_per_s"], name(base)))
        else:
            x = eng["decode_tokens_per_s"] / base["decode_tokens_per_s"]
            out.append("- %s (decode, best settings): %.2fx (%s over %s; goal >= %dx: %s)"
                       % (goal, x, name(eng), name(base), factor, "met" if x >= factor else "not met"))
    # the engine against llama.cpp's bf16 run at each thread count: decode (tg) and prefill (pp), goal >= 1.0x
    for e in sorted((r for r in rows if r["implementation"] == "specula engine (cpu)" and r["decode_tokens_per_s"]),
                    key=lambda r: r["threads"]):
        l = next((r for r in rows if r["implementation"] == "llama.cpp" and r["weights"] == "bf16"
                  and r["threads"] == e["threads"] and r["decode_tokens_per_s"]), None)
        if not l:
            continue
        parts = ["decode %.2fx (goal >= 1.0x: %s)" % (e["decode_tokens_per_s"] / l["decode_tokens_per_s"],
                 "met" if e["decode_tokens_per_s"] >= l["decode_tokens_per_s"] else "not met")]
        if e["prefill_tokens_per_s"] and l["prefill_tokens_per_s"]:
            x = e["prefill_tokens_per_s"] / l["prefill_tokens_per_s"]
            parts.append("prefill %.2fx (goal >= 1.0x: %s)" % (x, "met" if x >= 1 else "not met"))
        out.append("- engine / llama.cpp bf16 at %d thread%s: %s" % (e["threads"], "s" if e["threads"] > 1 else "",
                                                                    ", ".join(parts)))
    for num, den in ((lc, ref), (lc, hf), (hf, ref)):
        if num and den:
            pre = ""
            if num["prefill_tokens_per_s"] and den["prefill_tokens_per_s"]:
                pre = "; prefill %.2fx" % (num["prefill_tokens_per_s"] / den["prefill_tokens_per_s"])
            out.append("- %s / %s: decode %.2fx (%s over %s)%s" % (
                num["implementation"], den["implementation"], num["decode_tokens_per_s"] / den["decode_tokens_per_s"],
                name(num), name(den), pre))
    return out


def read_bandwidth(a, when):
    """readbw's JSON (None if it failed), for the thread counts of the rows."""
    log("bench-peers: measuring the read bandwidth (%s)" % when)
    rc, out, _, _ = run([os.path.join(a.build, "readbw"), "--json", "--threads", ",".join(map(str, a.threads))],
                        a.logs, "readbw-" + when)
    return last_json(out) if rc == 0 else None


def medians(info):
    return {r["threads"]: r["median_gbs"] for r in (info or {}).get("results", [])}


def checkpoints(a):
    embedded = os.path.join(ROOT, "models", "tiny-shakespeare")
    bench = os.path.join(a.peers, "models", "bench")
    gguf = os.path.join(a.peers, "gguf")
    cks = [{"name": "tiny-shakespeare", "dir": embedded, "what": "the embedded trained model",
            "gguf": {d: os.path.join(gguf, "tiny-shakespeare-%s.gguf" % d) for d in ("bf16", "f32")}},
           {"name": "bench", "dir": bench, "what": "the random `bench` preset of tools/genmodel",
            "gguf": {"bf16": os.path.join(gguf, "bench-bf16.gguf")}}]
    return [c for c in cks if a.only in (None, c["name"])]


def describe(a, ck, bw_info):
    """The checkpoint's header lines, and the parameters a decode step reads."""
    rc, out, _, _ = run([a.specula, "info", ck["dir"], "--json"], a.logs, "%s-info" % ck["name"])
    info = last_json(out) if rc == 0 else None
    if not info:
        return None, ["(specula info failed on %s)" % ck["dir"]]
    stored = 4 if info["weight_dtype"].lower() == "f32" else 2
    params = info["weight_bytes_per_step"] / stored
    l3 = bw_info.get("l3_bytes") or 0
    lines = ["%s: %s (%s), %s weights" % (ck["name"], ck["what"], os.path.relpath(ck["dir"], ROOT),
                                          info["weight_dtype"]),
             "a decode step reads %.4gM parameters: %.4g MB in bf16 (%s), %.4g MB in f32" % (
                 params / 1e6, 2 * params / 1e6,
                 "%.3gx the %d MiB L3 this machine reports" % (2 * params / l3, l3 >> 20) if l3 else "L3 unknown",
                 4 * params / 1e6)]
    return params, lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--peers", default=None, help="default BUILD/peers")
    ap.add_argument("--llama-bench", default="")
    ap.add_argument("--skip-llama", default="", help="reason llama.cpp is skipped (empty: run it)")
    ap.add_argument("--hf-python", default="")
    ap.add_argument("--skip-hf", default="", help="reason transformers is skipped (empty: run it)")
    ap.add_argument("--runs", type=int, default=3, help="runs per row, medians reported (default 3)")
    ap.add_argument("--prompt", type=int, default=64, help="prompt tokens (default 64)")
    ap.add_argument("--tokens", type=int, default=128, help="decoded tokens (default 128)")
    ap.add_argument("--threads", default=None, help="thread counts, e.g. 1,2 (default: 1 and all CPUs)")
    ap.add_argument("--only", choices=["tiny-shakespeare", "bench"], help="one checkpoint only")
    a = ap.parse_args()
    a.peers = a.peers or os.path.join(a.build, "peers")
    a.specula = os.path.join(a.build, "specula")
    cpus = len(os.sched_getaffinity(0))
    a.threads = [int(t) for t in a.threads.split(",")] if a.threads else sorted({1, cpus})
    results = os.path.join(a.peers, "results")
    a.logs = os.path.join(results, "logs")
    os.makedirs(a.logs, exist_ok=True)
    t_start = time.monotonic()
    host = machine()
    printed = []

    def emit(line=""):
        printed.append(line)
        log(line)

    bw_start = read_bandwidth(a, "start")
    bw_info = bw_start or {}
    all_rows, notes, params_of = [], {}, {}
    for ck in checkpoints(a):
        if not os.path.exists(os.path.join(ck["dir"], "model.safetensors")):
            log("bench-peers: %s: no checkpoint at %s, skipped" % (ck["name"], ck["dir"]))
            continue
        log("bench-peers: %s" % ck["name"])
        params, head = describe(a, ck, bw_info)
        if params is None:
            continue
        params_of[ck["name"]] = params
        rows = bench_reference(a, ck) + bench_engine(a, ck) + bench_llama(a, ck) + bench_hf(a, ck)
        notes[ck["name"]] = head + greedy_agreement(a, ck, rows)
        all_rows += rows
    # The ceiling: the higher of the medians measured before and after the
    # rows (on a shared machine one of them can fall in a busy moment).
    bw_end = read_bandwidth(a, "end")
    seen = {"start": medians(bw_start), "end": medians(bw_end)}
    bw = {t: max(seen["start"].get(t, 0), seen["end"].get(t, 0)) for t in a.threads}
    bw = {t: g for t, g in bw.items() if g > 0}
    for r in all_rows:
        fill_bandwidth([r], params_of[r["checkpoint"]], bw)

    emit("")
    emit("# make bench-peers, %s" % host["date"])
    emit("machine: %s, %s CPUs (%s), L3 %s; load average at the start %.2f, at the end %.2f" % (
        host.get("Model name", "?"), host.get("CPU(s)", "?"), host.get("Hypervisor vendor", "bare metal"),
        host.get("L3 cache", "?"), host["load_average_start"][0], os.getloadavg()[0]))
    for when in ("start", "end"):
        emit("read bandwidth at the %s (%s MiB buffer, median of %s passes): %s" % (
            when, bw_info.get("buffer_bytes", 0) >> 20, bw_info.get("runs", "?"),
            ", ".join("%d thread%s %.2f GB/s" % (t, "s" if t > 1 else "", g)
                      for t, g in sorted(seen[when].items())) or "failed"))
    emit("each row: median of %d runs, prompt %d tokens (ids 1..%d), %d decoded tokens, greedy" % (
        a.runs, a.prompt, a.prompt, a.tokens))
    for name in notes:
        rows = [r for r in all_rows if r["checkpoint"] == name]
        emit("")
        emit("## " + notes[name][0])
        for line in notes[name][1:]:
            emit(line)
        if 2 * params_of[name] < (bw_info.get("l3_bytes") or 0):
            emit("(its weights fit in the cache: weight GB/s is not memory traffic, and % read BW can pass 100)")
        emit("")
        for line in table(rows) + [""] + ratio_lines(rows):
            emit(line)
    emit("")
    emit("weight GB/s: decode tok/s x the weights one decode step reads (trunk and lm_head, one embedding row, "
         "no MTP) at the bytes per parameter each holds (reference: f32 copies); %% read BW: over the read "
         "bandwidth at the same thread count (the higher of start and end). Total time %.0f s." % (time.monotonic() - t_start))

    with open(os.path.join(results, "table.md"), "w") as f:
        f.write("\n".join(printed) + "\n")
    cols = ["checkpoint", "implementation", "weights", "threads", "decode_tokens_per_s", "prefill_tokens_per_s",
            "weight_gb_per_s", "pct_read_bandwidth", "max_rss_kb", "held_bytes_per_param", "note"]
    with open(os.path.join(results, "results.tsv"), "w") as f:
        f.write("\t".join(cols) + "\n")
        for r in all_rows:
            f.write("\t".join("" if r.get(c) is None else str(r.get(c)) for c in cols) + "\n")
    with open(os.path.join(results, "results.json"), "w") as f:
        json.dump({"machine": host, "read_bandwidth": {"start": bw_start, "end": bw_end, "used_gbs": bw}, "runs": a.runs, "prompt_tokens": a.prompt,
                   "tokens": a.tokens, "threads": a.threads, "command": sys.argv, "rows": all_rows,
                   "notes": notes, "load_average_end": os.getloadavg()}, f, indent=1)
    log("bench-peers: wrote %s/table.md, results.tsv, results.json (each command's output: %s)" % (results, a.logs))


if __name__ == "__main__":
    main()
