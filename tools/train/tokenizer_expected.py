#!/usr/bin/env python3
"""tokenizer_expected.py — writes the ids that the `tokenizers` package
produces, for tests/unit/test_tokenizer.c to compare the C tokenizer with.
Assumes the `tokenizers` package and ../shared/data (corpus, Qwen3 tokenizer).

    python3 tools/train/tokenizer_expected.py          (from the repository root)

Writes into tests/data/tokenizer/:
  excerpt.txt             the first lines of the corpus (about 4 KB), for the
                          test that runs where ../shared is absent
  embedded.excerpt.ids    models/tiny-shakespeare/tokenizer.json on excerpt.txt
  embedded.corpus.ids     ... on the whole corpus
  embedded.stress.ids     ... on stress.txt
  qwen3.corpus.ids        the real Qwen3 tokenizer.json on the whole corpus
  qwen3.stress.ids        ... on stress.txt
  stress.nfc.txt          what encoding then decoding stress.txt gives back
                          (its NFC form)
  SOURCES                 sha256 of every input and the package version

An .ids file is a list of records, each an unsigned LEB128 varint count
followed by that many LEB128 varint ids (7 bits a byte, low bits first, high
bit set on every byte but the last). A whole-text file holds one record; the
stress files hold the whole of stress.txt first, then one record per line of
stress.txt (split at "\\n", which is not part of the line).
"""
import argparse
import hashlib
import os
import sys

import tokenizers
from tokenizers import Tokenizer, normalizers

OUT = "tests/data/tokenizer"
EXCERPT_BYTES = 4096


def varint(x):
    out = bytearray()
    while True:
        b = x & 0x7F
        x >>= 7
        if x:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def write_ids(path, records):
    with open(path, "wb") as f:
        for ids in records:
            f.write(varint(len(ids)))
            f.write(b"".join(varint(i) for i in ids))
    return os.path.getsize(path)


def encode_checked(tok, text, name):
    """Encodes text and checks that decoding gives back its NFC form."""
    ids = tok.encode(text).ids
    back = tok.decode(ids, skip_special_tokens=False)
    want = normalizers.NFC().normalize_str(text)
    if back != want:
        sys.exit(f"{name}: decode(encode(text)) is not the NFC form of the text")
    return ids


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", default="../shared/data/tinyshakespeare.txt")
    ap.add_argument("--qwen", default="../shared/data/qwen3-tokenizer/tokenizer.json")
    ap.add_argument("--embedded", default="models/tiny-shakespeare/tokenizer.json")
    args = ap.parse_args()

    with open(args.corpus, encoding="utf-8", newline="") as f:
        corpus = f.read()
    stress_path = os.path.join(OUT, "stress.txt")
    with open(stress_path, encoding="utf-8", newline="") as f:
        stress = f.read()
    excerpt = corpus[: corpus.rindex("\n", 0, EXCERPT_BYTES) + 1]  # ASCII corpus: chars are bytes
    with open(os.path.join(OUT, "excerpt.txt"), "w", encoding="utf-8", newline="") as f:
        f.write(excerpt)

    embedded = Tokenizer.from_file(args.embedded)
    qwen = Tokenizer.from_file(args.qwen)
    lines = stress.split("\n")

    def stress_records(tok, name):
        return [encode_checked(tok, stress, name)] + [
            encode_checked(tok, line, f"{name} line {i + 1}") for i, line in enumerate(lines)
        ]

    sizes = {
        "embedded.excerpt.ids": write_ids(os.path.join(OUT, "embedded.excerpt.ids"),
                                          [encode_checked(embedded, excerpt, "embedded excerpt")]),
        "embedded.corpus.ids": write_ids(os.path.join(OUT, "embedded.corpus.ids"),
                                         [encode_checked(embedded, corpus, "embedded corpus")]),
        "embedded.stress.ids": write_ids(os.path.join(OUT, "embedded.stress.ids"),
                                         stress_records(embedded, "embedded stress")),
        "qwen3.corpus.ids": write_ids(os.path.join(OUT, "qwen3.corpus.ids"),
                                      [encode_checked(qwen, corpus, "qwen3 corpus")]),
        "qwen3.stress.ids": write_ids(os.path.join(OUT, "qwen3.stress.ids"), stress_records(qwen, "qwen3 stress")),
    }
    with open(os.path.join(OUT, "stress.nfc.txt"), "w", encoding="utf-8", newline="") as f:
        f.write(normalizers.NFC().normalize_str(stress))

    with open(os.path.join(OUT, "SOURCES"), "w", encoding="utf-8") as f:
        f.write(f"command python3 tools/train/tokenizer_expected.py\n")
        f.write(f"tokenizers {tokenizers.__version__}\n")
        for label, path in (("corpus", args.corpus), ("qwen3", args.qwen), ("embedded", args.embedded),
                            ("stress", stress_path)):
            f.write(f"{label} {os.path.basename(path)} sha256 {sha256(path)}\n")
    for name, size in sizes.items():
        print(f"{name}: {size} bytes")


if __name__ == "__main__":
    main()
