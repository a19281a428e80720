#!/usr/bin/env python3
"""check_mtp_train.py — shows that the training-time MTP computation
(mtp_train.py: all chained steps over a whole sequence at once) equals the
step-by-step inference reference of the peer check
(tools/peer/mtp_reference.py) on a randomised model, and that the same
comparison rejects the two plausible simplifications it replaces. Assumes
torch and transformers (with qwen3_5); runs in a few seconds on the CPU.

    python3 tools/train/check_mtp_train.py

Planted variants that must be rejected (relative error > bound):
  same-step   step j attends causally over step j's own keys only (the
              common whole-sequence approximation), not over the real keys
              up to the anchor plus the chain keys of its own proposal;
  no-shift    step j reads step j−1's output at the same position p instead
              of at p − 1.
Exit status 0 only when the real computation passes and both are rejected.
"""

import copy
import os
import sys

import torch
import transformers

transformers.utils.logging.set_verbosity_error()

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "peer"))
import mtp_train  # noqa: E402
import peer_models  # noqa: E402
from checkpoint import MTP_REL_TOL  # noqa: E402
from mtp_reference import MtpReference  # noqa: E402
from transformers import Qwen3_5ForCausalLM  # noqa: E402

SPEC = dict(name="check", layout="text", shard_kb=None, seed=5,
            vocab_size=64, hidden_size=32, intermediate_size=48,
            layer_types=[peer_models.LIN, peer_models.FULL],
            num_attention_heads=4, num_key_value_heads=2, head_dim=16,
            partial_rotary_factor=0.5, rope_theta=1e4,
            linear_num_key_heads=2, linear_num_value_heads=2,
            linear_key_head_dim=8, linear_value_head_dim=8, linear_conv_kernel_dim=4,
            tie_word_embeddings=False, rms_norm_eps=1e-6)
STEPS = 3


def same_step_mask(T, j, device=None):
    """Planted: causal over step j's own keys (blocks of earlier steps closed)."""
    causal = torch.ones(T, T, dtype=torch.bool, device=device).tril()
    return torch.cat([torch.zeros(T, (j - 1) * T, dtype=torch.bool, device=device), causal], dim=1)


def no_shift_forward(self, trunk_hidden, next_embed, cos, sin, steps):
    """Planted: the previous step's output at p (not p − 1) feeds position p."""
    layer = self.layers[0]
    T = trunk_hidden.shape[1]
    e = self.pre_fc_norm_embedding(next_embed)
    keys, values, outs = [], [], []
    h = trunk_hidden
    for j in range(1, steps + 1):
        if j > 1:
            h = outs[-1]
        x = self.fc(torch.cat([e, self.pre_fc_norm_hidden(h)], dim=-1))
        mask = mtp_train.chain_mask(T, j, device=x.device)
        x = x + self._attention(layer.input_layernorm(x), cos, sin, keys, values, mask)
        x = x + layer.mlp(layer.post_attention_layernorm(x))
        outs.append(self.norm(x))
    return outs


@torch.no_grad()
def worst_error(model, mtp, ref, tokens, anchors):
    T = len(tokens) - 1
    ids = torch.tensor([tokens])
    h_full = model.model(input_ids=ids).last_hidden_state[0]
    h = h_full[:T].unsqueeze(0)
    cos, sin = model.model.rotary_emb(h, torch.arange(T).unsqueeze(0))
    e = model.model.embed_tokens(ids[:, 1:T + 1])
    outs = [model.lm_head(o)[0] for o in mtp(h, e, cos, sin, STEPS)]

    def rel(a, b):
        return float(((a - b).norm(dim=-1) / b.norm(dim=-1)).max())

    unchained, _ = ref.run(tokens, h_full)
    worst = rel(outs[0], unchained)
    for s in anchors:
        chained, _ = ref.run(tokens, h_full, chain_from=s)
        for j in range(2, STEPS + 1):
            r = s + j - 1
            if r < T:
                # the chained row must differ from the unchained one, or the
                # comparison could not tell the two apart
                if rel(chained[r:r + 1], unchained[r:r + 1]) < 100 * MTP_REL_TOL:
                    raise SystemExit(f"anchor {s}, step {j}: chained and unchained rows coincide")
                worst = max(worst, rel(outs[j - 1][r:r + 1], chained[r:r + 1]))
    return worst


def main():
    torch.manual_seed(SPEC["seed"])
    gen = torch.Generator().manual_seed(SPEC["seed"])
    cfg = peer_models.text_config(SPEC)
    cfg._attn_implementation = "eager"
    model = Qwen3_5ForCausalLM(cfg).float().eval()
    peer_models.randomise(model, gen)
    tensors = peer_models.mtp_tensors(cfg, gen)
    lcfg = copy.deepcopy(cfg)
    lcfg.layer_types = [peer_models.FULL]
    lcfg.num_hidden_layers = 1
    lcfg._attn_implementation = "sdpa"
    mtp = mtp_train.MtpModule(lcfg).float().eval()
    mtp.load_state_dict({k[len("mtp."):]: v for k, v in tensors.items()}, strict=True)
    ref = MtpReference(cfg, tensors, model.get_input_embeddings().weight, model.lm_head.weight)
    tokens = torch.randint(0, SPEC["vocab_size"], (33,), generator=gen).tolist()
    anchors = (0, 3, 10, 29)

    ok = True
    err = worst_error(model, mtp, ref, tokens, anchors)
    good = err <= MTP_REL_TOL
    ok &= good
    print(f"mtp_train (chain mask, shifted hidden)   max rel err {err:.2e}  {'ok' if good else 'FAIL'}")

    original_mask = mtp_train.chain_mask
    mtp_train.chain_mask = same_step_mask
    err = worst_error(model, mtp, ref, tokens, anchors)
    mtp_train.chain_mask = original_mask
    rejected = err > MTP_REL_TOL
    ok &= rejected
    print(f"planted: same-step causal attention       max rel err {err:.2e}  "
          f"{'rejected (expected)' if rejected else 'NOT REJECTED'}")

    planted = copy.deepcopy(mtp)
    planted.forward = no_shift_forward.__get__(planted)
    err = worst_error(model, planted, ref, tokens, anchors)
    rejected = err > MTP_REL_TOL
    ok &= rejected
    print(f"planted: hidden state not shifted         max rel err {err:.2e}  "
          f"{'rejected (expected)' if rejected else 'NOT REJECTED'}")
    print(f"bound {MTP_REL_TOL:g} (max over rows of ‖Δlogits‖₂/‖ref‖₂, float32)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
