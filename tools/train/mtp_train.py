"""mtp_train.py — the qwen3_5 MTP module in a trainable, whole-sequence form
that computes exactly what reference/methods/mtp.c computes when it chains
the one MTP layer k times. Assumes torch and transformers (with qwen3_5).

Inference (reference/methods/mtp.c, tools/peer/mtp_reference.py): for a
proposal anchored at position s, step 1 runs at position s on
fc([norm_e(E[x_{s+1}]); norm_h(h_s)]) with h_s the trunk's final-normed
hidden state, and predicts x_{s+2}; step j ≥ 2 runs at position s+j−1 on
the MTP's own output (after mtp.norm) of step j−1 together with E[x_{s+j}],
and predicts x_{s+j+1}. The MTP layer's KV cache holds the step-1 ("real")
entries of positions 0..s and the chain entries s+1..s+j−1 of the same
proposal; chain entries are dropped at the next commit.

In position terms: step j at position p always predicts x_{p+2} from
E[x_{p+1}], its proposal is anchored at s = p−j+1, and its query reads
    step-1 keys at positions 0..s  and  step-i keys at position s+i−1, 2 ≤ i ≤ j.
Each (step, position) belongs to exactly one anchor, so with the true tokens
(teacher forcing) every step can run over the whole sequence at once: step j
attends over the concatenated keys of steps 1..j under that mask. Rows with
p < j−1 (no anchor) attend to themselves only and take no loss.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from transformers.models.qwen3_5.modeling_qwen3_5 import (
    Qwen3_5DecoderLayer,
    Qwen3_5RMSNorm,
    apply_rotary_pos_emb,
)


def chain_mask(T, j, device=None):
    """Boolean [T, j·T]: may the step-j query at position p read key (i, q)
    (block i−1, column q)?"""
    p = torch.arange(T, device=device).view(T, 1)
    q = torch.arange(T, device=device).view(1, T)
    blocks = [q <= p - j + 1]                         # step-1 (real) keys up to the anchor
    for i in range(2, j + 1):
        blocks.append(q == p - j + i)                 # the chain key of step i of the same proposal
    return torch.cat(blocks, dim=1)


class MtpModule(nn.Module):
    """mtp.fc, mtp.pre_fc_norm_embedding, mtp.pre_fc_norm_hidden,
    mtp.layers.0 (one full-attention Qwen3_5DecoderLayer) and mtp.norm, with
    state_dict names equal to the checkpoint's after the "mtp." prefix.

    layer_cfg: a Qwen3_5TextConfig whose layer_types is ["full_attention"]."""

    def __init__(self, layer_cfg):
        super().__init__()
        D = layer_cfg.hidden_size
        self.fc = nn.Linear(2 * D, D, bias=False)                 # [D, 2·D]: [embedding; hidden] → D
        self.pre_fc_norm_embedding = Qwen3_5RMSNorm(D, eps=layer_cfg.rms_norm_eps)
        self.pre_fc_norm_hidden = Qwen3_5RMSNorm(D, eps=layer_cfg.rms_norm_eps)
        self.layers = nn.ModuleList([Qwen3_5DecoderLayer(layer_cfg, 0)])
        self.norm = Qwen3_5RMSNorm(D, eps=layer_cfg.rms_norm_eps)

    def _attention(self, x, cos, sin, keys, values, mask):
        """The gated attention of mtp.layers.0 for one step over the whole
        sequence. x [B, T, D] (after input_layernorm); keys/values: lists of
        the earlier steps' [B, Hkv, T, Dh], to which this step's are appended."""
        attn = self.layers[0].self_attn
        B, T, _ = x.shape
        Dh = attn.head_dim
        q, gate = torch.chunk(attn.q_proj(x).view(B, T, -1, 2 * Dh), 2, dim=-1)  # [B, T, H, Dh] each
        gate = gate.reshape(B, T, -1)                                             # [B, T, H·Dh]
        q = attn.q_norm(q).transpose(1, 2)                                        # [B, H, T, Dh]
        k = attn.k_norm(attn.k_proj(x).view(B, T, -1, Dh)).transpose(1, 2)        # [B, Hkv, T, Dh]
        v = attn.v_proj(x).view(B, T, -1, Dh).transpose(1, 2)                     # [B, Hkv, T, Dh]
        q, k = apply_rotary_pos_emb(q, k, cos, sin)
        keys.append(k)
        values.append(v)
        K = torch.cat(keys, dim=2)                                                # [B, Hkv, j·T, Dh]
        Vv = torch.cat(values, dim=2)
        rep = q.shape[1] // K.shape[1]
        if rep > 1:
            K = K.repeat_interleave(rep, dim=1)
            Vv = Vv.repeat_interleave(rep, dim=1)
        o = F.scaled_dot_product_attention(q, K, Vv, attn_mask=mask, scale=attn.scaling)  # [B, H, T, Dh]
        o = o.transpose(1, 2).reshape(B, T, -1) * torch.sigmoid(gate)
        return attn.o_proj(o)

    def forward(self, trunk_hidden, next_embed, cos, sin, steps):
        """Runs `steps` chained steps over the whole sequence.

        trunk_hidden [B, T, D]: the trunk's final-normed hidden states h_p;
        next_embed [B, T, D]: E[x_{p+1}] for every position p; cos, sin: the
        rotary tables of positions 0..T−1. Returns a list of `steps` output
        hidden states [B, T, D] (after mtp.norm); row p of step j is the
        state that predicts x_{p+2} (valid for p ≥ j−1)."""
        layer = self.layers[0]
        T = trunk_hidden.shape[1]
        e = self.pre_fc_norm_embedding(next_embed)
        keys, values, outs = [], [], []
        h = trunk_hidden
        for j in range(1, steps + 1):
            if j > 1:  # the previous step's output at p−1 feeds position p
                h = F.pad(outs[-1][:, :-1], (0, 0, 1, 0))
            x = self.fc(torch.cat([e, self.pre_fc_norm_hidden(h)], dim=-1))       # [B, T, D]
            mask = chain_mask(T, j, device=x.device)
            x = x + self._attention(layer.input_layernorm(x), cos, sin, keys, values, mask)
            x = x + layer.mlp(layer.post_attention_layernorm(x))
            outs.append(self.norm(x))
        return outs
