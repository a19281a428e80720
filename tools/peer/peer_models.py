"""peer_models.py — the tiny random qwen3_5 checkpoints of the peer check.

Builds each configuration with Hugging Face transformers, draws EVERY
parameter (norm weights, A_log, dt_bias and conv1d included) from a seeded
generator so no default initialisation survives, saves it in float32 and
appends a random MTP module (mtp.*) the way the real checkpoint carries it.
Assumes torch, transformers (with qwen3_5) and safetensors are importable.
"""

import copy
import json
import math
import os
import shutil

import torch
from safetensors.torch import load_file, save_file
from transformers import (
    Qwen3_5Config,
    Qwen3_5ForCausalLM,
    Qwen3_5ForConditionalGeneration,
    Qwen3_5TextConfig,
)
from transformers.models.qwen3_5.modeling_qwen3_5 import Qwen3_5DecoderLayer

LIN, FULL = "linear_attention", "full_attention"

# The configurations differ in head dims, layer pattern, rotary fraction,
# tied embeddings, conv width, checkpoint layout and sharding. The "layout"
# field picks the class that saves the checkpoint: "text" is what
# Qwen3_5ForCausalLM writes (flat config, model_type qwen3_5_text, tensors
# under model.), "multimodal" is the full Qwen3_5ForConditionalGeneration
# layout of the real checkpoint (text_config, model.language_model.*, plus
# model.visual.* that the reference must ignore).
CONFIGS = [
    dict(name="text-a", layout="text", shard_kb=None, seed=11,
         vocab_size=96, hidden_size=48, intermediate_size=80,
         layer_types=[LIN, LIN, LIN, FULL],
         num_attention_heads=4, num_key_value_heads=2, head_dim=16,
         partial_rotary_factor=0.25, rope_theta=1e7,
         linear_num_key_heads=2, linear_num_value_heads=4,
         linear_key_head_dim=8, linear_value_head_dim=12, linear_conv_kernel_dim=4,
         tie_word_embeddings=False, rms_norm_eps=1e-6),
    dict(name="mm-b", layout="multimodal", shard_kb=24, seed=22,
         vocab_size=80, hidden_size=32, intermediate_size=64,
         layer_types=[FULL, LIN, LIN, FULL, LIN],
         num_attention_heads=2, num_key_value_heads=1, head_dim=32,
         partial_rotary_factor=0.5, rope_theta=1e4,
         linear_num_key_heads=1, linear_num_value_heads=3,
         linear_key_head_dim=16, linear_value_head_dim=8, linear_conv_kernel_dim=3,
         tie_word_embeddings=True, rms_norm_eps=1e-5),
    dict(name="text-c", layout="text", shard_kb=None, seed=33,
         vocab_size=64, hidden_size=40, intermediate_size=56,
         layer_types=[LIN, FULL, LIN],
         num_attention_heads=6, num_key_value_heads=3, head_dim=8,
         partial_rotary_factor=1.0, rope_theta=5e5,
         linear_num_key_heads=2, linear_num_value_heads=2,
         linear_key_head_dim=12, linear_value_head_dim=16, linear_conv_kernel_dim=2,
         tie_word_embeddings=True, rms_norm_eps=1e-6),
    dict(name="mm-d", layout="multimodal", shard_kb=None, seed=44,
         vocab_size=128, hidden_size=48, intermediate_size=96,
         layer_types=[LIN, LIN, LIN, FULL, LIN, LIN, LIN, FULL],
         num_attention_heads=3, num_key_value_heads=1, head_dim=24,
         partial_rotary_factor=0.25, rope_theta=1e7,
         linear_num_key_heads=2, linear_num_value_heads=6,
         linear_key_head_dim=8, linear_value_head_dim=8, linear_conv_kernel_dim=4,
         tie_word_embeddings=False, rms_norm_eps=1e-6),
    # An odd rotary dimension: int(20 · 0.25) = 5. transformers then draws ceil(5/2) = 3 frequencies
    # base^(−2i/5) and rotates 2·3 = 6 dimensions; the reference must do the same.
    dict(name="text-e", layout="text", shard_kb=None, seed=55,
         vocab_size=72, hidden_size=40, intermediate_size=64,
         layer_types=[LIN, FULL, LIN, FULL],
         num_attention_heads=2, num_key_value_heads=1, head_dim=20,
         partial_rotary_factor=0.25, rope_theta=1e4,
         linear_num_key_heads=1, linear_num_value_heads=2,
         linear_key_head_dim=8, linear_value_head_dim=8, linear_conv_kernel_dim=4,
         tie_word_embeddings=False, rms_norm_eps=1e-6),
]

