"""distill_mtp.py — the second training phase of the target: the MTP module
is distilled from the frozen trunk it drafts for, starting from the exported
phase-1 checkpoint (bf16 values, exactly what ships). Assumes torch,
transformers (with qwen3_5), safetensors; called by train_models.py.

Why. A draft is accepted when it agrees with the target (at temperature 0,
argmax against argmax; at temperature 1, with probability Σ min(p, q)), not
when it is right about the corpus. Phase 1 trains the MTP on the corpus's
tokens; its validation loss then equals the trunk's (both ≈ 3.0 nats) yet
it agrees with the trunk's argmax on only about half the held-out positions,
because the two models err differently and the trunk has memorised phrases
of the training text that its greedy continuations repeat. Phase 2 replaces
the hard labels by the trunk's own distribution over the same token: step j
at position p (predicting x_{p+2}, chained exactly as at inference, see
mtp_train.py) is trained on the cross-entropy against softmax(trunk logits at
p+1), the trunk's prediction of x_{p+2} given the true x_{≤p+1}. The trunk,
embedding and lm_head stay frozen, so the target's own distribution is
unchanged by this phase (its tensors are written back bit for bit).
"""

import math
import os
import re
import time

import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file
from transformers import Qwen3_5TextConfig

import checkpoint
import presets
from mtp_train import MtpModule


def load(out, p):
    """(frozen float32 trunk, MTP module in float32, bf16 tensors of the file)."""
    trunk, tensors = checkpoint.load_trunk_f32(out, p)
    for t in trunk.parameters():
        t.requires_grad_(False)
    cfg = trunk.config
    lcfg = Qwen3_5TextConfig(**{**cfg.to_dict(), "layer_types": [presets.FULL], "num_hidden_layers": 1})
    lcfg._attn_implementation = "sdpa"
    mtp = MtpModule(lcfg).float()
    mtp.load_state_dict({k[len("mtp."):]: v for k, v in tensors.items() if k.startswith("mtp.")}, strict=True)
    raw = load_file(os.path.join(out, "model.safetensors"))
    return trunk, mtp, raw


@torch.no_grad()
def self_continuations(trunk, corpus, p, gen):
    """The trunk's own continuations [N, T+2] of prompts drawn from the
    training text: half greedy, half sampled at temperature 1 (no cut), each
    a PROMPT-token prompt plus T+2−PROMPT generated tokens. These are the
    states the MTP meets when it drafts for the trunk's greedy or sampled
    output, which the corpus alone does not show it."""
    n, prompt, batch = p["distill_self_seqs"], p["distill_self_prompt"], 64
    length = p["seq"] + 2
    rows = []
    for start in range(0, n, batch):
        b = min(batch, n - start)
        ids = corpus.batch(gen, b, prompt)
        sample = start >= n // 2
        torch.manual_seed(int(torch.randint(0, 2**31 - 1, (1,), generator=gen)))  # generate() draws from the global RNG
        kw = dict(do_sample=True, temperature=1.0, top_k=0, top_p=1.0) if sample else dict(do_sample=False)
        out = trunk.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=length - prompt,
                             min_new_tokens=length - prompt, pad_token_id=presets.EOS_ID, **kw)
        rows.append(out[:, :length])
    return torch.cat(rows)


def losses(trunk, mtp, p, tokens):
    """tokens [B, T+2] → (distillation loss, per-step soft CE, per-step hard
    CE on x_{p+2}, per-step agreement with the trunk's argmax)."""
    T = tokens.shape[1] - 2
    with torch.no_grad():
        hs = trunk.model(input_ids=tokens[:, :T + 1]).last_hidden_state        # [B, T+1, D]
        teacher_logits = trunk.lm_head(hs[:, 1:T + 1])                         # [B, T, V]: trunk's x_{p+2}
        teacher = F.softmax(teacher_logits, dim=-1)
        teacher_top = teacher_logits.argmax(-1)
    h = hs[:, :T]
    pos = torch.arange(T).unsqueeze(0).expand(tokens.shape[0], T)
    cos, sin = trunk.model.rotary_emb(h, pos)
    next_embed = trunk.model.embed_tokens(tokens[:, 1:T + 1])
    outs = mtp(h, next_embed, cos, sin, p["mtp_steps"])
    target = tokens[:, 2:T + 2]
    w = p["mtp_step_weights"]
    total, soft, hard, agree = 0.0, [], [], []
    for j, o in enumerate(outs, start=1):
        lj = trunk.lm_head(o[:, j - 1:])                                       # rows p ≥ j−1
        logq = F.log_softmax(lj, dim=-1)
        soft.append(-(teacher[:, j - 1:] * logq).sum(-1).mean())
        hard.append(F.nll_loss(logq.flatten(0, 1), target[:, j - 1:].flatten()))
        agree.append((lj.argmax(-1) == teacher_top[:, j - 1:]).float().mean())
        total = total + w[j - 1] * soft[-1]
    return total / sum(w), soft, hard, agree


