#!/usr/bin/env python3
"""train_models.py — trains the embedded tiny-shakespeare models on the CPU
and exports them in the Hugging Face qwen3_5 checkpoint layout that the C
loader reads: the target (trunk + MTP module) and the draft model. Assumes
torch, transformers (with qwen3_5), safetensors and tokenizers; the corpus at
../shared/data/tinyshakespeare.txt; run from the repository root.

    python3 tools/train/train_models.py all        (target, target-mtp, draft)
    python3 tools/train/train_models.py target     (or: target-mtp, draft)
    python3 tools/train/train_models.py course     (the course model, docs/models.md: phase 1 only)
    python3 tools/train/train_models.py target --steps 50 --out /tmp/t   (a quick trial)

Seeded: the same command, torch version and thread count give the same
weights. Not part of `make test` (about 45 minutes on two cores).

Phases. `target` trains the trunk and its MTP module together (phase 1,
below) and exports them; `target-mtp` (phase 2, distill_mtp.py) then
distils the MTP module from the frozen trunk of that export and rewrites it;
`draft` trains the draft model.

Losses of phase 1. The trunk is trained on next-token cross-entropy L0.
The MTP module is trained with the k = 3 chained steps that inference runs
(mtp_train.py):
L = L0 + λ·Σ_j w_j·L_j / Σ_j w_j, with λ = 0.3 and w = (1, 0.6, 0.36).
The trunk receives the MTP gradient (it is not detached): step 1 reads the
trunk's final-normed hidden state, and letting the trunk shape that state
for the token after next is what DeepSeek-V3 reports as the benefit of MTP
training; λ = 0.3 is its value, small enough that next-token quality stays
the trunk's main objective. The step weights fall as α^(j−1) with α ≈ 0.6,
because step j's draft is only looked at when drafts 1..j−1 were accepted.
The MTP module's own parameters only see the MTP terms, and AdamW is
invariant to their scale, so λ changes only the trade-off inside the trunk.
"""

import argparse
import math
import os
import sys
import time

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # no spinning threads on shared cores

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import transformers  # noqa: E402

transformers.utils.logging.set_verbosity_error()
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from transformers import Qwen3_5ForCausalLM, Qwen3_5TextConfig  # noqa: E402

import checkpoint  # noqa: E402
import distill_mtp  # noqa: E402
import presets  # noqa: E402
from corpus import Corpus  # noqa: E402
from mtp_train import MtpModule  # noqa: E402


def build(p):
    """(trunk, mtp or None), initialised from the global seed."""
    cfg = presets.hf_text_config(p)
    cfg._attn_implementation = "sdpa"
    trunk = Qwen3_5ForCausalLM(cfg)
    mtp = None
    if p["mtp"]:
        lcfg = Qwen3_5TextConfig(**{**cfg.to_dict(), "layer_types": [presets.FULL], "num_hidden_layers": 1})
        lcfg._attn_implementation = "sdpa"
        mtp = MtpModule(lcfg)
        with torch.no_grad():  # the trunk's initialisation: N(0, 0.02) matrices, zero (1 + w) norms
            for name, t in mtp.named_parameters():
                if t.ndim == 2:
                    t.normal_(0.0, cfg.initializer_range)
                else:
                    t.zero_()
    return trunk, mtp