TEXT_FIELDS = ("vocab_size", "hidden_size", "intermediate_size", "num_attention_heads",
               "num_key_value_heads", "head_dim", "linear_num_key_heads", "linear_num_value_heads",
               "linear_key_head_dim", "linear_value_head_dim", "linear_conv_kernel_dim",
               "tie_word_embeddings", "rms_norm_eps")


def text_config(spec):
    kw = {k: spec[k] for k in TEXT_FIELDS}
    return Qwen3_5TextConfig(
        num_hidden_layers=len(spec["layer_types"]), layer_types=list(spec["layer_types"]),
        rope_parameters={"rope_type": "default", "rope_theta": spec["rope_theta"],
                         "partial_rotary_factor": spec["partial_rotary_factor"]},
        mtp_num_hidden_layers=1, max_position_embeddings=4096, **kw)


def full_config(spec):
    """The Qwen3_5Config of the multimodal layout, with a vision tower small
    enough to cost nothing (its tensors only have to be present)."""
    vision = dict(depth=1, hidden_size=16, intermediate_size=32, num_heads=2, patch_size=2,
                  temporal_patch_size=2, spatial_merge_size=2, out_hidden_size=spec["hidden_size"],
                  num_position_embeddings=16)
    return Qwen3_5Config(text_config=text_config(spec).to_dict(), vision_config=vision,
                         tie_word_embeddings=spec["tie_word_embeddings"])


def _uniform(gen, shape, lo, hi):
    return torch.rand(shape, generator=gen, dtype=torch.float64) * (hi - lo) + lo


def random_value(name, shape, gen):
    """A random value for one parameter, drawn by role. The ranges keep the
    activations of the tiny models in a useful regime: zero-centred norms
    scale by 1 + w in [0.5, 1.5], the DeltaNet decay exp(g) stays between
    roughly 0.2 and 0.97 so the recurrent state carries information over
    several positions, and linear layers keep unit-scale activations."""
    if name.startswith("model.visual.") or ".visual." in name:
        return torch.randn(shape, generator=gen, dtype=torch.float64) * 0.1
    if name.endswith("linear_attn.norm.weight"):  # plain weight (used as w, not 1 + w)
        return _uniform(gen, shape, 0.5, 1.5)
    if name.endswith(".weight") and "norm" in name.split(".")[-2]:  # zero-centred: used as 1 + w
        return _uniform(gen, shape, -0.5, 0.5)
    if name.endswith("A_log"):
        return torch.log(_uniform(gen, shape, 0.1, 2.0))
    if name.endswith("dt_bias"):
        return _uniform(gen, shape, -1.0, 1.0)
    if name.endswith("conv1d.weight"):
        return torch.randn(shape, generator=gen, dtype=torch.float64) * 0.5
    if name.endswith("embed_tokens.weight"):
        return torch.randn(shape, generator=gen, dtype=torch.float64)
    if name.endswith(".weight") and len(shape) == 2:
        return torch.randn(shape, generator=gen, dtype=torch.float64) / math.sqrt(shape[1])
    raise ValueError(f"no randomisation rule for parameter {name} {tuple(shape)}")


def randomise(module, gen, prefix=""):
    """Overwrites every parameter of module; fails if one keeps its value
    (a default initialisation that survived would hide convention bugs)."""
    with torch.no_grad():
        for name, p in module.named_parameters(prefix=prefix.rstrip(".")):
            before = p.detach().clone()
            p.copy_(random_value(name, tuple(p.shape), gen).to(p.dtype))
            if torch.equal(before, p):
                raise RuntimeError(f"parameter {name} kept its initial value")


