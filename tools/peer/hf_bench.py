"""hf_bench.py — Hugging Face transformers' speed on one checkpoint, for
`make bench-peers` (bench_peers.py runs it in its own process, once per
dtype and thread count, and measures its resident memory from outside).

    python hf_bench.py MODEL --threads T --dtype bf16|f32
                       [--prompt-tokens 64] [--tokens 128] [--runs 3]

Loads MODEL with AutoModelForCausalLM (our checkpoints load as
Qwen3_5ForCausalLM; the MTP weights are not part of that model), then per run
feeds the prompt ids 1, 2, ..., P (the same prompt specula's reference gets)
in one forward pass with a fresh cache — the prefill — takes the argmax of the
last logits as the first token, and decodes greedily one token per forward
pass until N tokens have been produced. Rates, as for the reference:
prefill = P / (time of the prompt pass and its argmax); decode = (N - 1) /
(time of the N - 1 single-token passes). One untimed warm-up run comes first.
Prints one JSON object: the medians and every run's numbers.
"""

import argparse
import inspect
import json
import statistics
import time

import torch
from transformers import AutoModelForCausalLM


def cache_name(model):
    """The keyword (and output field) of the cache: `cache` in recent 5.x
    releases, `past_key_values` before (and deprecated since)."""
    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def one_run(model, prompt, n_tokens):
    """Prefill and greedy decode; returns (prefill_s, decode_s, tokens)."""
    name = cache_name(model)
    ids = torch.tensor([prompt], dtype=torch.long)
    t0 = time.perf_counter()
    out = model(input_ids=ids, use_cache=True)
    token = int(out.logits[0, -1].argmax())
    t1 = time.perf_counter()
    cache, tokens = getattr(out, name), [token]
    while len(tokens) < n_tokens:
        out = model(input_ids=torch.tensor([[token]], dtype=torch.long), use_cache=True, **{name: cache})
        cache = getattr(out, name)
        token = int(out.logits[0, -1].argmax())
        tokens.append(token)
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1, tokens


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--dtype", choices=["bf16", "f32"], default="bf16")
    ap.add_argument("--prompt-tokens", type=int, default=64)
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float32
    t_load = time.perf_counter()
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=dtype)
    model.eval()
    t_load = time.perf_counter() - t_load
    vocab = model.config.vocab_size
    prompt = [(i + 1) % vocab for i in range(args.prompt_tokens)]  # as `specula bench --prompt-tokens`

    prefill, decode, first_tokens = [], [], None
    with torch.inference_mode():
        one_run(model, prompt, min(args.tokens, 8))  # warm-up, untimed
        for _ in range(args.runs):
            p_s, d_s, tokens = one_run(model, prompt, args.tokens)
            prefill.append(args.prompt_tokens / p_s)
            decode.append((len(tokens) - 1) / d_s if len(tokens) > 1 else float("nan"))
            first_tokens = first_tokens or tokens[:16]

    print(json.dumps({
        "implementation": "transformers", "model": args.model, "class": type(model).__name__,
        "dtype": args.dtype, "threads": args.threads, "torch_threads": torch.get_num_threads(),
        "torch": torch.__version__, "transformers": __import__("transformers").__version__,
        "prompt_tokens": args.prompt_tokens, "tokens": args.tokens, "runs": args.runs, "load_s": t_load,
        "prefill_tokens_per_s": statistics.median(prefill), "decode_tokens_per_s": statistics.median(decode),
        "runs_prefill_tokens_per_s": prefill, "runs_decode_tokens_per_s": decode,
        "first_tokens": first_tokens,
    }))


if __name__ == "__main__":
    main()
