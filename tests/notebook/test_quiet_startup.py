"""A notebook that loaded the extension shows no TensorFlow start-up lines in its plain cells.

(Tests of ``QuietStartup`` in ``npu_jupyter/_notebook/quiet.py``. TensorFlow logs its start-up lines
once per process, so each case is a real IPython shell in a fresh process; what it writes to file
descriptor 2 is what a Jupyter kernel would have shown in pink.)
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("tensorflow")

ROOT = Path(__file__).resolve().parents[2]
# absl's format ("E0000 00:00:1795.. 17264 cuda_platform.cc:52] failed call to cuInit ...") and its preamble
NATIVE_LINE = re.compile(
    r"^([IWEF]\d{4} \d\d:\d\d:\S+\s+\d+ \S+:\d+\] |WARNING: All log messages before absl)", re.MULTILINE
)
CELLS = [
    "import tensorflow as tf",
    "g = tf.Graph()\nwith g.as_default():\n    y = tf.constant(2.0) * 3\nwith tf.compat.v1.Session(graph=g) as s:\n    print('value', s.run(y))",
]


def _notebook(*cells: str, env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    script = textwrap.dedent(
        """
        from IPython.core.interactiveshell import InteractiveShell
        ip = InteractiveShell.instance()
        for cell in CELLS:
            ip.run_cell(cell, store_history=True)
        """
    ).replace("CELLS", repr(list(cells)))
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"  # the setting: not enough to hide the CUDA probe and absl
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    env.update(env_extra or {})
    return subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=ROOT, timeout=600
    )


@pytest.mark.slow
def test_plain_tensorflow_cells_after_load_ext_show_no_native_start_up_lines():
    bare = _notebook(*CELLS)
    if not NATIVE_LINE.search(bare.stderr):
        pytest.skip("this TensorFlow build logs nothing at start-up on this machine")
    quiet = _notebook("%load_ext npu_jupyter", *CELLS)
    assert "value 6.0" in quiet.stdout, quiet.stdout + quiet.stderr
    assert not NATIVE_LINE.search(quiet.stderr), quiet.stderr
    verbose = _notebook("%load_ext npu_jupyter", "%config NpuMagics.verbose = True", *CELLS)
    assert NATIVE_LINE.search(verbose.stderr)  # the opt-out lets them through, as --verbose does per cell


@pytest.mark.slow
def test_loading_the_extension_in_the_cell_that_imports_tensorflow_quiets_that_cell_too():
    one_cell = _notebook("%load_ext npu_jupyter\n" + CELLS[0], CELLS[1])
    assert "value 6.0" in one_cell.stdout, one_cell.stdout + one_cell.stderr
    assert not NATIVE_LINE.search(one_cell.stderr), one_cell.stderr


def test_nothing_is_registered_when_tensorflow_started_before_the_extension(ip):
    pytest.importorskip("tensorflow")  # imported in this process: its start-up lines are long gone
    from npu_jupyter._notebook.magics import NpuMagics

    [magics] = [c for c in ip.configurables if isinstance(c, NpuMagics)]
    magics.startup.register()
    assert not magics.startup.registered


def test_the_hooks_quiet_a_cell_and_stop_once_tensorflow_is_imported(ip, capfd):
    from npu_jupyter._notebook.quiet import QuietStartup

    startup = QuietStartup(ip, lambda: False)
    startup.before()
    os.write(2, b"native start-up line\n")
    startup.after()  # TensorFlow is imported in this process: the hook stops itself
    assert "native start-up line" not in capfd.readouterr().err
    assert not startup.registered
