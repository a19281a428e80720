#!/usr/bin/env python3
"""measure_gates.py — measures the acceptance figures of the embedded models
with the C reference (`specula generate … --json`) on prompts from the
held-out part of the corpus, pooled over prompts, and prints them as the
Markdown tables of docs/models.md, with sample texts. Assumes a built
build/specula, the `tokenizers` package and the corpus; run from the
repository root.

    python3 tools/train/measure_gates.py [--prompts 16] [--prompt-len 32] [--max-tokens 96]

Gates (issue 7): MTP position-1 acceptance at temperature 0 ≥ 0.6; the draft
model's α at temperature 0 ≥ 0.5. The exit status is 1 when a gate is missed.
Pooling: per-position acceptance = Σ accepted / Σ proposed at that position,
α = Σ accepted / (Σ accepted + Σ rejected rounds) — the C reference's own
estimator applied to the summed counts of all prompts.
"""

import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpus import Corpus  # noqa: E402

GATE_MTP_POS1 = 0.6
GATE_DRAFT_ALPHA = 0.5


def generate(binary, model, draft, method, k, temperature, tokens, seed, max_tokens, extra=()):
    cmd = [binary, "generate", "--model", model, "--method", method, "--temperature", f"{temperature:g}",
           "--seed", str(seed), "--max-tokens", str(max_tokens), "--json", "--tokens", ",".join(map(str, tokens))]
    if method in ("spec", "mtp"):
        cmd += ["--k", str(k)]
    if method == "spec":
        cmd += ["--draft", draft]
    cmd += list(extra)
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:12])} …: exit {r.returncode}: {r.stderr.strip()}")
    return json.loads(r.stdout), cmd


def pooled(runs, k):
    """(tokens, passes, per-position acceptance [k], alpha) over runs."""
    accepted = [0] * k
    proposed = [0] * k
    rejected = committed = passes = 0
    for run in runs:
        a = run["accounting"]
        hist = a["accepted_length_histogram"]
        for d in range(1, k + 1):
            accepted[d - 1] += sum(hist[d:])
            proposed[d - 1] += a["proposed_per_position"][d - 1]
        rejected += a["rejected_rounds"]
        committed += a["committed"]
        passes += a["target_passes"]
    acc = [x / p if p else float("nan") for x, p in zip(accepted, proposed)]
    total = sum(accepted)
    alpha = total / (total + rejected) if total + rejected else float("nan")
    return committed, passes, acc, alpha


def expected(alpha, k):
    return k + 1.0 if alpha >= 1 else (1 - alpha ** (k + 1)) / (1 - alpha)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--specula", default="build/specula")
    ap.add_argument("--target", default="models/tiny-shakespeare")
    ap.add_argument("--draft", default="models/tiny-shakespeare-draft")
    ap.add_argument("--corpus", default="../shared/data/tinyshakespeare.txt")
    ap.add_argument("--prompts", type=int, default=16)
    ap.add_argument("--prompt-len", type=int, default=32)
    ap.add_argument("--max-tokens", type=int, default=96)
    ap.add_argument("--samples", type=int, default=2, help="decoded sample texts per setting shown")
    args = ap.parse_args()

    corpus = Corpus(args.corpus, os.path.join(args.target, "tokenizer.json"))
    prompts = corpus.prompts(args.prompts, args.prompt_len)
    settings = [  # (label, method, k, temperature, extra flags)
        ("MTP (argmax drafts)", "mtp", 3, 0.0, ()),
        ("MTP (argmax drafts)", "mtp", 3, 1.0, ("--mtp-argmax",)),
        ("MTP (sampled drafts)", "mtp", 3, 1.0, ("--mtp-sample",)),
        ("MTP (argmax drafts)", "mtp", 4, 0.0, ()),
        ("draft model", "spec", 4, 0.0, ()),
        ("draft model", "spec", 4, 1.0, ()),
    ]
    rows, texts, commands = [], [], []
    gates_ok = True
    for label, method, k, temp, extra in settings:
        runs = []
        for i, p in enumerate(prompts):
            out, cmd = generate(args.specula, args.target, args.draft, method, k, temp, p, i + 1, args.max_tokens,
                                extra)
            runs.append(out)
            if i == 0:
                shown = list(cmd)
                shown[shown.index("--tokens") + 1] = "<prompt ids>"
                commands.append(" ".join(shown))
        committed, passes, acc, alpha = pooled(runs, k)
        gate = ""
        if method == "mtp" and temp == 0 and k == 3:
            ok = acc[0] >= GATE_MTP_POS1
            gate = f"position 1 ≥ {GATE_MTP_POS1}: {'pass' if ok else 'MISSED'}"
            gates_ok &= ok
        if method == "spec" and temp == 0:
            ok = alpha >= GATE_DRAFT_ALPHA
            gate = f"α ≥ {GATE_DRAFT_ALPHA}: {'pass' if ok else 'MISSED'}"
            gates_ok &= ok
        rows.append((label, f"`{method}`", k, f"{temp:g}", committed, f"{committed / passes:.3f}",
                     " / ".join(f"{a:.3f}" for a in acc), f"{alpha:.3f}", f"{expected(alpha, k):.3f}", gate))
    for label, method, temp in (("greedy", "greedy", 0.0), ("sampled", "sample", 1.0)):
        for i, p in enumerate(prompts[:args.samples]):
            out, _ = generate(args.specula, args.target, args.draft, method, 0, temp, p, i + 1, args.max_tokens)
            texts.append((label, corpus.tokenizer.decode(p), corpus.tokenizer.decode(out["tokens"])))

    print(f"{len(prompts)} held-out prompts of {args.prompt_len} tokens (the first tokens of speeches spread over "
          f"the validation text), {args.max_tokens} generated tokens each, seeds 1..{len(prompts)}; "
          f"counts pooled over prompts.\n")
    head = ("proposer", "method", "k", "T", "tokens", "tokens/pass", "acceptance per position", "α", "E(α,k)",
            "gate")
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join("---" for _ in head) + "|")
    for r in rows:
        print("| " + " | ".join(str(c) for c in r) + " |")
    print("\nCommands (one per prompt, `--seed` = prompt number):\n")
    for c in commands:
        print(f"    {c}")
    print("\nSample texts (prompt, then the continuation):\n")
    for label, prompt, cont in texts:
        print(f"{label}:\n```\n{prompt}⟨{cont}⟩\n```")
    return 0 if gates_ok else 1


if __name__ == "__main__":
    sys.exit(main())
