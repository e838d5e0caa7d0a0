#!/usr/bin/env bash
# One entry point for a fresh machine:
#   ./dev.sh lab    set up, then start JupyterLab in work/ (git-ignored: copies of the tutorials, your
#                   notebooks and their dump/profile folders) on the quick-start notebook (emulator backend)
#   ./dev.sh test   set up, install what only the tests need (Chromium and the browser driver), then run
#                   the whole test suite (ruff format --check, ruff check and strict mypy first, failing on
#                   any finding; extension unit tests, the Python 3.7 floor check, the legacy legs (Python
#                   3.9 + TF 2.6.5, Python 3.7 + TF 1.15 smoke) in the background, Python unit tests, the
#                   tutorials via nbval, the browser test, on up to 4 cores); extra arguments go to pytest.
#                   LEGACY_LEG=0 skips the legs; NPU_JUPYTER_TEST_WORKERS=N sets the workers (0: one process).
#   ./dev.sh setup  only set up
#   ./dev.sh tutorials  list the tutorial notebooks the test command checks with nbval
# Setup is idempotent and leaves tracked files as they are: a virtualenv in .venv with the kernel package
# (npu_jupyter, with TensorFlow through its `emulator` extra) and the renderer package (npu-jupyter-lab,
# labextension/) installed editable (with the `ray` extra, so the zoo's Ray test runs).
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
    # The emulator's one-node rounding op, compiled against this TensorFlow (kept while neither changes).
    # Without a compiler the emulator rounds with TensorFlow's Casts: same numbers, slower.
    TF_CPP_MIN_LOG_LEVEL=2 "$VENV/bin/python" -m npu_jupyter build-kernel ||
        echo "dev.sh: going on without the rounding kernel (see above)" >&2
}

# The tutorials nbval checks: the notebook built from each source in notebooks/src, and nothing else
# (a notebook of one's own in notebooks/ is not collected).
tutorials() {
    local src
    for src in notebooks/src/[0-9]*.py; do
        echo "notebooks/$(basename "${src%.py}").ipynb"
    done
}

# work/ (git-ignored) is where JupyterLab opens: a copy of each tutorial (made once, so your edits and
# outputs stay yours and the tracked tutorials stay clean; delete a copy to get it afresh), your new
# notebooks, and the dump/profile folders their cells write.
workspace() {
    mkdir -p work
    local nb
    for nb in $(tutorials); do
        [ -e "work/$(basename "$nb")" ] || cp "$nb" work/
    done
}

cmd=${1:-help}
case "$cmd" in
    setup)
        setup
        ;;
    lab)
        setup
        workspace
        shift
        root_flag=()
        # Jupyter refuses to start as root without this (containers, cloud notebooks often run as root).
        if [ "$(id -u)" = "0" ]; then root_flag=(--allow-root); fi
        cd work
        exec "../$VENV/bin/jupyter" lab "${root_flag[@]}" 01_quickstart.ipynb "$@"
        ;;
    tutorials)
        tutorials
        ;;
    test)
        setup
        # Test-only things: Debian's Chromium and the Node driver for the browser test (tests/ui).
        bash .ci/ui_setup.sh
        shift
        export TF_CPP_MIN_LOG_LEVEL=${TF_CPP_MIN_LOG_LEVEL:-2}
        logs=$(mktemp -d)
        legacy_pid=""
        # On an early exit (a lint finding) the legs still write into $logs: let them finish first.
        trap 'if [ -n "$legacy_pid" ]; then wait "$legacy_pid" 2>/dev/null || true; fi; rm -rf "$logs"' EXIT
        # The legacy legs (their own venvs, outside the clone) run in the background, beside the checks and
        # the main suite: on a fresh machine most of their time is building those venvs. Their output is
        # shown after the main suite.
        if [ "${LEGACY_LEG:-1}" != "0" ]; then
            (
                status=0
                MAIN_PYTHON="$VENV/bin/python" bash .ci/legacy_leg.sh -q >"$logs/legacy.log" 2>&1 || status=$?
                MAIN_PYTHON="$VENV/bin/python" bash .ci/tf115_leg.sh >>"$logs/legacy.log" 2>&1 || status=$?
                exit "$status"
            ) &
            legacy_pid=$!
        fi
        # Static checks first (configured in pyproject.toml); any finding fails the run.
        lint_paths=(npu_jupyter tests tools bench labextension/npu_jupyter_lab)
        "$VENV/bin/ruff" format --check "${lint_paths[@]}"
        "$VENV/bin/ruff" check "${lint_paths[@]}"
        "$VENV/bin/mypy"
        # The labextension's own unit tests (vitest), then the Python suite.
        # --no-save: the locked versions, and the tracked lock file is never rewritten by another npm.
        [ -d labextension/node_modules ] || (cd labextension && npm install --no-save --no-audit --no-fund)
        (cd labextension && npm test --silent)
        bash .ci/python_floor.sh
        # The main suite on up to 4 cores (pytest-xdist; the scheduler in tests/conftest.py keeps a notebook's
        # cells and the browser tests in one worker and starts the longest units first). NPU_JUPYTER_TEST_WORKERS=0 runs it in this process.
        cores=$(nproc 2>/dev/null || echo 2)
        workers=${NPU_JUPYTER_TEST_WORKERS:-$(( cores < 4 ? cores : 4 ))}
        xdist=()
        if [ "$workers" != "0" ]; then xdist=(-n "$workers"); fi
        main=0
        mapfile -t notebooks < <(tutorials)
        "$VENV/bin/python" -m pytest --nbval --nbval-sanitize-with notebooks/sanitize.cfg tests "${notebooks[@]}" \
            ${xdist[@]+"${xdist[@]}"} --ignore=tests/legacy "$@" 2>&1 | tee "$logs/main.log" || main=$?
        legacy=0
        if [ -n "$legacy_pid" ]; then
            wait "$legacy_pid" || legacy=$?
            cat "$logs/legacy.log"
            if [ "$legacy" != "0" ]; then echo "dev.sh test: the legacy leg (.ci/legacy_leg.sh, .ci/tf115_leg.sh) failed" >&2; fi
        fi
        # The main suite's summary closes the output.
        echo "== main suite: $(tail -n 1 "$logs/main.log")"
        exit $(( main != 0 ? main : legacy ))
        ;;
    *)
        sed -n '2,14p' "$0"
        exit 2
        ;;
esac
