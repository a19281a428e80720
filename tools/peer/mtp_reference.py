"""mtp_reference.py — a small PyTorch implementation of the qwen3_5 MTP
(multi-token prediction) module as vLLM runs it, for the peer check.

The equations follow vLLM's model_executor/models/qwen3_5_mtp.py (class
Qwen3_5MultiTokenPredictor, forward) together with qwen3_5.py / qwen3_next.py
(the trunk and the decoder layer) and v1/spec_decode/llm_base_proposer.py
(how the proposer chains steps); this file is written independently from
those equations and copies none of that code. The decoder layer
itself is transformers' Qwen3_5DecoderLayer (gated attention with q/k norm,
partial rotate-half RoPE, output gate, SwiGLU), loaded with the checkpoint's
mtp.layers.0.* tensors — an implementation independent of the C reference.

What the vLLM sources establish (quoted lines; vLLM main, files at commits
qwen3_5_mtp.py @01d99805, qwen3_5.py @00def4f8, qwen3_next.py @002d6073,
llm_base_proposer.py @00c4f22d):

1. The MTP input at target position t combines the embedding of the NEXT
   token with the trunk's hidden state of position t. The proposer shifts
   the ids by one ("Shift the input ids by one token",
   `self.input_ids[: num_tokens - 1] = target_token_ids[1:]`) and keeps the
   target positions (`self._set_positions(num_tokens, target_positions)`).
2. The order is embedding first:
   `inputs_embeds = self.pre_fc_norm_embedding(inputs_embeds)`,
   `hidden_states = self.pre_fc_norm_hidden(hidden_states)`,
   `hidden_states = torch.cat([inputs_embeds, hidden_states], dim=-1)`,
   `hidden_states = self.fc(hidden_states)`.
3. The trunk's hidden state is the FINAL-NORMED one: Qwen3NextModel.forward
   (which Qwen3_5Model inherits) ends with
   `hidden_states, _ = self.norm(hidden_states, residual)` and returns it;
   the model runner (v1/worker/gpu_model_runner.py) slices that returned
   tensor into the proposer's input (`target_hidden_states =
   hidden_states[:…]`, the aux-hidden-state variant being for EAGLE-3 only).
   It is also the tensor the lm_head reads, so hidden_t here is exactly
   what model.norm produces.
4. After its decoder layer the MTP applies its own norm and returns the
   normed state: `hidden_states, _ = self.norm(hidden_states, residual)`,
   `return hidden_states`; compute_logits applies the shared lm_head
   (`self.lm_head = self.model.embed_tokens` when tie_word_embeddings).
5. Chained drafts feed that same returned tensor back: Qwen3_5MTP returns a
   single tensor, so the proposer takes
   `last_hidden_states = ret_hidden_states; hidden_states = ret_hidden_states`
   and writes `self.hidden_states[:batch_size] = hidden_states` for the next
   step — the hidden state AFTER mtp.norm, at the next position.
6. The zero-centred RMSNorm is GemmaRMSNorm (qwen3_5.py:
   `GemmaRMSNorm as Qwen3_5RMSNorm`, i.e. `x·rsqrt(mean(x²)+eps)·(1+w)`),
   for the three MTP norms as for the trunk's.
"""

import copy

import torch
from transformers.cache_utils import DynamicCache
from transformers.models.qwen3_5.modeling_qwen3_5 import (
    Qwen3_5DecoderLayer,
    Qwen3_5TextRotaryEmbedding,
)


def rms_norm_zero_centred(x, w, eps):
    """x·rsqrt(mean(x²) + eps)·(1 + w), in float32."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * (1.0 + w)


class MtpReference:
    """The MTP module of one checkpoint.

    text_cfg: the model's Qwen3_5TextConfig; tensors: every checkpoint tensor
    by name (the mtp.* ones are read); embed [V, D] and lm_head [V, D] are
    the trunk's (lm_head is embed when the embeddings are tied)."""

    def __init__(self, text_cfg, tensors, embed, lm_head):
        self.eps = text_cfg.rms_norm_eps
        self.embed = embed.detach().float().clone()                 # [V, D]
        self.lm_head = lm_head.detach().float().clone()             # [V, D]
        self.fc = tensors["mtp.fc.weight"].float()                  # [D, 2·D]
        self.norm_embed = tensors["mtp.pre_fc_norm_embedding.weight"].float()  # [D]
        self.norm_hidden = tensors["mtp.pre_fc_norm_hidden.weight"].float()    # [D]
        self.norm_out = tensors["mtp.norm.weight"].float()          # [D]
        lcfg = copy.deepcopy(text_cfg)
        lcfg.layer_types = ["full_attention"]
        lcfg.num_hidden_layers = 1
        lcfg._attn_implementation = "eager"
        self.layer = Qwen3_5DecoderLayer(lcfg, 0).float().eval()
        prefix = "mtp.layers.0."
        state = {k[len(prefix):]: v.float() for k, v in tensors.items() if k.startswith(prefix)}
        self.layer.load_state_dict(state, strict=True)  # raises on a missing or extra tensor
        self.rotary = Qwen3_5TextRotaryEmbedding(lcfg)

    @torch.no_grad()
    def run(self, tokens, trunk_hidden, chain_from=None):
        """MTP logits for every position but the last.

        tokens: T token ids; trunk_hidden [T, D]: the trunk's final-normed
        hidden states. Row t combines hidden_t with embed(token_{t+1}) at
        position t; the MTP's KV cache holds positions 0..t. With chain_from
        = P, rows t > P read the MTP's own previous output hidden state
        (after mtp.norm) in place of the trunk's — the chained draft.
        Returns (logits [T-1, V], hidden_out [T-1, D])."""
        T = len(tokens)
        cache = DynamicCache()
        logits, outs = [], []
        prev = None
        for t in range(T - 1):
            h = trunk_hidden[t] if (chain_from is None or t <= chain_from) else prev  # [D]
            e = self.embed[tokens[t + 1]]                                             # [D]
            x = torch.cat([rms_norm_zero_centred(e, self.norm_embed, self.eps),
                           rms_norm_zero_centred(h, self.norm_hidden, self.eps)])     # [2·D]
            x = (self.fc @ x).view(1, 1, -1)                                          # [1, 1, D]
            pos = torch.tensor([[t]], dtype=torch.long)
            cos_sin = self.rotary(x, pos)
            # One query against every cached position: no mask needed.
            y = self.layer(x, position_embeddings=cos_sin, attention_mask=None, position_ids=pos,
                           cache=cache)
            out = rms_norm_zero_centred(y.view(-1), self.norm_out, self.eps)          # [D]
            outs.append(out)
            logits.append(self.lm_head @ out)                                         # [V]
            prev = out
        if not logits:
            V, D = self.lm_head.shape
            return torch.zeros(0, V), torch.zeros(0, D)
        return torch.stack(logits), torch.stack(outs)