def forward_losses(trunk, mtp, p, tokens):
    """tokens [B, T+2] → (total loss, [L0, L1, …], [accuracies]). L0: the
    trunk's next-token loss over T positions; Lj: MTP step j's loss on
    x_{p+2} over positions p ≥ j−1."""
    T = tokens.shape[1] - 2
    x = tokens[:, :T]
    h = trunk.model(input_ids=x).last_hidden_state                        # [B, T, D] final-normed
    logits = trunk.lm_head(h)                                             # [B, T, V]
    losses = [F.cross_entropy(logits.flatten(0, 1), tokens[:, 1:T + 1].flatten())]
    accs = [(logits.argmax(-1) == tokens[:, 1:T + 1]).float().mean()]
    if mtp is None:
        return losses[0], losses, accs
    pos = torch.arange(T).unsqueeze(0).expand(x.shape[0], T)
    cos, sin = trunk.model.rotary_emb(h, pos)
    next_embed = trunk.model.embed_tokens(tokens[:, 1:T + 1])             # E[x_{p+1}]
    outs = mtp(h, next_embed, cos, sin, p["mtp_steps"])
    target = tokens[:, 2:T + 2]                                           # x_{p+2}
    w = p["mtp_step_weights"]
    total_mtp = 0.0
    for j, o in enumerate(outs, start=1):
        lj = trunk.lm_head(o[:, j - 1:])
        losses.append(F.cross_entropy(lj.flatten(0, 1), target[:, j - 1:].flatten()))
        accs.append((lj.argmax(-1) == target[:, j - 1:]).float().mean())
        total_mtp = total_mtp + w[j - 1] * losses[-1]
    total = losses[0] + p["mtp_lambda"] * total_mtp / sum(w)
    return total, losses, accs


@torch.no_grad()
def evaluate(trunk, mtp, p, corpus, limit=None):
    """Mean losses and top-1 accuracies over validation windows."""
    trunk.eval()
    if mtp is not None:
        mtp.eval()
    windows = corpus.val_windows(p["seq"] + 2, limit)
    sums, accs, n = None, None, 0
    for i in range(0, len(windows), 8):
        _, losses, a = forward_losses(trunk, mtp, p, windows[i:i + 8])
        b = len(windows[i:i + 8])
        vals = [float(x) * b for x in losses]
        av = [float(x) * b for x in a]
        sums = vals if sums is None else [s + v for s, v in zip(sums, vals)]
        accs = av if accs is None else [s + v for s, v in zip(accs, av)]
        n += b
    trunk.train()
    if mtp is not None:
        mtp.train()
    return [s / n for s in sums], [a / n for a in accs]


def lr_at(step, p):
    if step < p["warmup"]:
        return p["lr"] * (step + 1) / p["warmup"]
    frac = (step - p["warmup"]) / max(1, p["steps"] - p["warmup"])
    lo = p["lr"] * p["min_lr_frac"]
    return lo + 0.5 * (p["lr"] - lo) * (1 + math.cos(math.pi * frac))


def fmt_losses(losses):
    names = ["trunk"] + [f"mtp{j}" for j in range(1, len(losses))]
    return " ".join(f"{n} {v:.4f}" for n, v in zip(names, losses))


def train(name, p, corpus, threads, log_every=25, eval_every=250):
    torch.manual_seed(p["seed"])
    gen = torch.Generator().manual_seed(p["seed"] + 1)
    trunk, mtp = build(p)
    params = list(trunk.parameters()) + (list(mtp.parameters()) if mtp is not None else [])
    n_params = sum(t.numel() for t in params)
    decay = [t for t in params if t.ndim >= 2]
    no_decay = [t for t in params if t.ndim < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": p["weight_decay"]},
                             {"params": no_decay, "weight_decay": 0.0}], lr=p["lr"], betas=(0.9, 0.95))
    tokens_per_step = p["batch"] * p["seq"]
    print(f"[{name}] {n_params} parameters, {p['steps']} steps of {p['batch']}×{p['seq']} tokens "
          f"({p['steps'] * tokens_per_step / len(corpus.train):.1f} epochs of {len(corpus.train)} tokens), "
          f"{threads} threads", flush=True)
    t0 = time.time()
    run = None
    for step in range(p["steps"]):
        for g in opt.param_groups:
            g["lr"] = lr_at(step, p)
        batch = corpus.batch(gen, p["batch"], p["seq"] + 2)
        total, losses, _ = forward_losses(trunk, mtp, p, batch)
        opt.zero_grad(set_to_none=True)
        total.backward()
        torch.nn.utils.clip_grad_norm_(params, p["grad_clip"])
        opt.step()
        vals = [x.detach().item() for x in losses]
        run = vals if run is None else [0.95 * r + 0.05 * v for r, v in zip(run, vals)]
        if (step + 1) % log_every == 0 or step == 0:
            el = time.time() - t0
            print(f"[{name}] step {step + 1}/{p['steps']} lr {lr_at(step, p):.2e} {fmt_losses(run)} "
                  f"| {(step + 1) * tokens_per_step / el:.0f} tok/s, {el / 60:.1f} min", flush=True)
        if (step + 1) % eval_every == 0 and step + 1 < p["steps"]:
            vl, _ = evaluate(trunk, mtp, p, corpus, limit=48)
            print(f"[{name}] step {step + 1} validation (48 windows): {fmt_losses(vl)}", flush=True)
    train_seconds = time.time() - t0
    train_losses, train_accs = evaluate_train(trunk, mtp, p, corpus)
    val_losses, val_accs = evaluate(trunk, mtp, p, corpus)
    print(f"[{name}] done in {train_seconds / 60:.1f} min; validation: {fmt_losses(val_losses)} "
          f"perplexity {math.exp(val_losses[0]):.2f}", flush=True)
    return trunk, mtp, dict(n_params=n_params, train_seconds=train_seconds, train_losses=train_losses,
                            train_accs=train_accs, val_losses=val_losses, val_accs=val_accs)


