"""%%npu cells keep TensorFlow's C++ logs out of their output and profile only the asked-for steps.

The end-to-end check runs in a fresh interpreter without ``TF_CPP_MIN_LOG_LEVEL``, as a new kernel
would, because TensorFlow reads its log level once per process.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from npu_jupyter._notebook.quiet import quiet_tensorflow

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = r'''
import sys
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output
ip = InteractiveShell.instance()
ip.run_line_magic("load_ext", "npu_jupyter")
cell = """
import numpy as np
import tensorflow as tf
g = tf.Graph()
with g.as_default():
    x = tf.compat.v1.placeholder(tf.float32, [4, 8], name="x")
    w = tf.compat.v1.get_variable("w", [8, 3])
    loss = tf.reduce_sum(tf.nn.relu(tf.matmul(x, w, name="mm")), name="loss")
    train = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss)
    init = tf.compat.v1.global_variables_initializer()
with tf.compat.v1.Session(graph=g) as sess:
    sess.run(init)
    for _ in range(3):
        sess.run(train, {x: np.ones((4, 8), np.float32)})
"""
with capture_output() as cap:
    ip.run_cell_magic("npu", " ".join(sys.argv[1:]), cell)
print("OUTPUTS", len(cap.outputs))
'''

LOG_MARKERS = ("profiler_session.cc", "cuInit", "oneDNN", "cudart_stub", "cpu_feature_guard")


def _run_profiled_cell(tmp_path: Path, *flags: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run(
        [sys.executable, "-c", SCRIPT, "--profile", str(tmp_path / "prof"), *flags],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.slow
def test_a_profiled_cell_over_an_init_run_and_three_steps_shows_no_tf_log_lines_and_writes_three_traces(tmp_path):
    pytest.importorskip("tensorflow")
    done = _run_profiled_cell(tmp_path)
    assert done.returncode == 0, done.stderr
    assert "OUTPUTS" in done.stdout
    assert not [m for m in LOG_MARKERS if m in done.stderr], done.stderr
    traces = sorted(p.name for p in (tmp_path / "prof" / "graph_1").glob("trace_step_*.json"))  # graph 0: init
    assert traces == ["trace_step_0.json", "trace_step_1.json", "trace_step_2.json"], traces
    # --verbose lets them through: the check above is not vacuous on this machine
    loud = _run_profiled_cell(tmp_path, "--verbose")
    assert loud.returncode == 0, loud.stderr
    assert any(m in loud.stderr for m in LOG_MARKERS), loud.stderr


def test_writes_to_descriptor_2_inside_the_block_are_kept_out_and_kept_for_inspection(capfd):
    from npu_jupyter._notebook import quiet

    with quiet_tensorflow():
        os.write(2, b"I0000 profiler_session.cc:103] Profiler session initializing.\n")
    os.write(2, b"after\n")
    err = capfd.readouterr().err
    assert "profiler_session" not in err
    assert "after" in err
    assert "profiler_session.cc" in quiet.last_log


def test_disabled_quiet_block_lets_the_lines_through(capfd):
    with quiet_tensorflow(enabled=False):
        os.write(2, b"profiler_session.cc visible\n")
    assert "profiler_session.cc visible" in capfd.readouterr().err


def test_the_verbose_flag_and_trait_reach_the_cell(ip, capfd):
    ip.run_cell_magic("npu", "--verbose --quiet", "import os\nos.write(2, b'loud line\\n')\n")
    assert "loud line" in capfd.readouterr().err
    ip.run_cell_magic("npu", "--quiet", "import os\nos.write(2, b'hidden line\\n')\n")
    assert "hidden line" not in capfd.readouterr().err
    ip.run_line_magic("config", "NpuMagics.verbose = True")
    try:
        ip.run_cell_magic("npu", "--quiet", "import os\nos.write(2, b'trait line\\n')\n")
        assert "trait line" in capfd.readouterr().err
    finally:
        ip.run_line_magic("config", "NpuMagics.verbose = False")


def test_python_warnings_in_a_quiet_block_still_show_where_sys_stderr_is_descriptor_2():
    """A terminal IPython's sys.stderr is descriptor 2: every warning of a %%npu cell went into the sink,
    the emulated set_iteration_per_loop's "runs the step 10 times per sess.run" among them (ModelZoo
    CycleGAN_ID0716). Native lines stay out; Python's stderr is the same object again after the block."""
    code = (
        "import os, sys, warnings\n"
        "from npu_jupyter._notebook.quiet import quiet_tensorflow\n"
        "before = sys.stderr\n"
        "with quiet_tensorflow():\n"
        "    warnings.warn('kept warning')\n"
        "    os.write(2, b'native line\\n')\n"
        "print(sys.stderr is before)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "UserWarning: kept warning" in done.stderr and "native line" not in done.stderr
    assert done.stdout.strip() == "True"


def _terminal_stderr(monkeypatch):
    """``sys.stderr`` as a terminal IPython has it: a text stream on descriptor 2 itself.

    Set in the test body: capfd installs its own ``sys.stderr`` after the fixtures are set up.
    """
    import io

    stream = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), line_buffering=True)
    monkeypatch.setattr(sys, "stderr", stream)
    return stream


