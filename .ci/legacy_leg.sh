#!/usr/bin/env bash
# The old-versions CI leg: the kernel side on Python 3.9 + tensorflow-cpu 2.6.5 (the Ascend adapter's
# TF 2 version) with the OLDEST dependency versions pyproject.toml claims.
#   1. Debian bullseye's python3.9 (.ci/bullseye_python.sh), a venv made with virtualenv;
#   2. the package installed from a wheel built by the main venv, checking TensorFlow stays 2.6.5;
#   3. the kernel-side tests (options, plan, runtime, magics) and a smoke notebook (nbval).
# Idempotent and quick on a second run: the venv (outside the clone, so CI's fresh clones reuse it)
# is rebuilt only when the pinned requirements below change; only our wheel is reinstalled.
# Usage: .ci/legacy_leg.sh [extra pytest args]     (run by ./dev.sh test)
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
start=$(date +%s)

# Oldest versions we claim (pyproject.toml lower bounds) next to the adapter's TensorFlow.
PINS=(
    "tensorflow-cpu==2.6.5"
    "traitlets==5.0.5"
    "ipython==7.16.3"
    "ipywidgets==8.0.0"
    "pytest==7.4.4"
    "nbval==0.10.0"
    "hypothesis==6.100.0"
    "pytest-timeout==2.3.1"
    # TF 2.6.5 holds typing-extensions at 3.10; jsonschema >= 4.18 (via nbformat) needs a newer one.
    "jsonschema<4.18"
)
MAIN_PY=${MAIN_PYTHON:-$repo/.venv/bin/python}
LEGACY_VENV=${NPU_JUPYTER_LEGACY_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/npu_jupyter/legacy-py39-tf2.6.5}
py="$LEGACY_VENV/bin/python"

echo "== legacy leg: Python 3.9 + ${PINS[0]}"
bash "$repo/.ci/bullseye_python.sh"

want="$(printf '%s\n' "${PINS[@]}")"
if [ ! -x "$py" ] || [ "$(cat "$LEGACY_VENV/.pins" 2>/dev/null)" != "$want" ]; then
    "$MAIN_PY" -m pip install --quiet "virtualenv>=20.26,<21"
    rm -rf "$LEGACY_VENV"
    "$MAIN_PY" -m virtualenv --quiet -p /usr/bin/python3.9 "$LEGACY_VENV"
    "$py" -m pip install --quiet "${PINS[@]}"
    printf '%s\n' "$want" > "$LEGACY_VENV/.pins"
fi

# The wheel the user would install, built by the main venv (the package itself needs no Python 3.9
# build tools). Installed with its dependency resolution on, so pip would say if a claimed lower
# bound did not accept the pinned old versions, and must leave TensorFlow alone.
dist="$repo/dist-legacy"
rm -rf "$dist"
"$MAIN_PY" -m pip wheel --quiet --no-deps -w "$dist" "$repo"
wheel=$(ls "$dist"/npu_jupyter-*.whl)
"$py" -m pip uninstall --quiet -y npu_jupyter 2>/dev/null || true
"$py" -m pip install --quiet "$wheel"
# From a scratch directory, so `import npu_jupyter` finds the installed wheel, not this checkout.
(cd "$LEGACY_VENV" && "$py" - "${PINS[@]}") <<'PY'
import sys
from importlib.metadata import version
wrong = []
for pin in sys.argv[1:]:
    if "==" not in pin:
        continue
    name, want = pin.split("==")
    if version(name) != want:
        wrong.append("%s is %s, not %s" % (name, version(name), want))
if wrong:
    sys.exit("legacy leg: installing npu_jupyter changed pinned packages: " + "; ".join(wrong))
import npu_jupyter, tensorflow as tf
if "site-packages" not in npu_jupyter.__file__:
    sys.exit("legacy leg: imported npu_jupyter from %s, not the installed wheel" % npu_jupyter.__file__)
print("legacy leg: npu_jupyter %s from %s beside TensorFlow %s (unchanged)" % (
    version("npu_jupyter"), npu_jupyter.__file__, tf.__version__))
PY

# The rounding kernel, built by the installed wheel against TensorFlow 2.6.5 (its headers want C++14)
# into this venv; tests/runtime/test_round_kernel.py then checks it gives the Casts' numbers here too.
(cd "$LEGACY_VENV" && TF_CPP_MIN_LOG_LEVEL=2 "$py" -m npu_jupyter build-kernel)

# The kernel-side suite from this checkout, against the INSTALLED wheel (not the source tree):
# pytest runs from a scratch directory with importlib import mode, so `npu_jupyter` resolves to
# site-packages. Tests that need TF >= 2.16 (Keras 3 builders) skip themselves with that reason;
# --timeout stops a hung test (a blocking TF op) instead of the whole CI run.
export TF_CPP_MIN_LOG_LEVEL=2
status=0
(cd "$LEGACY_VENV" && "$py" -m pytest -p no:cacheprovider --import-mode=importlib \
    -c "$repo/pyproject.toml" --rootdir "$repo" \
    "$repo/tests/options" "$repo/tests/plan" "$repo/tests/runtime" "$repo/tests/notebook" \
    "$repo/tests/test_scope.py" "$repo/tests/test_tensorflow_import.py" "$repo/tests/test_python_floor.py" \
    "$repo/tests/test_tensorflow_api_surface.py" "$repo/tests/adapter/test_tf1_surface.py" \
    "$repo/tests/adapter/test_zoo_scripts.py" "$repo/tests/adapter/test_tf2_surface.py" --timeout=900 "$@") || status=$?
(cd "$repo/tests/legacy" && "$py" -m pytest -p no:cacheprovider -c /dev/null --nbval-lax -q smoke_tf1.ipynb) || status=$?
echo "== legacy leg finished in $(( $(date +%s) - start )) s (status $status)"
exit $status
