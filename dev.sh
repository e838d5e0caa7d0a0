#!/usr/bin/env bash
# One entry point for a fresh machine:
#   ./dev.sh lab    set up, then start JupyterLab on the quick-start notebook (emulator backend)
#   ./dev.sh test   set up, then run the whole test suite (ruff format --check, ruff check and strict mypy
#                   first, failing on any finding; extension unit tests, the Python 3.7 floor
#                   check, the legacy legs (Python 3.9 + TF 2.6.5, Python 3.7 + TF 1.15 smoke), Python unit tests, notebooks via
#                   nbval, the browser test); extra arguments go to pytest. LEGACY_LEG=0 skips the leg.
#   ./dev.sh setup  only set up
# Setup is idempotent: a virtualenv in .venv with the kernel package (npu_jupyter, with TensorFlow
# through its `emulator` extra) and the renderer package (npu-jupyter-lab, labextension/) installed
# editable (with the `ray` extra, so the zoo's Ray test runs), plus Debian's Chromium for the browser tests when we are root.
set -euo pipefail
cd "$(dirname "$0")"

PYTHON=${PYTHON:-python3}
VENV=.venv

setup() {
    if [ ! -x "$VENV/bin/python" ]; then
        "$PYTHON" -m venv "$VENV"
    fi
    "$VENV/bin/python" -m pip install --quiet --upgrade pip
    "$VENV/bin/python" -m pip install --quiet -e ./labextension -e ".[emulator,test,lab,legacy-keras,ray]"
    if [ -f .ci/ui_setup.sh ]; then
        bash .ci/ui_setup.sh
    fi
}

cmd=${1:-help}
case "$cmd" in
    setup)
        setup
        ;;
    lab)
        setup
        shift
        root_flag=()
        # Jupyter refuses to start as root without this (containers, cloud notebooks often run as root).
        if [ "$(id -u)" = "0" ]; then root_flag=(--allow-root); fi
        exec "$VENV/bin/jupyter" lab "${root_flag[@]}" notebooks/01_quickstart.ipynb "$@"
        ;;
    test)
        setup
        shift
        export TF_CPP_MIN_LOG_LEVEL=${TF_CPP_MIN_LOG_LEVEL:-2}
        # Static checks first (configured in pyproject.toml); any finding fails the run.
        lint_paths=(npu_jupyter tests tools bench labextension/npu_jupyter_lab)
        "$VENV/bin/ruff" format --check "${lint_paths[@]}"
        "$VENV/bin/ruff" check "${lint_paths[@]}"
        "$VENV/bin/mypy"
        # The labextension's own unit tests (vitest), then the Python suite.
        # `npm install` (not `npm ci`): npm 11 asks the lock for every platform's optional binaries, which the
        # lock written by an older npm does not list; install still takes the locked versions.
        [ -d labextension/node_modules ] || (cd labextension && npm install --no-audit --no-fund)
        (cd labextension && npm test --silent)
        bash .ci/python_floor.sh
        legacy=0
        if [ "${LEGACY_LEG:-1}" != "0" ]; then
            MAIN_PYTHON="$VENV/bin/python" bash .ci/legacy_leg.sh -q || legacy=$?
            MAIN_PYTHON="$VENV/bin/python" bash .ci/tf115_leg.sh || legacy=$?
        fi
        # The main suite last, so its summary line closes the output.
        main=0
        "$VENV/bin/python" -m pytest --nbval --nbval-sanitize-with notebooks/sanitize.cfg tests notebooks \
            --ignore=tests/legacy "$@" || main=$?
        if [ "$legacy" != "0" ]; then echo "dev.sh test: the legacy leg (.ci/legacy_leg.sh) failed" >&2; fi
        exit $(( main != 0 ? main : legacy ))
        ;;
    *)
        sed -n '2,9p' "$0"
        exit 2
        ;;
esac
