#!/usr/bin/env bash
# TF 1.15 smoke leg: the kernel side on Python 3.7 + tensorflow-cpu 1.15.0 (the Ascend adapter's TF 1
# version) with the oldest claimed IPython/traitlets/ipywidgets. Python 3.7 comes from pyenv when the
# machine has one (this machine image does); without it the leg says so and is skipped, not failed.
# Runs tests/legacy/tf1_smoke.py against the installed wheel. The venv (~/.cache) is reused.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
start=$(date +%s)
PINS=("tensorflow-cpu==1.15.0" "protobuf<3.21" "numpy<1.19" "traitlets==5.0.5" "ipython==7.16.3" "ipywidgets==8.0.0")
MAIN_PY=${MAIN_PYTHON:-$repo/.venv/bin/python}
VENV=${NPU_JUPYTER_TF115_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/npu_jupyter/py37-tf1.15}

py37=""
root=$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")
for cand in "$root"/versions/3.7.*/bin/python3.7; do
    if [ -x "$cand" ]; then py37=$cand; fi
done
if [ -z "$py37" ]; then
    echo "== tf1.15 leg SKIPPED: no Python 3.7 on this machine (pyenv versions 3.7.*)"
    exit 0
fi
echo "== tf1.15 leg: $("$py37" --version 2>&1) + ${PINS[0]}"
want="$(printf '%s\n' "${PINS[@]}")"
if [ ! -x "$VENV/bin/python" ] || [ "$(cat "$VENV/.pins" 2>/dev/null)" != "$want" ]; then
    rm -rf "$VENV"
    "$py37" -m venv "$VENV"
    "$VENV/bin/python" -m pip install --quiet "${PINS[@]}"
    printf '%s\n' "$want" > "$VENV/.pins"
fi
dist=$(mktemp -d)
trap 'rm -rf "$dist"' EXIT
"$MAIN_PY" -m pip wheel --quiet --no-deps -w "$dist" "$repo"
"$VENV/bin/python" -m pip install --quiet --force-reinstall --no-deps "$dist"/npu_jupyter-*.whl
(cd "$VENV" && TF_CPP_MIN_LOG_LEVEL=2 "$VENV/bin/python" -W ignore "$repo/tests/legacy/tf1_smoke.py" 2>&1 \
    | grep -E "^(tf |imports:|ConfigProto|plan |run:|report|cell|tf1 smoke|Traceback|  File|[A-Za-z]*Error)")
status=${PIPESTATUS[0]}
echo "== tf1.15 leg finished in $(( $(date +%s) - start )) s (status $status)"
exit "$status"
