"""convert_gguf.py — one of this project's checkpoints to GGUF with the
converter vendored in llama-cpp-python's source distribution.

    python convert_gguf.py --llama-cpp DIR --model DIR --outtype bf16 --out FILE
                           [--tokenizer FILE] [--stage DIR]

The converter needs a tokenizer.json beside the weights; a random checkpoint
of tools/genmodel has none, so --tokenizer names one (the embedded model's):
its ids fit inside the checkpoint's vocabulary and the converter pads the
rest with unused [PADn] entries. The model directory itself is never
written: a staging directory (--stage) holds links to config.json, the
safetensors files and the tokenizer.

The converter identifies the BPE pre-tokenizer by hashing the tokens of a
test string and refuses a tokenizer it has not seen ("BPE pre-tokenizer was
not recognized") — every freshly trained tokenizer, the embedded one
included. A pre-tokenizer is its split regex: when the tokenizer's regex is
byte for byte the one llama.cpp's `qwen2` pre-tokenizer was written from
(quoted in src/llama-vocab.cpp), naming it `qwen2` is exact, and only then
does this script do so. Anything else stays an error. The weights are not
touched.

Needs torch, numpy, transformers 5.x (for AutoTokenizer and qwen3_5) and the
vendored gguf-py (installed into the same environment by bench_peers.sh).
"""

import argparse
import json
import os
import re
import sys


def tokenizer_regex(path):
    """The split regex of a tokenizer.json whose pre-tokenizer is one Split
    (Isolated, not inverted) followed by a ByteLevel without its own regex;
    None for any other pre-tokenizer."""
    with open(path, encoding="utf-8") as f:
        pre = json.load(f).get("pre_tokenizer") or {}
    steps = pre.get("pretokenizers", []) if pre.get("type") == "Sequence" else [pre]
    if len(steps) != 2:
        return None
    split, byte_level = steps
    if split.get("type") != "Split" or split.get("behavior") != "Isolated" or split.get("invert"):
        return None
    if byte_level.get("type") != "ByteLevel" or byte_level.get("use_regex"):
        return None
    return (split.get("pattern") or {}).get("Regex")


def llama_cpp_regex(llama_cpp, pre_type="LLAMA_VOCAB_PRE_TYPE_QWEN2"):
    """The original tokenizer.json regex that llama.cpp quotes, as a comment,
    in the case of src/llama-vocab.cpp that handles pre_type."""
    with open(os.path.join(llama_cpp, "src", "llama-vocab.cpp"), encoding="utf-8") as f:
        text = f.read()
    at = text.find("case %s:" % pre_type)
    if at < 0:
        return None
    # the first "// original regex from tokenizer.json" after the case, then the quoted line
    m = re.compile(r'// original regex from tokenizer\.json\s*\n\s*// (".*")\s*\n').search(text, at)
    if not m:
        return None
    # the comment is a C string literal: JSON decodes its \\ and \" the same way
    return json.loads(m.group(1))


def stage(model, tokenizer, stage_dir):
    """A directory of links: the model's config and safetensors, and a tokenizer."""
    os.makedirs(stage_dir, exist_ok=True)
    for name in os.listdir(stage_dir):
        os.unlink(os.path.join(stage_dir, name))
    for name in sorted(os.listdir(model)):
        if name == "config.json" or name.endswith(".safetensors") or name == "model.safetensors.index.json" \
                or (name.startswith("tokenizer") and not tokenizer):
            os.symlink(os.path.abspath(os.path.join(model, name)), os.path.join(stage_dir, name))
    if tokenizer:
        os.symlink(os.path.abspath(tokenizer), os.path.join(stage_dir, "tokenizer.json"))
    return os.path.join(stage_dir, "tokenizer.json")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--llama-cpp", required=True, help="the vendored llama.cpp source tree")
    ap.add_argument("--model", required=True, help="checkpoint directory (config.json + safetensors)")
    ap.add_argument("--tokenizer", help="tokenizer.json to use (default: the model's own)")
    ap.add_argument("--outtype", default="bf16", choices=["bf16", "f32", "f16"])
    ap.add_argument("--out", required=True, help="the GGUF file to write")
    ap.add_argument("--stage", help="staging directory (default: OUT.stage)")
    args = ap.parse_args()

    tok_json = stage(args.model, args.tokenizer, args.stage or args.out + ".stage")
    if not os.path.exists(tok_json):
        sys.exit("convert_gguf: no tokenizer.json in %s and no --tokenizer given" % args.model)

    # Is the tokenizer's split regex exactly the one llama.cpp's qwen2 pre-tokenizer implements?
    ours, theirs = tokenizer_regex(tok_json), llama_cpp_regex(args.llama_cpp)
    if theirs is None:
        sys.exit("convert_gguf: could not find the qwen2 regex in %s/src/llama-vocab.cpp" % args.llama_cpp)
    regex_matches = ours is not None and ours.encode("utf-8") == theirs.encode("utf-8")
    print("convert_gguf: tokenizer split regex %s llama.cpp's qwen2 regex byte for byte"
          % ("equals" if regex_matches else "differs from"), flush=True)

    # The converter is a script: import it from its own directory (it puts its gguf-py on the path).
    sys.path.insert(0, args.llama_cpp)
    import convert_hf_to_gguf  # noqa: E402
    from conversion.base import TextModel  # noqa: E402

    recognise = TextModel.get_vocab_base_pre

    def get_vocab_base_pre(self, tokenizer):
        try:
            return recognise(self, tokenizer)
        except NotImplementedError:
            if not regex_matches:
                raise
            print("convert_gguf: pre-tokenizer hash unknown to the converter; its regex is qwen2's: "
                  "tokenizer.ggml.pre = qwen2", flush=True)
            return "qwen2"

    TextModel.get_vocab_base_pre = get_vocab_base_pre
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    sys.argv = ["convert_hf_to_gguf.py", os.path.dirname(tok_json), "--outtype", args.outtype,
                "--outfile", args.out]
    # A checkpoint without an MTP module (a draft model): the converter's
    # qwen35 class asserts one unless told there is none.
    with open(os.path.join(args.model, "config.json")) as f:
        cfg = json.load(f)
    if cfg.get("text_config", cfg).get("mtp_num_hidden_layers", 0) == 0:
        print("convert_gguf: the checkpoint has no MTP module: --no-mtp", flush=True)
        sys.argv.append("--no-mtp")
    convert_hf_to_gguf.main()


if __name__ == "__main__":
    main()
