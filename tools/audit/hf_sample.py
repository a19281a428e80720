"""hf_sample.py — `specula audit`'s adapter for Hugging Face transformers:
draws n continuations in one process and prints their token ids, one
sample a line (the sample-file format of docs/audit.md).

Arm "off" is plain sampling (`generate(do_sample=True)`); arms "on" and
"control" are assisted generation with --assistant as `assistant_model`
(speculative sampling when do_sample is set), or plain sampling too when no
--assistant is given. transformers 5.24 refuses assisted generation for
qwen3_5 (a "stateful" model: its DeltaNet state cannot be rewound), so on
this project's checkpoints the audit of transformers is of its plain
sampling against the target's law, and its speculative path is audited on
two small Qwen3 models it accepts (hf_pair.py; docs/audit.md). Sample i
seeds torch with SEED + i. EOS does not stop a sample: the generation
config's eos_token_id is cleared, so an EOS token is drawn like any other
and decoding goes on (what `specula audit` asks of every engine). The
weights are widened to float32, as specula's reference does.

Usage (as `specula audit --engine-cmd` runs it, with the model flags first):
  python hf_sample.py --model DIR [--assistant DIR] [--threads N] \
      --arm on|off|control --n N --length L --temperature T --top-k K \
      --top-p P --min-p P --seed S --prompt-ids 1,2,3
Assumes torch and transformers 5.x (tools/peer/requirements.txt).
"""

import argparse
import sys

import torch
import transformers
from transformers import AutoModelForCausalLM

from adapter_contract import add_contract_args


def load(path):
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    model.eval()
    gc = model.generation_config
    gc.eos_token_id = None  # never stop at EOS: every sample has L tokens
    gc.pad_token_id = 0  # only to silence the warning; batch of one, nothing is padded
    return model


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--assistant", help="draft model of arms on and control (default: none, plain sampling)")
    ap.add_argument("--threads", type=int, default=1)
    add_contract_args(ap)
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    prompt = torch.tensor([[int(t) for t in args.prompt_ids.split(",")]])
    target = load(args.model)
    assistant = load(args.assistant) if args.arm != "off" and args.assistant else None
    print(f"hf_sample: transformers {transformers.__version__}, torch {torch.__version__}, arm {args.arm}, "
          f"{'assisted by ' + args.assistant if assistant else 'plain sampling'}", file=sys.stderr)
    # Every cut passed explicitly: transformers' own defaults (top_k 50)
    # would otherwise change the law.
    sampling = dict(do_sample=True, temperature=args.temperature, top_k=args.top_k, top_p=args.top_p,
                    min_p=args.min_p if args.min_p > 0 else None, max_new_tokens=args.length,
                    min_new_tokens=0, repetition_penalty=1.0)
    n_prompt = prompt.shape[1]
    passes = [0]  # the target's forward passes: with an assistant, fewer than the tokens when drafts are accepted
    target.register_forward_hook(lambda *_: passes.__setitem__(0, passes[0] + 1))
    with torch.no_grad():
        for i in range(args.n):
            torch.manual_seed(args.seed + i)
            out = target.generate(prompt, attention_mask=torch.ones_like(prompt), assistant_model=assistant,
                                  **sampling)
            tokens = out[0, n_prompt:].tolist()
            if len(tokens) != args.length:
                sys.exit(f"hf_sample: sample {i} has {len(tokens)} tokens, asked for {args.length}")
            print(" ".join(map(str, tokens)), flush=(i % 100 == 99))
            if (i + 1) % 200 == 0:
                print(f"hf_sample: arm {args.arm} {i + 1}/{args.n}", file=sys.stderr)
    # Each sample's first pass reads the prompt and gives its first token: plain sampling is one token per pass.
    print(f"hf_sample: arm {args.arm}: {passes[0]} target passes for {args.n * args.length} tokens "
          f"({args.n * args.length / max(1, passes[0]):.2f} tokens per pass; plain sampling: 1)", file=sys.stderr)


if __name__ == "__main__":
    main()