def test_python_stderr_on_descriptor_2_stays_visible_while_the_cpp_lines_are_kept_out(capfd, monkeypatch):
    """Trial (din_tf_allenyzx in a terminal IPython %%npu cell): the script's logging lines vanished
    into the sink with TensorFlow's C++ lines, because there sys.stderr is descriptor 2."""
    import logging

    terminal_stderr = _terminal_stderr(monkeypatch)

    handler = logging.StreamHandler(terminal_stderr)  # made before the cell, as logging.basicConfig() does
    log = logging.getLogger("npu_jupyter.tests.quiet")
    log.addHandler(handler)
    log.propagate = False
    try:
        with quiet_tensorflow():
            os.write(2, b"I0000 cpu_feature_guard.cc:1] a C++ line\n")
            print("a print to stderr", file=sys.stderr)
            log.warning("a logging line")
        assert sys.stderr is terminal_stderr and handler.stream is terminal_stderr  # put back after
    finally:
        log.removeHandler(handler)
    err = capfd.readouterr().err
    assert "cpu_feature_guard" not in err
    assert "a print to stderr" in err and "a logging line" in err


def test_a_terminal_npu_cells_stderr_lines_show(ip, capfd, monkeypatch):
    _terminal_stderr(monkeypatch)
    ip.run_cell_magic(
        "npu", "--quiet", "import os, sys\nos.write(2, b'hidden line\\n')\nprint('shown line', file=sys.stderr)\n"
    )
    err = capfd.readouterr().err
    assert "shown line" in err and "hidden line" not in err


def test_what_takes_stderr_inside_the_block_still_writes_after_it(capfd, monkeypatch):
    """A handler ``logging.basicConfig()`` makes in the cell holds the block's stderr; it must not be
    left writing to a closed file (logging's "--- Logging error ---") in later cells."""
    import logging

    terminal = _terminal_stderr(monkeypatch)
    with quiet_tensorflow():
        inside = logging.StreamHandler()  # takes sys.stderr now
    assert sys.stderr is terminal
    inside.handle(logging.makeLogRecord({"msg": "a later cell's line", "levelno": logging.WARNING}))
    err = capfd.readouterr().err
    assert "a later cell's line" in err and "Logging error" not in err


def test_absls_handler_joining_the_root_logger_inside_the_block_writes_to_the_terminal(capfd, monkeypatch):
    """TensorFlow's tf.app.run (absl.app.run) attaches absl's handler inside the cell: the ModelZoo
    din_tf_allenyzx script's logging.info lines went through it."""
    absl_logging = pytest.importorskip("absl.logging")
    python_handler = absl_logging.get_absl_handler().python_handler
    terminal = _terminal_stderr(monkeypatch)
    monkeypatch.setattr(python_handler, "stream", terminal)  # as made when TensorFlow was imported
    with quiet_tensorflow():
        python_handler.stream.write("an absl line\n")
    assert python_handler.stream is terminal
    assert "an absl line" in capfd.readouterr().err
