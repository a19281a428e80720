#!/usr/bin/env bash
# run.sh BUILD PYTHON — the body of `make peer`: makes BUILD/peers/venv with
# PYTHON and the pinned packages of tools/peer/requirements.txt (pip from
# PyPI only for what the environment lacks), then runs the peer check against
# BUILD/specula (BUILD relative to the repository root) on random
# configurations and on the trained models in models/, and says how long it
# took. Works offline once the environment holds the pinned versions.
set -u
build=${1:-build}
python=${2:-python3}
here=$(cd "$(dirname "$0")" && pwd)

# The pinned packages (tools/peer/requirements.txt) in their own environment under BUILD, shared with
# `make bench-peers`: never the system Python's packages.
start=$(date +%s)
venv=$build/peers/venv
mkdir -p "$build/peers"
. "$here/venv.sh"
peer_venv "$python" "$venv" "$build/peers/pip-peer.log" || {
    echo "peer: cannot make $venv with the pinned packages of tools/peer/requirements.txt" >&2
    exit 1
}
echo "peer: environment ready in $(($(date +%s) - start)) s"

# The trained embedded models are checked too, where they have been trained
# (tools/train/train_models.py writes them; absent, the check says so).
trained=()
for m in tiny-shakespeare tiny-shakespeare-draft course; do
    dir="$here/../../models/$m"
    if [ -f "$dir/model.safetensors" ]; then
        trained+=(--trained "models/$m")
    else
        echo "peer: models/$m has no model.safetensors: trained-model rows skipped"
    fi
done

cd "$here/../.." || exit 1
"$venv/bin/python" tools/peer/peer_check.py --specula "$build/specula" --work "$build/peer" "${trained[@]}"
status=$?
echo "peer: $(($(date +%s) - start)) s in all"
exit $status
