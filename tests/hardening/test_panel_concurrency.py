"""The panel edited from another thread while a ``%%npu`` cell runs (docs/contract.md, Notebook).

The cell must run with one consistent snapshot of the shared config, taken when it starts: a change
made meanwhile (here through the panel's own drop-down, as a user clicking it would) shows in the
shared config afterwards but not in the cell's sessions.
"""

from __future__ import annotations

import sys
import threading

import pytest
from IPython.utils.capture import capture_output

from npu_jupyter._display.mime import MIME_TYPE
from npu_jupyter._notebook.panel import panel
from npu_jupyter._notebook.state import current_config

pytest.importorskip("tensorflow")

CELL = """
import numpy as np
import tensorflow as tf
cell_started.set()
assert panel_flipped.wait(60), "the panel thread did not flip precision_mode"
g = tf.Graph()
with g.as_default():
    x = tf.compat.v1.placeholder(tf.float32, [4, 8], name="x")
    w = tf.constant(np.full((8, 3), 0.5, np.float32), name="w")
    y = tf.nn.relu(tf.matmul(x, w, name="mm"), name="y")
with tf.compat.v1.Session(graph=g) as sess:
    sess.run(y, feed_dict={x: np.ones((4, 8), np.float32)})
"""


def _choose(dropdown, value: str) -> None:
    """Pick ``value`` in a panel drop-down the way a click does (by index)."""
    dropdown.index = list(dropdown.options).index(value)


def test_a_panel_edit_during_a_cell_does_not_reach_the_running_cell(ip):
    config = current_config()
    config.update(precision_mode="allow_fp32_to_fp16", mix_compile_mode=True)
    widget = panel(config)
    started, flipped = threading.Event(), threading.Event()
    ip.user_ns.update(cell_started=started, panel_flipped=flipped)

    def edit_from_the_panel() -> None:
        started.wait(60)
        _choose(widget.control("precision_mode"), "force_fp16")
        _choose(widget.control("mix_compile_mode"), "False")
        flipped.set()

    editor = threading.Thread(target=edit_from_the_panel)
    editor.start()
    try:
        with capture_output() as cap:
            ip.run_cell_magic("npu", "", CELL)
    finally:
        flipped.set()
        editor.join(60)
        widget.close()
    [report] = [out.data[MIME_TYPE] for out in cap.outputs if MIME_TYPE in out.data]
    assert report["effective_precision_mode"] == "allow_fp32_to_fp16"
    assert report["config"]["precision_mode"] == "allow_fp32_to_fp16"
    assert report["config"]["mix_compile_mode"] is True
    matmul = next(op for op in report["ops"] if op["n"] == "mm")
    assert (matmul["d0"], matmul["d1"]) == ("float32", "float16")
    # the edit itself was applied to the shared config, for the next cell
    assert config.precision_mode == "force_fp16" and config.mix_compile_mode is False
    assert widget.error_text("precision_mode") == ""


def test_a_snapshot_taken_while_another_thread_swaps_exclusive_options_is_never_torn():
    """``copy()`` (what a cell starts from) against atomic ``update``s that keep exactly one of
    precision_mode / precision_mode_v2 set: every copy must hold exactly one.

    A tiny GIL switch interval makes the interleavings that real kernels hit rarely happen often.
    """
    config = current_config()
    config.reset(precision_mode="force_fp16")
    states = (
        {"precision_mode": "force_fp16", "precision_mode_v2": None},
        {"precision_mode": None, "precision_mode_v2": "mixed_float16"},
    )
    stop = threading.Event()

    def swap() -> None:
        n = 0
        while not stop.is_set():
            config.update(states[n % 2])
            n += 1

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    swapper = threading.Thread(target=swap)
    swapper.start()
    torn = []
    try:
        for _ in range(3000):
            changed = config.copy().changed()
            if ("precision_mode" in changed) == ("precision_mode_v2" in changed):
                torn.append(changed)
    finally:
        stop.set()
        swapper.join(30)
        sys.setswitchinterval(interval)
        config.reset()
    assert not torn, f"{len(torn)} of 3000 snapshots were torn, e.g. {torn[0]}"