@torch.no_grad()
def evaluate(trunk, mtp, p, windows):
    mtp.eval()
    sums = None
    for i in range(0, len(windows), 8):
        b = windows[i:i + 8]
        _, soft, hard, agree = losses(trunk, mtp, p, b)
        vals = [float(x) * len(b) for x in soft + hard + agree]
        sums = vals if sums is None else [s + v for s, v in zip(sums, vals)]
    mtp.train()
    k = p["mtp_steps"]
    vals = [s / len(windows) for s in sums]
    return vals[:k], vals[k:2 * k], vals[2 * k:]


def fmt(soft, hard, agree):
    return " ".join(f"step{j + 1} soft {s:.4f} hard {h:.4f} agree {a:.3f}"
                    for j, (s, h, a) in enumerate(zip(soft, hard, agree)))


def lr_at(step, p):
    steps, lr = p["distill_steps"], p["distill_lr"]
    if step < p["distill_warmup"]:
        return lr * (step + 1) / p["distill_warmup"]
    frac = (step - p["distill_warmup"]) / max(1, steps - p["distill_warmup"])
    lo = lr * p["min_lr_frac"]
    return lo + 0.5 * (lr - lo) * (1 + math.cos(math.pi * frac))


def run(out, p, corpus, command, log_every=25, tag="target-mtp"):
    """Distils the MTP of the checkpoint in `out` and writes it back."""
    torch.manual_seed(p["distill_seed"])
    gen = torch.Generator().manual_seed(p["distill_seed"] + 1)
    trunk, mtp, raw = load(out, p)
    params = list(mtp.parameters())
    decay = [t for t in params if t.ndim >= 2]
    no_decay = [t for t in params if t.ndim < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": p["weight_decay"]},
                             {"params": no_decay, "weight_decay": 0.0}], lr=p["distill_lr"], betas=(0.9, 0.95))
    val = corpus.val_windows(p["seq"] + 2)
    own = None
    if p["distill_self_seqs"]:
        t0 = time.time()
        own = self_continuations(trunk, corpus, p, gen)
        print(f"[{tag}] {len(own)} continuations of the trunk's own ({own.shape[1]} tokens, half greedy, "
              f"half sampled) in {time.time() - t0:.0f} s", flush=True)
    before = evaluate(trunk, mtp, p, val)
    print(f"[{tag}] phase 2: distil the MTP from the frozen trunk, {p['distill_steps']} steps; "
          f"validation before: {fmt(*before)}", flush=True)
    t0 = time.time()
    run_avg = None
    for step in range(p["distill_steps"]):
        for g in opt.param_groups:
            g["lr"] = lr_at(step, p)
        batch = corpus.batch(gen, p["batch"], p["seq"] + 2)
        if own is not None:  # half the batch from the trunk's own continuations
            pick = torch.randint(0, len(own), (p["batch"] // 2,), generator=gen)
            batch = torch.cat([batch[:p["batch"] - len(pick)], own[pick]])
        total, soft, hard, agree = losses(trunk, mtp, p, batch)
        opt.zero_grad(set_to_none=True)
        total.backward()
        torch.nn.utils.clip_grad_norm_(params, p["grad_clip"])
        opt.step()
        vals = [x.detach().item() for x in soft + hard + agree]
        run_avg = vals if run_avg is None else [0.9 * r + 0.1 * v for r, v in zip(run_avg, vals)]
        if (step + 1) % log_every == 0 or step == 0:
            k = p["mtp_steps"]
            el = time.time() - t0
            print(f"[{tag}] step {step + 1}/{p['distill_steps']} lr {lr_at(step, p):.2e} "
                  f"{fmt(run_avg[:k], run_avg[k:2 * k], run_avg[2 * k:])} | {el / 60:.1f} min", flush=True)
    seconds = time.time() - t0
    after = evaluate(trunk, mtp, p, val)
    gen_train = torch.Generator().manual_seed(7)
    train_after = evaluate(trunk, mtp, p, corpus.batch(gen_train, len(val), p["seq"] + 2))
    print(f"[{tag}] done in {seconds / 60:.1f} min; validation after: {fmt(*after)}", flush=True)

    # Write back: the trunk's tensors untouched, the MTP's replaced.
    new = {"mtp." + k: v.detach().to(torch.bfloat16).contiguous() for k, v in mtp.state_dict().items()}
    for k in new:
        if k not in raw:
            raise SystemExit(f"{out}: phase-1 checkpoint lacks {k}")
    merged = {k: (new[k] if k in new else v) for k, v in raw.items()}
    save_file(merged, os.path.join(out, "model.safetensors"), metadata={"format": "pt"})
    check = load_file(os.path.join(out, "model.safetensors"))
    for k, v in raw.items():
        if not k.startswith("mtp.") and not torch.equal(check[k], v):
            raise SystemExit(f"{out}: trunk tensor {k} changed in phase 2")
    model, loaded = checkpoint.load_trunk_f32(out, p)
    err = checkpoint.check_mtp_equivalence(model, loaded, p, corpus.val[:97].tolist(), anchors=(0, 5, 40, 90))
    if not err <= checkpoint.MTP_REL_TOL:
        raise SystemExit(f"{out}: the distilled MTP computation differs from the inference reference ({err:.2e})")
    print(f"[{tag}] training-time MTP vs tools/peer/mtp_reference.py: max relative error {err:.2e}", flush=True)

    def line(vals):
        soft, hard, agree = vals
        return " ".join(f"mtp_step{j + 1} {h:.4f} (distillation {s:.4f}, agrees with trunk argmax {a:.3f})"
                        for j, (s, h, a) in enumerate(zip(soft, hard, agree)))

    lines = [
        f"model.phase2 MTP distilled from the frozen trunk: {p['distill_steps']} steps × {p['batch']}×{p['seq']} "
        f"tokens, AdamW lr {p['distill_lr']:g} cosine to {p['min_lr_frac']:g}×, seed {p['distill_seed']}, "
        f"soft cross-entropy against the trunk's distribution, step weights {tuple(p['mtp_step_weights'])}, "
        + (f"half of each batch from {p['distill_self_seqs']} continuations of the trunk's own "
           f"(half greedy, half sampled at T=1, {p['distill_self_prompt']}-token prompts from the training text), "
           if p["distill_self_seqs"] else "") +
        f"{seconds / 60:.1f} min",
        f"model.phase2.command {command}",
        f"model.phase2.val_mtp_before {line(before)}",
        f"model.phase2.val_mtp_after {line(after)}",
        f"model.phase2.train_mtp_after {line(train_after)}",
        f"model.phase2.mtp_check training-time MTP = tools/peer/mtp_reference.py, max rel err {err:.1e}",
    ]
    lines.append(final_line(out, after, train_after))
    checkpoint.refresh_manifest(out, lines, replace_prefixes=("model.file ", "model.phase2", "model.final"))


def final_line(out, val_after, train_after):
    """The final losses in one line: the trunk's from phase 1 (MANIFEST's
    model.train_loss / model.val_loss, unchanged since the trunk is frozen),
    the MTP's (cross-entropy on the true token) from phase 2."""
    trunk = {}
    with open(os.path.join(out, "MANIFEST"), encoding="utf-8") as f:
        for ln in f:
            m = re.match(r"model\.(train|val)_loss trunk ([0-9.]+)", ln)
            if m:
                trunk[m.group(1)] = float(m.group(2))
    if set(trunk) != {"train", "val"}:
        raise SystemExit(f"{out}/MANIFEST: no phase-1 trunk losses (model.train_loss / model.val_loss)")

    def part(which, vals):
        return f"{which}: trunk {trunk[which]:.4f} " + " ".join(
            f"mtp_step{j + 1} {h:.4f}" for j, h in enumerate(vals[1]))

    return (f"model.final_losses (nats/token; MTP: cross-entropy on the true token) {part('train', train_after)}; "
            f"{part('val', val_after)}; held-out perplexity {math.exp(trunk['val']):.3f}")
