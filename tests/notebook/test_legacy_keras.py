"""TF1 layers in a fresh notebook work as on the adapter's TensorFlow (Keras 2), or fail saying what to do.

(Tests of ``npu_jupyter/_notebook/legacy_keras.py``. The switch only happens before TensorFlow is imported,
so the notebook-like tests run a real IPython shell in a fresh Python process.)
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from npu_jupyter._notebook import legacy_keras

ROOT = Path(__file__).resolve().parents[2]
DENSE_CELL = """
import numpy as np
import tensorflow as tf
g = tf.Graph()
with g.as_default():
    x = tf.compat.v1.placeholder(tf.float32, [2, 4], name="x")
    y = tf.compat.v1.layers.dense(x, 3, name="fc")
    init = tf.compat.v1.global_variables_initializer()
with tf.compat.v1.Session(graph=g) as sess:
    sess.run(init)
    out = sess.run(y, feed_dict={x: np.ones((2, 4), np.float32)})
print("shape", out.shape, type(sess).__name__)
"""


def _fresh_notebook(*cells: str) -> subprocess.CompletedProcess[str]:
    """Run ``cells`` in a real InteractiveShell in a new process (TensorFlow not imported yet)."""
    script = textwrap.dedent(
        """
        import sys
        from IPython.core.interactiveshell import InteractiveShell
        ip = InteractiveShell.instance()
        for cell in CELLS:
            result = ip.run_cell(cell, store_history=True)
            if not result.success:
                sys.exit(3)
        """
    ).replace("CELLS", repr(list(cells)))
    env = {k: v for k, v in os.environ.items() if k != legacy_keras.ENV}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=ROOT, timeout=600
    )


needs_keras3_tf = pytest.mark.skipif(
    not legacy_keras._tf_keras_installed(), reason="tf_keras (the legacy-keras extra) is not installed"
)


@pytest.mark.slow
@needs_keras3_tf
def test_a_fresh_notebook_runs_tf1_layers_under_npu_after_load_ext():
    done = _fresh_notebook("%load_ext npu_jupyter", "%%npu --quiet\n" + DENSE_CELL)
    assert done.returncode == 0, done.stdout + done.stderr
    assert legacy_keras.SWITCHED in done.stdout  # said in one line
    assert "shape (2, 3) EmulatorSession" in done.stdout


@pytest.mark.slow
@needs_keras3_tf
def test_opting_out_keeps_keras_3_and_the_layer_error_says_what_to_do():
    done = _fresh_notebook(
        "%load_ext npu_jupyter", "%config NpuMagics.legacy_keras = False", "%%npu --quiet\n" + DENSE_CELL
    )
    assert done.returncode == 3  # the %%npu cell failed
    assert "tf.keras stays Keras 3" in done.stdout
    assert "is not available with Keras 3" in done.stdout
    assert "restart the kernel and run %load_ext npu_jupyter before importing TensorFlow" in done.stdout
    assert "magics.py" not in done.stdout  # the user's frames only (cell_code.py)


def test_nothing_is_switched_when_the_user_set_the_variable_or_tensorflow_is_imported(monkeypatch):
    monkeypatch.setattr(legacy_keras, "_tf_keras_installed", lambda: True)
    monkeypatch.setenv(legacy_keras.ENV, "0")
    assert legacy_keras.choose_keras_2(enabled=True) is None
    assert os.environ[legacy_keras.ENV] == "0"
    monkeypatch.delenv(legacy_keras.ENV)
    monkeypatch.setitem(sys.modules, "tensorflow", sys.modules.get("tensorflow", object()))
    assert legacy_keras.choose_keras_2(enabled=True) is None
    assert legacy_keras.choose_keras_2(enabled=False) is None
    assert legacy_keras.ENV not in os.environ


def test_the_switch_is_made_and_undone_before_tensorflow_is_imported(monkeypatch):
    monkeypatch.setattr(legacy_keras, "_tf_keras_installed", lambda: True)
    monkeypatch.delenv(legacy_keras.ENV, raising=False)
    monkeypatch.delitem(sys.modules, "tensorflow", raising=False)
    assert legacy_keras.choose_keras_2(enabled=True) == legacy_keras.SWITCHED
    assert os.environ[legacy_keras.ENV] == "1"
    assert "stays Keras 3" in (legacy_keras.keep_keras_3() or "")
    assert legacy_keras.ENV not in os.environ
    assert legacy_keras.keep_keras_3() is None  # nothing left to undo


def test_a_keras3_layer_error_gets_the_instruction_and_keeps_its_type(monkeypatch):
    for installed, fix in ((True, "TF_USE_LEGACY_KERAS=1"), (False, "npu_jupyter[legacy-keras]")):
        monkeypatch.setattr(legacy_keras, "_tf_keras_installed", lambda installed=installed: installed)
        err = AttributeError("`dense` is not available with Keras 3.")
        legacy_keras.explain_keras3_error(err)
        assert str(err).startswith("`dense` is not available with Keras 3.")
        assert "need Keras 2" in str(err) and fix in str(err)
    other = AttributeError("no attribute 'foo'")
    legacy_keras.explain_keras3_error(other)
    assert str(other) == "no attribute 'foo'"


@needs_keras3_tf
def test_in_a_kernel_with_keras_3_already_imported_the_npu_cell_fails_with_the_instruction(ip):
    tf = pytest.importorskip("tensorflow")
    if not tf.__version__.startswith("2.") or int(tf.__version__.split(".")[1]) < 16:
        pytest.skip("tf.keras is Keras 2 before TensorFlow 2.16")
    if os.environ.get(legacy_keras.ENV) in ("1", "true", "True"):
        pytest.skip("this process runs with tf.keras as Keras 2")
    with pytest.raises(AttributeError, match="restart the kernel"):
        ip.run_cell_magic("npu", "--quiet", DENSE_CELL)
