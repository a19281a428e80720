"""peer_check.py — compares the C reference's logits with Hugging Face
transformers (trunk) and with mtp_reference.py (the MTP module, vLLM's
equations) on tiny random qwen3_5 checkpoints, position by position.

Assumes torch, transformers and safetensors import, and that SPECULA is the
built binary with `specula logits MODEL --tokens … --out F [--mtp-out G]
[--mtp-chain-from P]` (float32 little-endian [T, V] and [T-1, V]).
Runs on the CPU in float32; prints one table and exits 1 on any mismatch.
"""

import argparse
import os
import subprocess
import sys
import time

import numpy as np
import torch
import transformers

transformers.utils.logging.set_verbosity_error()  # no notes on optional fast kernels
transformers.utils.logging.disable_progress_bar()

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_models  # noqa: E402
import peer_trained  # noqa: E402
from mtp_reference import MtpReference  # noqa: E402

# Per position, ‖logits_C − logits_ref‖₂ / ‖logits_ref‖₂ must not exceed
# this. Both sides compute in float32 but in a different order (the C
# reference goes one position at a time through the DeltaNet recurrence
# with plain loops; transformers uses the chunked DeltaNet form, BLAS
# matrix products and a batched softmax), so every dot product of a few
# hundred terms differs by accumulation-order rounding of order
# sqrt(n)·2⁻²⁴ ≈ 1e-6 relative, and a few layers of such differences stay
# well under 1e-4. A convention bug (a norm weight used as w instead of
# 1 + w, a wrong rotary slice, a swapped concatenation) moves the logits by
# 1e-2 or more on these randomised weights, far above the bound; the
# negative controls below show it.
REL_TOL = 1e-4


def sequences(vocab, seed):
    """The fixed token sequences of one configuration: the vocabulary's
    edges, a repeating pattern (attention on equal tokens) and 40 random
    tokens (long enough for several DeltaNet positions and chained MTP
    steps)."""
    gen = torch.Generator().manual_seed(seed)
    rand = torch.randint(0, vocab, (40,), generator=gen).tolist()
    return [
        ("edge3", [vocab - 1, 0, vocab - 1], None),
        ("rep17", [(5 + (i % 3)) % vocab for i in range(17)], 0),
        ("rand40", rand, 9),
    ]


