# venv.sh — sourced by run.sh and bench_peers.sh: peer_venv PYTHON VENV LOG makes VENV (python -m venv) when it
# is missing and installs tools/peer/requirements.txt into it when an installed version differs from the pinned
# one; prints what it does. Returns non-zero when the environment cannot be made. Offline, an environment that
# already holds the pinned versions is used as it is (pip is not called).
peer_venv() {
    local python=$1 venv=$2 log=$3 requirements
    requirements=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/requirements.txt
    if [ ! -x "$venv/bin/python" ]; then
        echo "peer: creating a virtual environment: $python -m venv $venv"
        "$python" -m venv "$venv" || { rm -rf "$venv"; return 1; }
    fi
    # The pins that the environment does not hold (name==version lines of requirements.txt).
    local stale
    stale=$("$venv/bin/python" - "$requirements" <<'PY'
import sys
from importlib import metadata
stale = []
for line in open(sys.argv[1]):
    line = line.split("#")[0].strip()
    if not line:
        continue
    name, version = line.split("==")
    try:
        have = metadata.version(name)
    except metadata.PackageNotFoundError:
        have = None
    # a local build tag (torch's "+cpu", "+cu132") is the same release
    if have is None or have.split("+")[0] != version:
        stale.append(line)
print(" ".join(stale))
PY
    ) || return 1
    if [ -n "$stale" ]; then
        echo "peer: installing from PyPI into $venv: pip install $stale (torch brings about 3 GB)"
        "$venv/bin/python" -m pip install --progress-bar off $stale >"$log" 2>&1 || {
            echo "peer: pip install failed; see $log" >&2
            return 1
        }
    fi
}
