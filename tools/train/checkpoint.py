"""checkpoint.py — writes a trained model in the Hugging Face qwen3_5 layout
that reference/base/layout.c reads (config.json with text_config, bf16
model.safetensors with model.language_model.*, lm_head.weight and mtp.*,
tokenizer.json), checks the written files, and records them in MANIFEST.
Assumes torch, transformers (with qwen3_5), safetensors; tools/peer beside.

The check after writing loads the bf16 file back in float32 and requires
(1) every tensor name and shape to be what a fresh transformers model and
MTP module expect, and (2) the training-time MTP computation (mtp_train.py,
all chained steps over the whole sequence at once) to equal, row by row, the
step-by-step MTP reference of the peer check (tools/peer/mtp_reference.py,
vLLM's equations with a KV cache) on held-out text — unchained, and chained
from several anchors — so the loss that was optimised is the computation
inference runs.
"""

import datetime
import json
import math
import os
import platform
import shutil
import sys

import torch
from safetensors.torch import load_file, save_file

import presets
from corpus import sha256_file

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "peer"))
from mtp_reference import MtpReference  # noqa: E402

TRUNK_PREFIX = "model.language_model."
# Relative error bound of the training-time MTP against the step-by-step
# reference, both float32 on the same weights: only the summation order of
# the attention and matrix products differs (whole-sequence batched versus
# one position at a time), which moves results by ~1e-6 relative; a wrong
# key in the chain mask or a wrong hidden-state shift moves them by > 1e-2.
MTP_REL_TOL = 1e-4


def checkpoint_tensors(trunk, mtp):
    """name → bf16 tensor, in the checkpoint's names."""
    out = {}
    tied = trunk.config.tie_word_embeddings
    for k, v in trunk.state_dict().items():
        if k == "lm_head.weight":
            if not tied:
                out[k] = v
        elif k.startswith("model."):
            out[TRUNK_PREFIX + k[len("model."):]] = v
        else:
            raise ValueError(f"unexpected trunk tensor {k}")
    if mtp is not None:
        for k, v in mtp.state_dict().items():
            out["mtp." + k] = v
    return {k: v.detach().to(torch.bfloat16).contiguous() for k, v in sorted(out.items())}


def load_trunk_f32(model_dir, p):
    """The exported checkpoint as (Qwen3_5ForCausalLM in float32, all
    tensors in float32): the bf16 values the C reference converts."""
    from transformers import Qwen3_5ForCausalLM

    tensors = {k: v.float() for k, v in load_file(os.path.join(model_dir, "model.safetensors")).items()}
    cfg = presets.hf_text_config(p)
    cfg._attn_implementation = "eager"
    model = Qwen3_5ForCausalLM(cfg).float().eval()
    state = {("model." + k[len(TRUNK_PREFIX):]): v for k, v in tensors.items() if k.startswith(TRUNK_PREFIX)}
    if "lm_head.weight" in tensors:
        state["lm_head.weight"] = tensors["lm_head.weight"]
    missing, unexpected = model.load_state_dict(state, strict=False)
    if cfg.tie_word_embeddings:
        missing = [m for m in missing if m != "lm_head.weight"]
    if missing or unexpected:
        raise RuntimeError(f"{model_dir}: missing {missing}, unexpected {unexpected}")
    return model, tensors


@torch.no_grad()
def check_mtp_equivalence(model, tensors, p, tokens, anchors):
    """Max relative row error of the training-time MTP against mtp_reference
    on `tokens`, over the unchained rows and the chained rows of every anchor."""
    from transformers import Qwen3_5TextConfig

    from mtp_train import MtpModule

    cfg = model.config
    lcfg = Qwen3_5TextConfig(**{**cfg.to_dict(), "layer_types": [presets.FULL], "num_hidden_layers": 1})
    lcfg._attn_implementation = "sdpa"
    mtp = MtpModule(lcfg).float().eval()
    mtp.load_state_dict({k[len("mtp."):]: v for k, v in tensors.items() if k.startswith("mtp.")}, strict=True)
    ref = MtpReference(cfg, tensors, model.get_input_embeddings().weight, model.lm_head.weight)
    T = len(tokens) - 1                                   # rows 0..T−1 predict tokens[p+2] for p+2 ≤ T
    ids = torch.tensor([tokens])
    h_full = model.model(input_ids=ids).last_hidden_state[0]              # [T+1, D]
    h = h_full[:T].unsqueeze(0)
    pos = torch.arange(T).unsqueeze(0)
    cos, sin = model.model.rotary_emb(h, pos)
    e = model.model.embed_tokens(ids[:, 1:T + 1])
    steps = p["mtp_steps"]
    outs = [model.lm_head(o)[0] for o in mtp(h, e, cos, sin, steps)]     # each [T, V]

    def rel(a, b):
        return float(((a - b).norm(dim=-1) / b.norm(dim=-1).clamp_min(1e-30)).max())

    worst = 0.0
    unchained, _ = ref.run(tokens, h_full)                                # [T, V]
    worst = max(worst, rel(outs[0], unchained))
    for s in anchors:
        chained, _ = ref.run(tokens, h_full, chain_from=s)
        for j in range(2, steps + 1):
            row = s + j - 1
            if row < T:
                worst = max(worst, rel(outs[j - 1][row:row + 1], chained[row:row + 1]))
    return worst