def rel_errors(c, ref):
    """Per-row ‖c − ref‖₂ / ‖ref‖₂ in float64. c, ref: [N, V]."""
    c = np.asarray(c, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    if c.shape != ref.shape:
        raise ValueError(f"shape {c.shape} from the C reference, expected {ref.shape}")
    if not np.all(np.isfinite(c)):
        return np.full(len(c), np.inf)
    return np.linalg.norm(c - ref, axis=1) / np.maximum(np.linalg.norm(ref, axis=1), 1e-30)


class SpeculaError(RuntimeError):
    pass


def run_specula(binary, model_dir, tokens, vocab, scratch, chain_from=None, with_mtp=True):
    """Runs `specula logits` and returns (logits [T, V], mtp logits [T-1, V]);
    with_mtp=False (a model without MTP module): (logits, None)."""
    out = os.path.join(scratch, "logits.f32")
    mtp = os.path.join(scratch, "mtp.f32")
    for f in (out, mtp):
        if os.path.exists(f):
            os.remove(f)
    cmd = [binary, "logits", model_dir, "--tokens", ",".join(map(str, tokens)), "--out", out]
    if with_mtp:
        cmd += ["--mtp-out", mtp]
    if chain_from is not None:
        cmd += ["--mtp-chain-from", str(chain_from)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        msg = (r.stderr or r.stdout).strip().splitlines()
        raise SpeculaError(f"exit {r.returncode}: {msg[-1] if msg else '(no message)'}")
    T = len(tokens)
    arrays = []
    for f, rows in ((out, T), (mtp, T - 1))[:2 if with_mtp else 1]:
        if not os.path.exists(f):
            raise SpeculaError(f"{os.path.basename(f)} was not written")
        a = np.fromfile(f, dtype="<f4")
        if a.size != rows * vocab:
            raise SpeculaError(f"{os.path.basename(f)} holds {a.size} floats, expected {rows}×{vocab}")
        arrays.append(a.reshape(rows, vocab))
    return arrays[0], (arrays[1] if with_mtp else None)


def specula_has_logits(binary):
    if not os.access(binary, os.X_OK):
        return f"{binary} is not built"
    r = subprocess.run([binary, "logits", "--help"], capture_output=True, text=True)
    if r.returncode != 0:
        said = (r.stderr or r.stdout).strip().splitlines()
        return f"`{binary} logits --help` failed with exit {r.returncode}" + (f" ({said[0]})" if said else "")
    return None


@torch.no_grad()
def hf_reference(model, spec, tokens):
    """Trunk logits [T, V] and final-normed hidden states [T, D] from
    transformers (float32, CPU)."""
    ids = torch.tensor([tokens], dtype=torch.long)
    m = model
    logits = m(input_ids=ids).logits[0]
    hidden = m.model(input_ids=ids).last_hidden_state[0]
    # The hidden state the MTP reads must be the one the lm_head reads.
    again = hidden @ m.lm_head.weight.T
    if not torch.allclose(again, logits, rtol=0, atol=1e-5 * float(logits.abs().max())):
        raise RuntimeError(f"{spec['name']}: last_hidden_state is not the lm_head's input")
    return logits, hidden


class Table:
    def __init__(self):
        self.rows = []
        self.failed = False

    def add(self, config, layout, seq, output, positions, err, verdict, bad):
        self.rows.append((config, layout, seq, output, positions, err, verdict))
        self.failed |= bad

    def print(self):
        head = ("config", "layout", "sequence", "output", "positions", "max rel err", "verdict")
        cells = [head] + [tuple(str(c) for c in r) for r in self.rows]
        w = [max(len(r[i]) for r in cells) for i in range(len(head))]
        line = lambda r: "| " + " | ".join(c.ljust(w[i]) for i, c in enumerate(r)) + " |"  # noqa: E731
        print(line(head))
        print("|" + "|".join("-" * (x + 2) for x in w) + "|")
        for r in cells[1:]:
            print(line(r))


def describe(specs):
    """One line per configuration, in the dimension names of reference/base/config.h."""
    print("configurations (layers: N = Gated DeltaNet, A = gated full attention; R = rotary dims of Dh):")
    for s in specs:
        pattern = "".join("N" if t == peer_models.LIN else "A" for t in s["layer_types"])
        R = int(s["head_dim"] * s["partial_rotary_factor"])
        files = f"sharded ({s['shard_kb']} KB)" if s["shard_kb"] else "one file"
        print(f"  {s['name']:7} {s['layout']:10} {files:15} V={s['vocab_size']} D={s['hidden_size']} "
              f"F={s['intermediate_size']} layers={pattern} H/Hkv/Dh={s['num_attention_heads']}/"
              f"{s['num_key_value_heads']}/{s['head_dim']} R={R} theta={s['rope_theta']:g} "
              f"Hk/Hv/Dk/Dv={s['linear_num_key_heads']}/{s['linear_num_value_heads']}/"
              f"{s['linear_key_head_dim']}/{s['linear_value_head_dim']} K={s['linear_conv_kernel_dim']} "
              f"tied={'yes' if s['tie_word_embeddings'] else 'no'} eps={s['rms_norm_eps']:g}")


def fmt(x):
    return "inf" if not np.isfinite(x) else f"{x:.2e}"


def compare(table, spec, seq, output, c_rows, ref_rows, expect_fail=False):
    errs = rel_errors(c_rows, ref_rows)
    worst = float(errs.max()) if len(errs) else 0.0
    ok = bool(np.all(errs <= REL_TOL))
    if expect_fail:
        verdict = "rejected (expected)" if not ok else "NOT REJECTED: check is blind"
        bad = ok
    else:
        verdict = "ok" if ok else f"FAIL (first bad position {int(np.argmax(errs > REL_TOL))})"
        bad = not ok
    table.add(spec["name"], spec["layout"], seq, output, len(errs), fmt(worst), verdict, bad)


def check_config(spec, work, binary, table, controls):
    model_dir = os.path.join(work, spec["name"])
    peer_models.build_checkpoint(spec, model_dir)
    model = peer_models.load_hf(spec, model_dir)
    tcfg = model.config if spec["layout"] == "text" else model.config.text_config
    tensors = peer_models.load_checkpoint_tensors(model_dir)
    embed = model.get_input_embeddings().weight.detach()
    mtp = MtpReference(tcfg, tensors, embed, model.lm_head.weight.detach())
    V = tcfg.vocab_size
    scratch = os.path.join(work, "scratch")
    os.makedirs(scratch, exist_ok=True)
    refs = {}
    for name, tokens, chain in sequences(V, spec["seed"]):
        logits, hidden = hf_reference(model, spec, tokens)
        mtp_ref, _ = mtp.run(tokens, hidden)
        refs[name] = (tokens, logits, mtp_ref)
        try:
            c_logits, c_mtp = run_specula(binary, model_dir, tokens, V, scratch)
        except SpeculaError as e:
            table.add(spec["name"], spec["layout"], name, "specula logits", len(tokens), "-", f"FAIL: {e}", True)
            continue
        compare(table, spec, name, "logits", c_logits, logits)
        compare(table, spec, name, "mtp", c_mtp, mtp_ref)
        if chain is not None:
            chain_ref, _ = mtp.run(tokens, hidden, chain_from=chain)
            # Rows past the chain point must differ from the unchained draft,
            # or a reference that ignored --mtp-chain-from would pass.
            if float(rel_errors(chain_ref[chain + 1:], mtp_ref[chain + 1:]).min()) < 100 * REL_TOL:
                raise RuntimeError(f"{spec['name']}/{name}: chained and unchained MTP drafts coincide")
            try:
                _, c_chain = run_specula(binary, model_dir, tokens, V, scratch, chain_from=chain)
            except SpeculaError as e:
                table.add(spec["name"], spec["layout"], name, f"mtp chain>{chain}", len(tokens) - 1, "-",
                          f"FAIL: {e}", True)
                continue
            compare(table, spec, name, f"mtp chain>{chain}", c_chain, chain_ref)
    if spec["name"] in controls:
        negative_controls(spec, model_dir, binary, table, refs, tcfg, scratch)


def negative_controls(spec, model_dir, binary, table, refs, tcfg, scratch, seq="rand40", planted_dir=None):
    """Planted bugs the check must reject at the same tolerance: the C
    reference runs on an edited copy of the checkpoint, the references keep
    the original. (1) A DeltaNet output-norm weight shifted by +1 is what a
    reference computes that applies the zero-centred (1 + w) convention to
    that plain-w norm. (2) mtp.fc with its two input halves swapped is what a
    reference computes that concatenates [hidden, embedding] instead of
    [embedding, hidden]: the trunk must still pass, the MTP must not."""
    lin = next(i for i, t in enumerate(tcfg.layer_types) if t == peer_models.LIN)
    prefix = "model." if spec["layout"] == "text" else "model.language_model."
    norm_name = f"{prefix}layers.{lin}.linear_attn.norm.weight"
    D = tcfg.hidden_size

    def shift_norm(t):
        t[norm_name] = t[norm_name] + 1.0
        return [norm_name]

    def swap_fc(t):
        w = t["mtp.fc.weight"]
        t["mtp.fc.weight"] = torch.cat([w[:, D:], w[:, :D]], dim=1)
        return ["mtp.fc.weight"]

    tokens, logits, mtp_ref = refs[seq]
    for label, edit, outputs in ((f"planted: layers.{lin} norm w+1", shift_norm, {"logits": True}),
                                 ("planted: mtp concat swapped", swap_fc, {"logits": False, "mtp": True})):
        planted = peer_models.plant(model_dir, planted_dir or model_dir + "-planted", edit)
        try:
            c_logits, c_mtp = run_specula(binary, planted, tokens, tcfg.vocab_size, scratch)
        except SpeculaError as e:
            table.add(spec["name"], spec["layout"], seq, label, len(tokens), "-", f"FAIL: {e}", True)
            continue
        for out, must_fail in outputs.items():
            c, ref = (c_logits, logits) if out == "logits" else (c_mtp, mtp_ref)
            compare(table, spec, seq, f"{out} [{label}]", c, ref, expect_fail=must_fail)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--specula", required=True, help="path of the built specula binary")
    ap.add_argument("--work", required=True, help="folder for the generated checkpoints")
    ap.add_argument("--only", action="append", help="run only this configuration (repeatable)")
    ap.add_argument("--trained", action="append", default=[], metavar="DIR",
                    help="also check this trained checkpoint, e.g. models/tiny-shakespeare (repeatable)")
    ap.add_argument("--no-random", action="store_true", help="skip the random configurations")
    args = ap.parse_args()

    torch.set_grad_enabled(False)
    problem = specula_has_logits(args.specula)
    if problem:
        print(f"peer: {problem}; the check needs `specula logits`.", file=sys.stderr)
        return 1
    os.makedirs(args.work, exist_ok=True)
    specs = [s for s in peer_models.CONFIGS if not args.only or s["name"] in args.only]
    if args.no_random:
        specs = []
    if not specs and not args.trained:
        print(f"peer: no configuration named {args.only}", file=sys.stderr)
        return 2
    t0 = time.time()
    table = Table()
    controls = {s["name"] for s in specs[:2]}
    for spec in specs:
        check_config(spec, args.work, args.specula, table, controls)
    trained = [(d, peer_trained.check_trained(d, args.work, args.specula, table, sys.modules[__name__]))
               for d in args.trained]
    print(f"peer check: C reference vs Hugging Face transformers (trunk) and the vLLM-equation MTP "
          f"reference, float32 on the CPU; bound: max over positions of ‖Δ‖₂/‖ref‖₂ ≤ {REL_TOL:g}")
    describe(specs)
    for d, tcfg in trained:
        peer_trained.describe(d, tcfg)
    table.print()
    bad = sum(1 for r in table.rows if r[-1].startswith(("FAIL", "NOT")))
    print(f"{len(table.rows)} rows, {bad} failed ({time.time() - t0:.0f} s)")
    return 1 if table.failed else 0


if __name__ == "__main__":
    sys.exit(main())