def mtp_tensors(tcfg, gen):
    """The MTP module's tensors, named as in the real checkpoint: fc, the two
    pre-fc norms, one full-attention decoder layer (mtp.layers.0.*), norm."""
    D = tcfg.hidden_size
    lcfg = copy.deepcopy(tcfg)
    lcfg.layer_types = [FULL]
    lcfg.num_hidden_layers = 1
    layer = Qwen3_5DecoderLayer(lcfg, 0)
    randomise(layer, gen, prefix="mtp.layers.0.")
    out = {f"mtp.layers.0.{k}": v.detach().clone().float().contiguous() for k, v in layer.state_dict().items()}
    for name, shape in (("mtp.fc.weight", (D, 2 * D)), ("mtp.pre_fc_norm_embedding.weight", (D,)),
                        ("mtp.pre_fc_norm_hidden.weight", (D,)), ("mtp.norm.weight", (D,))):
        out[name] = random_value(name, shape, gen).float().contiguous()
    return out


def _add_tensors(model_dir, extra):
    """Appends tensors to a saved checkpoint: into model.safetensors when it
    is a single file, or as one more shard listed in the index."""
    index_path = os.path.join(model_dir, "model.safetensors.index.json")
    if os.path.exists(index_path):
        with open(index_path) as f:
            index = json.load(f)
        shard = "model-mtp.safetensors"
        save_file(extra, os.path.join(model_dir, shard), metadata={"format": "pt"})
        for k in extra:
            index["weight_map"][k] = shard
        with open(index_path, "w") as f:
            json.dump(index, f, indent=2, sort_keys=True)
    else:
        path = os.path.join(model_dir, "model.safetensors")
        tensors = load_file(path)
        tensors.update(extra)
        save_file(tensors, path, metadata={"format": "pt"})


def build_checkpoint(spec, model_dir):
    """Writes the random checkpoint of spec to model_dir (replacing it)."""
    gen = torch.Generator().manual_seed(spec["seed"])
    torch.manual_seed(spec["seed"])  # module constructors draw from the global generator
    if spec["layout"] == "text":
        model = Qwen3_5ForCausalLM(text_config(spec))
        tcfg = model.config
    else:
        model = Qwen3_5ForConditionalGeneration(full_config(spec))
        tcfg = model.config.text_config
    model = model.float().eval()
    randomise(model, gen)
    if spec["tie_word_embeddings"]:
        assert model.lm_head.weight.data_ptr() == model.get_input_embeddings().weight.data_ptr()
    if os.path.exists(model_dir):
        shutil.rmtree(model_dir)
    kw = {"max_shard_size": f"{spec['shard_kb']}KB"} if spec["shard_kb"] else {}
    model.save_pretrained(model_dir, **kw)
    _add_tensors(model_dir, mtp_tensors(tcfg, gen))
    return model_dir


def load_checkpoint_tensors(model_dir):
    """Every tensor of a saved checkpoint (single file or shards), by name."""
    index_path = os.path.join(model_dir, "model.safetensors.index.json")
    if os.path.exists(index_path):
        with open(index_path) as f:
            files = sorted(set(json.load(f)["weight_map"].values()))
    else:
        files = ["model.safetensors"]
    out = {}
    for fn in files:
        out.update(load_file(os.path.join(model_dir, fn)))
    return out


def load_hf(spec, model_dir):
    """The saved checkpoint loaded back through transformers (float32, CPU,
    eager attention), so the peer forward runs on exactly the files the C
    reference reads."""
    cls = Qwen3_5ForCausalLM if spec["layout"] == "text" else Qwen3_5ForConditionalGeneration
    model = cls.from_pretrained(model_dir, dtype=torch.float32, attn_implementation="eager")
    return model.eval()


def plant(model_dir, out_dir, edit):
    """A copy of model_dir with edit(tensors) applied to its tensors: the
    negative controls run the C reference on such a copy and the check must
    reject the result."""
    if os.path.exists(out_dir):
        shutil.rmtree(out_dir)
    shutil.copytree(model_dir, out_dir)
    index_path = os.path.join(out_dir, "model.safetensors.index.json")
    if os.path.exists(index_path):
        with open(index_path) as f:
            wmap = json.load(f)["weight_map"]
    else:
        wmap = None
    tensors = load_checkpoint_tensors(out_dir)
    changed = edit(tensors)
    files = {}
    for name in changed:
        fn = wmap[name] if wmap else "model.safetensors"
        files.setdefault(fn, None)
    for fn in files:
        path = os.path.join(out_dir, fn)
        part = load_file(path)
        for name in changed:
            if name in part:
                part[name] = tensors[name].contiguous()
        save_file(part, path, metadata={"format": "pt"})
    return out_dir
