"""openai_sample.py — `specula audit`'s adapter for an OpenAI-compatible
completions endpoint (llama.cpp's llama-server, vLLM, SGLang): n samples
of one arm, one request each, printed as token ids one sample a line (the
sample-file format of docs/audit.md). Python's standard library only.

Each request is POST {URL}/v1/completions with the prompt as token ids,
max_tokens L, temperature, top_k / top_p / min_p, seed S + i, ignore_eos
(so every sample has L tokens: the server then gives the end-of-generation
tokens a logit of -inf; pass them to `specula audit --ban-tokens` so the
law is computed the same way), and every other sampler of the server
switched off (repeat, presence and frequency penalties, DRY, XTC, typical).
The token ids are read from the reply where the server puts them:
choices[0].token_ids (vLLM's return_token_ids), choices[0].logprobs.content[].id
(llama-server with logprobs), or the top-level "tokens" (llama-server's own
/completion). A reply with fewer than L tokens is an error.

Arms: --url-on serves the model with speculation on (also the control arm,
at the control's temperature), --url-off without it.

Usage (as `specula audit --engine-cmd` runs it, with the adapter's flags first):
  python3 openai_sample.py --url-on URL --url-off URL [--model NAME] \
      --arm on|off|control --n N --length L --temperature T --top-k K \
      --top-p P --min-p P --seed S --prompt-ids 1,2,3
"""

import argparse
import json
import sys
import urllib.request

from adapter_contract import add_contract_args


def token_ids(reply):
    choice = (reply.get("choices") or [{}])[0]
    if "token_ids" in choice and choice["token_ids"] is not None:
        return [int(t) for t in choice["token_ids"]]
    logprobs = choice.get("logprobs") or {}
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    if content and all("id" in c for c in content):
        return [int(c["id"]) for c in content]
    if "tokens" in reply:
        return [int(t) for t in reply["tokens"]]
    raise ValueError("the reply carries no token ids (token_ids, logprobs.content[].id or tokens)")


def complete(url, body, timeout):
    req = urllib.request.Request(url.rstrip("/") + "/v1/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url-on", required=True)
    ap.add_argument("--url-off", required=True)
    ap.add_argument("--model", default="audit")
    ap.add_argument("--timeout", type=float, default=120)
    add_contract_args(ap)
    args = ap.parse_args()

    url = args.url_off if args.arm == "off" else args.url_on
    prompt = [int(t) for t in args.prompt_ids.split(",")]
    body = {
        "model": args.model, "prompt": prompt, "max_tokens": args.length, "temperature": args.temperature,
        "top_k": args.top_k, "top_p": args.top_p, "min_p": args.min_p, "ignore_eos": True,
        "logprobs": 1, "return_token_ids": True,
        # samplers a server may apply by default, each set to its neutral value
        "repeat_penalty": 1.0, "presence_penalty": 0.0, "frequency_penalty": 0.0, "dry_multiplier": 0.0,
        "xtc_probability": 0.0, "typical_p": 1.0, "top_n_sigma": -1.0, "mirostat": 0,
        "cache_prompt": False,
    }
    for i in range(args.n):
        body["seed"] = args.seed + i
        try:
            ids = token_ids(complete(url, body, args.timeout))
        except Exception as e:  # one line, naming the sample and the server
            sys.exit(f"openai_sample: sample {i} from {url}: {e}")
        if len(ids) != args.length:
            sys.exit(f"openai_sample: sample {i} from {url} has {len(ids)} tokens, asked for {args.length}")
        print(" ".join(map(str, ids)), flush=(i % 100 == 99))
        if (i + 1) % 200 == 0:
            print(f"openai_sample: arm {args.arm} {i + 1}/{args.n}", file=sys.stderr)


if __name__ == "__main__":
    main()
