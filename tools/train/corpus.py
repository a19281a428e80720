"""corpus.py — the tiny-shakespeare corpus as token ids for training: the
train/validation split, the held-out prompts and seeded batches. Assumes the
`tokenizers` package and the corpus file with the sha256 below.

The split is by text, not by tokens: the last VAL_FRACTION of the characters,
moved forward to the next blank line (a speech boundary), is held out, and
both parts are tokenised separately, so no token straddles the cut.
"""

import hashlib

import torch
from tokenizers import Tokenizer

CORPUS_SHA256 = "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"
VAL_FRACTION = 0.1


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def split_text(text):
    """(train text, validation text): the cut is the first blank line after
    the (1 − VAL_FRACTION) point."""
    cut = text.index("\n\n", int(len(text) * (1 - VAL_FRACTION))) + 2
    return text[:cut], text[cut:]


class Corpus:
    """train [N] and val [M] int64 token ids."""

    def __init__(self, corpus_path, tokenizer_path):
        sha = sha256_file(corpus_path)
        if sha != CORPUS_SHA256:
            raise SystemExit(f"{corpus_path}: sha256 {sha}, expected {CORPUS_SHA256}")
        self.sha256 = sha
        with open(corpus_path, encoding="utf-8") as f:
            text = f.read()
        self.tokenizer = Tokenizer.from_file(tokenizer_path)
        self.train_text, self.val_text = split_text(text)
        self.train = torch.tensor(self.tokenizer.encode(self.train_text).ids, dtype=torch.long)
        self.val = torch.tensor(self.tokenizer.encode(self.val_text).ids, dtype=torch.long)

    def batch(self, gen, B, T):
        """B random windows of T tokens from the training part. gen: a
        seeded torch.Generator, so the batch sequence is reproducible."""
        starts = torch.randint(0, len(self.train) - T, (B,), generator=gen)
        return torch.stack([self.train[s:s + T] for s in starts.tolist()])

    def val_windows(self, T, limit=None):
        """The validation part cut into consecutive non-overlapping windows
        of T tokens [n, T] (the tail shorter than T is dropped)."""
        n = len(self.val) // T
        if limit is not None:
            n = min(n, limit)
        return self.val[:n * T].view(n, T)

    def prompts(self, n, length):
        """n held-out prompts of `length` tokens, each starting at the first
        token of a speech (after a blank line), spread evenly over the
        validation text. Returns lists of ids."""
        text = self.val_text
        starts, at = [], 0
        while True:
            i = text.find("\n\n", at)
            if i < 0:
                break
            starts.append(i + 2)
            at = i + 2
        step = max(1, len(starts) // n)
        out = []
        for s in starts[::step][:n]:
            ids = self.tokenizer.encode(text[s:s + 8 * length]).ids[:length]
            if len(ids) == length:
                out.append(ids)
        return out