@torch.no_grad()
def evaluate_train(trunk, mtp, p, corpus, windows=56):
    """Losses on a fixed sample of training windows (as many as the
    validation part has), for the train/validation comparison."""
    gen = torch.Generator().manual_seed(7)
    batch = corpus.batch(gen, windows, p["seq"] + 2)
    trunk.eval()
    if mtp is not None:
        mtp.eval()
    sums, accs = None, None
    for i in range(0, windows, 8):
        _, losses, a = forward_losses(trunk, mtp, p, batch[i:i + 8])
        vals, av = [float(x) for x in losses], [float(x) for x in a]
        sums = vals if sums is None else [s + v for s, v in zip(sums, vals)]
        accs = av if accs is None else [s + v for s, v in zip(accs, av)]
    k = math.ceil(windows / 8)
    trunk.train()
    if mtp is not None:
        mtp.train()
    return [s / k for s in sums], [a / k for a in accs]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("which", choices=["all", "target", "target-mtp", "draft", "course"])
    ap.add_argument("--corpus", default="../shared/data/tinyshakespeare.txt")
    ap.add_argument("--tokenizer", default="models/tiny-shakespeare/tokenizer.json")
    ap.add_argument("--steps", type=int, help="override the preset's step count (trials)")
    ap.add_argument("--out", help="override the output folder (only with one model)")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    if args.out and args.which == "all":
        ap.error("--out needs one model (target or draft)")
    torch.set_num_threads(args.threads)
    corpus = Corpus(args.corpus, args.tokenizer)
    print(f"corpus: {len(corpus.train)} training tokens, {len(corpus.val)} validation tokens "
          f"(last {len(corpus.val_text)} characters held out)", flush=True)
    names = ["target", "target-mtp", "draft"] if args.which == "all" else [args.which]
    command = "python3 " + " ".join([os.path.relpath(__file__)] + sys.argv[1:])
    for name in names:
        phase2 = name.endswith("-mtp")
        p = dict(presets.PRESETS[name[:-len("-mtp")] if phase2 else name])
        if args.steps:
            p["distill_steps" if phase2 else "steps"] = args.steps
        out = args.out or p["out"]
        if phase2:
            distill_mtp.run(out, p, corpus, command, tag=name)
            print(f"[{name}] rewrote {out}", flush=True)
            continue
        trunk, mtp, stats = train(name, p, corpus, args.threads)
        checkpoint.export(out, name, p, trunk, mtp, stats, corpus, args.tokenizer, command, args.threads)
        print(f"[{name}] exported to {out}", flush=True)


if __name__ == "__main__":
    main()
