#!/usr/bin/env bash
# Static Python-floor check of everything that runs in a kernel (Ascend servers run Python 3.7 with
# TF 1.15): vermin fails on any 3.8+ syntax or standard-library name (walrus, positional-only
# parameters, typing.Literal, importlib.resources.files, math.prod, ...). Vermin lives in its own
# small venv (.vermin-venv, not committed); a second run reuses it.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$repo/.vermin-venv"
VERMIN_VERSION=1.9.2

if ! "$venv/bin/vermin" --version 2>/dev/null | grep -qx "$VERMIN_VERSION"; then
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet "vermin==$VERMIN_VERSION"
fi
# --violations lists only what breaks the 3.7 target and makes vermin exit non-zero on any of it.
# Annotation contents are not checked by vermin; tests/test_python_floor.py makes sure every module
# with annotations has `from __future__ import annotations`, so they are never evaluated.
"$venv/bin/vermin" --target=3.7- --no-tips --violations \
    "$repo/npu_jupyter" "$repo/labextension/npu_jupyter_lab" >/tmp/npu_jupyter_vermin.txt 2>&1 || {
    cat /tmp/npu_jupyter_vermin.txt
    echo "python_floor: code above needs a newer Python than 3.7 (the Ascend adapter's floor)" >&2
    exit 1
}
echo "python_floor: vermin $VERMIN_VERSION finds nothing newer than Python 3.7 in the kernel-side package"