def param_counts(trunk, mtp):
    n_trunk = sum(t.numel() for t in trunk.parameters())
    n_mtp = sum(t.numel() for t in mtp.parameters()) if mtp is not None else 0
    return n_trunk, n_mtp


def update_manifest(path, lines, prefix="model."):
    """Replaces the lines starting with prefix, keeping everyone else's."""
    kept = []
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            kept = [ln for ln in f.read().splitlines() if ln and not ln.startswith(prefix)]
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(kept + lines) + "\n")


def loss_line(losses, accs):
    names = ["trunk"] + [f"mtp_step{j}" for j in range(1, len(losses))]
    return " ".join(f"{n} {v:.4f} (top-1 {a:.3f})" for n, v, a in zip(names, losses, accs))


def export(out, name, p, trunk, mtp, stats, corpus, tokenizer_path, command, threads):
    os.makedirs(out, exist_ok=True)
    tensors = checkpoint_tensors(trunk, mtp)
    st_path = os.path.join(out, "model.safetensors")
    save_file(tensors, st_path, metadata={"format": "pt"})
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(presets.config_json(p), f, indent=2)
        f.write("\n")
    tok_dst = os.path.join(out, "tokenizer.json")
    if os.path.abspath(tok_dst) != os.path.abspath(tokenizer_path):
        shutil.copyfile(tokenizer_path, tok_dst)

    model, loaded = load_trunk_f32(out, p)
    lines = []
    if mtp is not None:
        held_out = corpus.val[:97].tolist()
        err = check_mtp_equivalence(model, loaded, p, held_out, anchors=(0, 5, 40, 90))
        print(f"[{name}] training-time MTP vs tools/peer/mtp_reference.py on held-out text: "
              f"max relative error {err:.2e} (bound {MTP_REL_TOL:g})", flush=True)
        if not err <= MTP_REL_TOL:
            raise SystemExit(f"{out}: the trained MTP computation differs from the inference reference")
        lines.append(f"model.mtp_check training-time MTP = tools/peer/mtp_reference.py, max rel err {err:.1e}")

    n_trunk, n_mtp = param_counts(trunk, mtp)
    lines = file_lines(out) + [
        f"model.name {name}",
        f"model.parameters {n_trunk + n_mtp} (trunk {n_trunk}, mtp {n_mtp})",
        f"model.shape D={p['hidden_size']} F={p['intermediate_size']} layers="
        + "".join("N" if t == presets.LIN else "A" for t in p["layer_types"])
        + f" H/Hkv/Dh={p['num_attention_heads']}/{p['num_key_value_heads']}/{p['head_dim']}"
        f" Hk/Hv/Dk/Dv={p['linear_num_key_heads']}/{p['linear_num_value_heads']}/"
        f"{p['linear_key_head_dim']}/{p['linear_value_head_dim']} V={p['vocab_size']}"
        f" mtp={'1 layer' if p['mtp'] else 'none'}",
        f"model.command {command}",
        f"model.corpus tinyshakespeare.txt sha256 {corpus.sha256}",
        f"model.split train {len(corpus.train)} tokens, validation {len(corpus.val)} tokens "
        f"(last {len(corpus.val_text)} characters, from a blank line)",
        f"model.training {p['steps']} steps × {p['batch']}×{p['seq']} tokens, AdamW lr {p['lr']:g} "
        f"cosine to {p['min_lr_frac']:g}×, seed {p['seed']}"
        + (f", MTP k={p['mtp_steps']} λ={p['mtp_lambda']:g} w={tuple(p['mtp_step_weights'])}" if p["mtp"] else ""),
        f"model.train_loss {loss_line(stats['train_losses'], stats['train_accs'])}",
        f"model.val_loss {loss_line(stats['val_losses'], stats['val_accs'])}",
        f"model.val_perplexity {math.exp(stats['val_losses'][0]):.3f} (per token)",
        f"model.environment torch {torch.__version__}, {threads} threads, {platform.machine()}, "
        f"{stats['train_seconds'] / 60:.1f} min, {datetime.date.today().isoformat()}",
    ] + lines
    update_manifest(os.path.join(out, "MANIFEST"), lines)


def file_lines(out):
    files = sorted(f for f in os.listdir(out) if f != "MANIFEST" and os.path.isfile(os.path.join(out, f)))
    return [f"model.file {f} sha256 {sha256_file(os.path.join(out, f))} bytes {os.path.getsize(os.path.join(out, f))}"
            for f in files]


def refresh_manifest(out, lines, replace_prefixes):
    """Rewrites MANIFEST after a later phase changed files: the model.file
    lines are recomputed in place, lines starting with replace_prefixes are
    dropped, `lines` are appended."""
    path = os.path.join(out, "MANIFEST")
    with open(path, encoding="utf-8") as f:
        old = [ln for ln in f.read().splitlines() if ln]
    kept = [ln for ln in old if not ln.startswith(replace_prefixes)]
    at = next((i for i, ln in enumerate(kept) if ln.startswith("model.")), len(kept))
    new = kept[:at] + file_lines(out) + kept[at:] + lines
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(new) + "\n")
