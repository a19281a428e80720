"""hf_pair.py — a target and a draft model that transformers runs assisted
generation with, for auditing its speculative path: transformers refuses
assisted generation for this project's qwen3_5 checkpoints (their DeltaNet
state cannot be rewound; docs/audit.md), so the audit of its speculative
sampling is made on two small Qwen3 (attention-only) models with random
weights, which it accepts.

Both share a vocabulary of --vocab tokens (small, so that each position's
law has few cells and the tests have power at a modest n) and are drawn
from fixed seeds, so the same command makes the same pair. The weights are
drawn wider than transformers' default initialisation (--init-std) so the
next-token distributions are far from uniform, as a trained model's are;
the draft is the target's first layer with its own noise added, so the two
agree often but not always (an acceptance rate well inside (0, 1)).

Usage: python hf_pair.py --out DIR [--vocab 24] [--seed 1]
writes DIR/target and DIR/draft (config.json, model.safetensors,
generation_config.json). Needs torch and transformers 5.x.
"""

import argparse
import sys

import torch
from transformers import Qwen3Config, Qwen3ForCausalLM


def config(vocab, layers, std):
    return Qwen3Config(vocab_size=vocab, hidden_size=64, intermediate_size=128, num_hidden_layers=layers,
                       num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=256,
                       initializer_range=std, tie_word_embeddings=False, bos_token_id=None, eos_token_id=None,
                       pad_token_id=0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="folder for target/ and draft/")
    ap.add_argument("--vocab", type=int, default=24)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--init-std", type=float, default=0.35)
    ap.add_argument("--draft-noise", type=float, default=0.15,
                    help="standard deviation of the noise added to the draft's copy of the target's weights")
    args = ap.parse_args()

    torch.manual_seed(args.seed)
    target = Qwen3ForCausalLM(config(args.vocab, 2, args.init_std)).eval()
    draft = Qwen3ForCausalLM(config(args.vocab, 1, args.init_std)).eval()
    with torch.no_grad():
        own = dict(target.named_parameters())
        for name, p in draft.named_parameters():  # the draft: the target's first layer, embeddings and head, perturbed
            p.copy_(own[name] + args.draft_noise * torch.randn_like(p))
    for model, name in ((target, "target"), (draft, "draft")):
        model.generation_config.eos_token_id = None
        model.generation_config.pad_token_id = 0
        model.save_pretrained(f"{args.out}/{name}")
    print(f"hf_pair: wrote {args.out}/target (2 layers) and {args.out}/draft (1 layer), vocabulary {args.vocab}",
          file=sys.stderr)


if __name__ == "__main__":
    main()
