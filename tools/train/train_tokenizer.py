#!/usr/bin/env python3
"""train_tokenizer.py — trains the embedded byte-level BPE tokenizer of the
tiny-shakespeare models and writes models/tiny-shakespeare/tokenizer.json plus
its lines of models/tiny-shakespeare/MANIFEST. Assumes the `tokenizers`
package and ../shared/data/{tinyshakespeare.txt,qwen3-tokenizer/tokenizer.json}.

    python3 tools/train/train_tokenizer.py            (from the repository root)

The pipeline is Qwen's, taken from Qwen's own tokenizer.json: NFC normaliser,
Split(Qwen's regex, Isolated) then ByteLevel(add_prefix_space=false,
use_regex=false), ByteLevel decoder; only the BPE vocabulary and merges are
learnt here. BPE training has no randomness (merge ties are broken by pair
id), and the script trains twice and checks that both files are identical.

Vocabulary: 512 = 256 byte symbols + 253 merges + 3 special tokens.
Measured on the corpus: 512 gives 2.01 bytes/token, 1024 gives 2.56. The
smaller vocabulary is chosen because (1) the embedding and the untied LM head
are V x D each, so at D = 256 they cost 131k parameters apiece instead of 262k
in models meant to stay a few MB; (2) a token that carries less text is easier
to predict, which is what the draft model, Medusa heads and MTP module are
judged on; the 27 % longer sequences cost little at these context lengths.
"""
import argparse
import hashlib
import json
import os
import sys

from tokenizers import AddedToken, Tokenizer, pre_tokenizers, trainers

VOCAB_SIZE = 512
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]  # <|endoftext|> is the models' EOS
CORPUS_SHA256 = "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def qwen_pipeline(qwen_path):
    """Qwen's normaliser, pre-tokenizer, post-processor and decoder, checked to
    be exactly the kinds the C tokenizer supports."""
    with open(qwen_path, encoding="utf-8") as f:
        qwen = json.load(f)
    pre = qwen["pre_tokenizer"]
    ok = (
        qwen["normalizer"] == {"type": "NFC"}
        and pre["type"] == "Sequence"
        and [p["type"] for p in pre["pretokenizers"]] == ["Split", "ByteLevel"]
        and pre["pretokenizers"][0]["behavior"] == "Isolated"
        and "Regex" in pre["pretokenizers"][0]["pattern"]
        and not pre["pretokenizers"][1]["add_prefix_space"]
        and not pre["pretokenizers"][1]["use_regex"]
        and qwen["decoder"]["type"] == "ByteLevel"
    )
    if not ok:
        sys.exit(f"{qwen_path}: not the NFC + Split(Isolated) + ByteLevel pipeline this script copies")
    return {k: qwen[k] for k in ("normalizer", "pre_tokenizer", "post_processor", "decoder")}


def train(corpus, pipeline):
    skeleton = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [],
        **pipeline,
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": "",
            "end_of_word_suffix": "",
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": False,
            "vocab": {},
            "merges": [],
        },
    }
    tok = Tokenizer.from_str(json.dumps(skeleton))
    # All 256 byte symbols are in the vocabulary even where the corpus lacks
    # them, so any UTF-8 prompt can be encoded.
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE - len(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train([corpus], trainer)
    # Added after training, as in Qwen's file: the special tokens take the
    # last ids (509, 510, 511), after the byte symbols and the merges.
    tok.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in SPECIAL_TOKENS])
    if tok.get_vocab_size() != VOCAB_SIZE:
        sys.exit(f"trained vocabulary has {tok.get_vocab_size()} entries, expected {VOCAB_SIZE}")
    return tok.to_str(pretty=True) + "\n"


def update_manifest(path, lines):
    """Replaces the tokenizer.* lines of MANIFEST, keeping everyone else's."""
    kept = []
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            kept = [l for l in f.read().splitlines() if l and not l.startswith("tokenizer.")]
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines + kept) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", default="../shared/data/tinyshakespeare.txt")
    ap.add_argument("--qwen", default="../shared/data/qwen3-tokenizer/tokenizer.json")
    ap.add_argument("--out", default="models/tiny-shakespeare")
    args = ap.parse_args()

    corpus_sha = sha256_file(args.corpus)
    if corpus_sha != CORPUS_SHA256:
        sys.exit(f"{args.corpus}: sha256 {corpus_sha}, expected {CORPUS_SHA256} (see ../shared/data/README.md)")
    pipeline = qwen_pipeline(args.qwen)
    first, second = train(args.corpus, pipeline), train(args.corpus, pipeline)
    if first != second:
        sys.exit("two training runs gave different tokenizer.json files: training is not deterministic")

    os.makedirs(args.out, exist_ok=True)
    out = os.path.join(args.out, "tokenizer.json")
    with open(out, "w", encoding="utf-8") as f:
        f.write(first)
    n_merges = len(json.loads(first)["model"]["merges"])
    update_manifest(
        os.path.join(args.out, "MANIFEST"),
        [
            f"tokenizer.file tokenizer.json sha256 {sha256_file(out)}",
            f"tokenizer.corpus tinyshakespeare.txt sha256 {corpus_sha}",
            "tokenizer.command python3 tools/train/train_tokenizer.py",
            f"tokenizer.vocab_size {VOCAB_SIZE} (256 bytes + {n_merges} merges + {len(SPECIAL_TOKENS)} special)",
            f"tokenizer.special {' '.join(SPECIAL_TOKENS)} (eos <|endoftext|>)",
        ],
    )
    print(f"wrote {out}: {VOCAB_SIZE} tokens, {n_merges} merges")


if __name__ == "__main__":
    main()
