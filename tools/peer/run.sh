#!/usr/bin/env bash
# run.sh BUILD PYTHON — the body of `make peer`: makes sure PYTHON can import
# torch, transformers and safetensors (installing them from PyPI with pip
# only when an import fails), then runs the peer check against BUILD/specula
# (BUILD relative to the repository root) on random configurations and on
# the trained models in models/.
# Works offline where the packages are already installed (pip is not called).
set -u
build=${1:-build}
python=${2:-python3}
here=$(cd "$(dirname "$0")" && pwd)

missing=$("$python" - <<'PY'
import importlib
gone = []
for name in ("torch", "transformers", "safetensors"):
    try:
        importlib.import_module(name)
    except Exception:
        gone.append(name)
try:
    from transformers import Qwen3_5ForCausalLM  # noqa: F401  (qwen3_5 needs a recent transformers)
except Exception:
    if "transformers" not in gone:
        gone.append("transformers")
print(" ".join(gone))
PY
) || { echo "peer: cannot run $python" >&2; exit 1; }

if [ -n "$missing" ]; then
    echo "peer: $python cannot import: $missing"
    # --upgrade: an installed transformers too old for qwen3_5 counts as missing.
    echo "peer: installing from PyPI: $python -m pip install --upgrade $missing"
    "$python" -m pip install --upgrade $missing || {
        echo "peer: pip failed; install torch, transformers (with qwen3_5) and safetensors for $python, then rerun" >&2
        exit 1
    }
fi

# The trained embedded models are checked too, where they have been trained
# (tools/train/train_models.py writes them; absent, the check says so).
trained=()
for m in tiny-shakespeare tiny-shakespeare-draft; do
    dir="$here/../../models/$m"
    if [ -f "$dir/model.safetensors" ]; then
        trained+=(--trained "models/$m")
    else
        echo "peer: models/$m has no model.safetensors: trained-model rows skipped"
    fi
done

cd "$here/../.." && exec "$python" tools/peer/peer_check.py --specula "$build/specula" --work "$build/peer" "${trained[@]}"
