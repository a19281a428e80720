"""gpu_transformers.py — the GPU peer of tools/gpu-session.sh: Hugging Face
transformers on the device with a randomly initialised qwen3_5 text model of
the shapes MODEL/config.json gives (models/qwen3.8-27b: the 27B), bf16,
batch 1, greedy. It runs on the GPU machine's own python3 and transformers
(nothing is installed there) and reads only the config.

    python3 gpu_transformers.py MODEL [--prompt-tokens 16] [--tokens 128]

Prefill = the prompt's forward pass and its argmax; decode = the (N - 1)
single-token passes after it, with the model's own cache, as hf_bench.py
times the CPU. One untimed warm-up of 4 tokens first. Prints one JSON object.
"""

import argparse
import json
import time

import torch
import transformers
from transformers import AutoConfig, AutoModelForCausalLM

from hf_bench import cache_name  # the cache's keyword differs across 5.x releases


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("--prompt-tokens", type=int, default=16)
    ap.add_argument("--tokens", type=int, default=128)
    args = ap.parse_args()

    config = AutoConfig.from_pretrained(args.model)
    text = getattr(config, "text_config", config)  # the text model alone: what specula's engine runs
    t0 = time.perf_counter()
    with torch.device("cuda"):
        model = AutoModelForCausalLM.from_config(text, dtype=torch.bfloat16)
    model.eval()
    torch.cuda.synchronize()
    build_s = time.perf_counter() - t0
    vocab = text.vocab_size
    prompt = torch.tensor([[(i + 1) % vocab for i in range(args.prompt_tokens)]], device="cuda")

    def run(n):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        out = model(input_ids=prompt, use_cache=True)
        token = out.logits[0, -1].argmax()
        torch.cuda.synchronize()
        t1 = time.perf_counter()
        name = cache_name(model)
        cache = getattr(out, name)
        for _ in range(n - 1):
            out = model(input_ids=token.view(1, 1), use_cache=True, **{name: cache})
            cache = getattr(out, name)
            token = out.logits[0, -1].argmax()
        torch.cuda.synchronize()
        return t1 - t0, time.perf_counter() - t1

    with torch.inference_mode():
        run(4)
        prefill_s, decode_s = run(args.tokens)
    print(json.dumps({
        "peer": "transformers", "version": transformers.__version__, "torch": torch.__version__,
        "device": torch.cuda.get_device_name(0), "model": args.model, "params": sum(p.numel() for p in model.parameters()),
        "build_s": build_s, "prompt_tokens": args.prompt_tokens, "tokens": args.tokens,
        "prefill_tokens_per_s": args.prompt_tokens / prefill_s,
        "decode_tokens_per_s": (args.tokens - 1) / decode_s,
    }))


if __name__ == "__main__":
    main()
