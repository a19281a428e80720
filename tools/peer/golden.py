"""golden.py — logits from Hugging Face transformers, stored in the
repository so that `make test` checks the C forward against an independent
implementation without Python.

For each entry below: the C generator (build/genmodel) writes a random
float32 checkpoint; transformers loads those exact files and runs the
forward over a fixed token sequence; tools/peer/mtp_reference.py runs the
MTP module the way vLLM does. The logits go to tests/data/golden/NAME.bin
(float32 little-endian: trunk [T, V] then MTP [T-1, V]) and the inputs to
tests/data/golden/manifest.json. tests/unit/test_golden.c regenerates the
same checkpoint (the generator is deterministic) and compares.

    python3 tools/peer/golden.py [BUILD]
"""

import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
import transformers

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mtp_reference import MtpReference  # noqa: E402
from peer_models import load_checkpoint_tensors  # noqa: E402
from transformers import Qwen3_5ForCausalLM, Qwen3_5ForConditionalGeneration  # noqa: E402

# preset, seed, layout (full: model.language_model.*, text: model.*)
ENTRIES = [
    ("micro", 101, "full"),
    ("micro-tied", 102, "text"),
    ("micro-deep", 103, "full"),
    ("micro-draft", 104, "text"),
]
TOKENS = 24


def token_sequence(vocab, seed):
    rng = np.random.default_rng(seed)
    return [int(x) for x in rng.integers(0, vocab, TOKENS)]


@torch.no_grad()
def golden(build, preset, seed, layout, out_dir):
    with tempfile.TemporaryDirectory() as work:
        model_dir = os.path.join(work, "m")
        subprocess.run([os.path.join(build, "genmodel"), "--preset", preset, "--seed", str(seed), "--dtype",
                        "f32", "--layout", layout, "--quiet", model_dir], check=True)
        cls = Qwen3_5ForCausalLM if layout == "text" else Qwen3_5ForConditionalGeneration
        model = cls.from_pretrained(model_dir, dtype=torch.float32, attn_implementation="eager").eval()
        cfg = model.config.get_text_config() if layout == "full" else model.config
        tokens = token_sequence(cfg.vocab_size, seed)
        ids = torch.tensor([tokens], dtype=torch.long)
        logits = model(input_ids=ids).logits[0].float()                     # [T, V]
        trunk = model.model.language_model if layout == "full" else model.model
        hidden = trunk(input_ids=ids).last_hidden_state[0].float()           # [T, D]
        parts = [logits.numpy()]
        has_mtp = getattr(cfg, "mtp_num_hidden_layers", 0) > 0
        if has_mtp:
            tensors = load_checkpoint_tensors(model_dir)
            embed = trunk.embed_tokens.weight
            mtp = MtpReference(cfg, tensors, embed, model.lm_head.weight)
            mtp_logits, _ = mtp.run(tokens, hidden)
            parts.append(mtp_logits.numpy())
        name = f"{preset}-{seed}-{layout}"
        np.concatenate([p.reshape(-1) for p in parts]).astype("<f4").tofile(os.path.join(out_dir, name + ".bin"))
        return {"name": name, "preset": preset, "seed": seed, "layout": layout, "tokens": tokens,
                "vocab_size": cfg.vocab_size, "mtp": has_mtp}


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    out_dir = os.path.join("tests", "data", "golden")
    os.makedirs(out_dir, exist_ok=True)
    entries = [golden(build, *e, out_dir) for e in ENTRIES]
    manifest = {"produced_by": "python3 tools/peer/golden.py",
                "transformers": transformers.__version__, "torch": torch.__version__, "entries": entries}
    with open(os.path.join(out_dir, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    for e in entries:
        print(f"{e['name']}: {TOKENS} positions, vocab {e['vocab_size']}, mtp {e['mtp']}")


if __name__ == "__main__":
    main()
