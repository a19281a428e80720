"""peer_trained.py — the peer check on a trained checkpoint (the embedded
models/tiny-shakespeare): the C reference's trunk logits against Hugging Face
transformers and its MTP logits, unchained and chained, against
mtp_reference.py, on the bf16 weights read as float32 by both sides.
Assumes the checkpoint is the multimodal layout (config.json with
text_config, tensors under model.language_model.) or the text-only one.

Token sequences need neither the corpus nor a tokenizer: a 96-token text
sampled from the model itself (seeded, temperature 0.8 — in-distribution
text with attention and DeltaNet states that a trained model really uses)
and 40 random tokens. The planted bugs of the random configurations are run
here too: trained weights are not random, so the check must show that it
still sees a convention bug on them.
"""

import json
import os

import torch
from transformers import Qwen3_5Config, Qwen3_5ForCausalLM, Qwen3_5TextConfig

import peer_models
from mtp_reference import MtpReference


def load_trained(model_dir):
    """(Qwen3_5ForCausalLM in float32 with the checkpoint's weights, text
    config, every tensor in float32, layout name)."""
    with open(os.path.join(model_dir, "config.json")) as f:
        top = json.load(f)
    if top.get("model_type") == "qwen3_5":
        tcfg = Qwen3_5Config(**top).text_config
        prefix, layout = "model.language_model.", "multimodal"
    else:
        tcfg = Qwen3_5TextConfig(**{k: v for k, v in top.items() if k != "model_type"})
        prefix, layout = "model.", "text"
    tcfg._attn_implementation = "eager"
    tensors = {k: v.float() for k, v in peer_models.load_checkpoint_tensors(model_dir).items()}
    model = Qwen3_5ForCausalLM(tcfg).float().eval()
    state = {"model." + k[len(prefix):]: v for k, v in tensors.items() if k.startswith(prefix)}
    if "lm_head.weight" in tensors:
        state["lm_head.weight"] = tensors["lm_head.weight"]
    missing, unexpected = model.load_state_dict(state, strict=False)
    if tcfg.tie_word_embeddings:
        missing = [m for m in missing if m != "lm_head.weight"]
    if missing or unexpected:
        raise RuntimeError(f"{model_dir}: tensors missing {missing[:4]}, unexpected {unexpected[:4]}")
    return model, tcfg, tensors, layout


def newline_token(model_dir, vocab):
    """The id of "\\n" (byte-level symbol Ċ) in the model's tokenizer.json, or 0."""
    path = os.path.join(model_dir, "tokenizer.json")
    try:
        with open(path, encoding="utf-8") as f:
            tid = json.load(f)["model"]["vocab"].get("\u010a", 0)
    except (OSError, ValueError, KeyError):
        tid = 0
    return tid if 0 <= tid < vocab else 0


@torch.no_grad()
def sampled_text(model, start, n, seed, temperature=0.8):
    gen = torch.Generator().manual_seed(seed)
    tokens = [start]
    for _ in range(n - 1):
        logits = model(input_ids=torch.tensor([tokens])).logits[0, -1]
        probs = torch.softmax(logits / temperature, dim=-1)
        tokens.append(int(torch.multinomial(probs, 1, generator=gen)))
    return tokens


def check_trained(model_dir, work, binary, table, pc):
    """Adds the rows of one trained checkpoint to table. pc: the peer_check
    module (compare, run_specula, hf_reference, negative_controls)."""
    model, tcfg, tensors, layout = load_trained(model_dir)
    name = os.path.basename(os.path.normpath(model_dir))
    spec = {"name": name, "layout": layout}
    V = tcfg.vocab_size
    scratch = os.path.join(work, "scratch")
    os.makedirs(scratch, exist_ok=True)
    has_mtp = "mtp.fc.weight" in tensors
    mtp = MtpReference(tcfg, tensors, model.get_input_embeddings().weight, model.lm_head.weight) if has_mtp else None
    gen = torch.Generator().manual_seed(77)
    seqs = [("text96", sampled_text(model, newline_token(model_dir, V), 96, seed=5), 30),
            ("rand40", torch.randint(0, V, (40,), generator=gen).tolist(), 9)]
    refs = {}
    for seq, tokens, chain in seqs:
        logits, hidden = pc.hf_reference(model, spec, tokens)
        try:
            c_logits, c_mtp = pc.run_specula(binary, model_dir, tokens, V, scratch, with_mtp=has_mtp)
        except pc.SpeculaError as e:
            table.add(name, layout, seq, "specula logits", len(tokens), "-", f"FAIL: {e}", True)
            continue
        pc.compare(table, spec, seq, "logits", c_logits, logits)
        if not has_mtp:
            refs[seq] = (tokens, logits, None)
            continue
        mtp_ref, _ = mtp.run(tokens, hidden)
        refs[seq] = (tokens, logits, mtp_ref)
        pc.compare(table, spec, seq, "mtp", c_mtp, mtp_ref)
        chain_ref, _ = mtp.run(tokens, hidden, chain_from=chain)
        if float(pc.rel_errors(chain_ref[chain + 1:], mtp_ref[chain + 1:]).min()) < 100 * pc.REL_TOL:
            raise RuntimeError(f"{name}/{seq}: chained and unchained MTP drafts coincide")
        try:
            _, c_chain = pc.run_specula(binary, model_dir, tokens, V, scratch, chain_from=chain)
        except pc.SpeculaError as e:
            table.add(name, layout, seq, f"mtp chain>{chain}", len(tokens) - 1, "-", f"FAIL: {e}", True)
            continue
        pc.compare(table, spec, seq, f"mtp chain>{chain}", c_chain, chain_ref)
    if has_mtp and "text96" in refs:
        pc.negative_controls(spec, model_dir, binary, table, refs, tcfg, scratch, seq="text96",
                             planted_dir=os.path.join(work, name + "-planted"))
    return tcfg


def describe(model_dir, c):
    """One line per trained checkpoint, as peer_check.describe does for the
    random configurations."""
    pattern = "".join("A" if t == "full_attention" else "N" for t in c.layer_types)
    R = int(c.head_dim * c.rope_parameters.get("partial_rotary_factor", 1.0))
    print(f"  trained {model_dir}: bf16 weights read as float32 by both sides; V={c.vocab_size} "
          f"D={c.hidden_size} F={c.intermediate_size} layers={pattern} H/Hkv/Dh={c.num_attention_heads}/"
          f"{c.num_key_value_heads}/{c.head_dim} R={R} theta={c.rope_parameters['rope_theta']:g} "
          f"Hk/Hv/Dk/Dv={c.linear_num_key_heads}/{c.linear_num_value_heads}/{c.linear_key_head_dim}/"
          f"{c.linear_value_head_dim} K={c.linear_conv_kernel_dim} "
          f"tied={'yes' if c.tie_word_embeddings else 'no'} mtp={c.mtp_num_hidden_layers}")
