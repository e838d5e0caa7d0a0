"""``tf.keras`` as Keras 2 in a notebook that loaded the extension, as on the Ascend adapter's TensorFlow.

The adapter runs TensorFlow 1.15 or 2.6.5, whose ``tf.keras`` is Keras 2, and Ascend training scripts
use the TF1 layers built on it (``tf.compat.v1.layers.dense``, ``rnn_cell``). From TensorFlow 2.16
``tf.keras`` is Keras 3 unless ``TF_USE_LEGACY_KERAS=1`` is set before TensorFlow is imported, and
those layers fail ("`dense` is not available with Keras 3"). ``%load_ext npu_jupyter`` therefore sets
it when that is still possible (TensorFlow not imported, ``tf_keras`` installed, the variable not set
by the user) and says so in one line.

What a Keras user gives up: ``tf.keras`` is then tf_keras 2.x (the API of TF 2.6's Keras, plus later
fixes), so Keras-3-only APIs (``keras.ops``, other backends) are not under ``tf.keras``; ``import keras``
is unaffected and is still Keras 3. Opt out with ``TF_USE_LEGACY_KERAS=0`` in the environment,
``c.NpuMagics.legacy_keras = False`` in ``ipython_config.py``, or ``%config NpuMagics.legacy_keras =
False`` before TensorFlow is imported.
"""

from __future__ import annotations

import importlib.util
import os
import sys

ENV = "TF_USE_LEGACY_KERAS"
_SET_BY_US = "1"  # the value we write, to tell our setting from the user's
_we_set_it = False

SWITCHED = (
    "npu_jupyter: tf.keras is Keras 2 (tf_keras) in this kernel, as on the Ascend adapter's TensorFlow, so "
    "tf.compat.v1.layers work; `import keras` is still Keras 3. To keep tf.keras as Keras 3: "
    "%config NpuMagics.legacy_keras = False (before importing TensorFlow)."
)
_KERAS3_MARK = "is not available with Keras 3"


def choose_keras_2(enabled: bool) -> str | None:
    """Set ``TF_USE_LEGACY_KERAS=1`` when that makes TF1 layers work and is still possible; the note, or None."""
    global _we_set_it
    if not enabled or ENV in os.environ or "tensorflow" in sys.modules or not _tf_keras_installed():
        return None
    os.environ[ENV] = _SET_BY_US
    _we_set_it = True
    return SWITCHED


def keep_keras_3() -> str | None:
    """Undo :func:`choose_keras_2` (``%config NpuMagics.legacy_keras = False``); what happened, or None."""
    global _we_set_it
    if not _we_set_it:  # nothing of ours to undo (also: the setting read from ipython_config.py at load)
        return None
    if "tensorflow" in sys.modules:
        return (
            "npu_jupyter: TensorFlow is already imported with tf.keras as Keras 2; restart the kernel and set "
            "%config NpuMagics.legacy_keras = False before importing TensorFlow to keep Keras 3."
        )
    if os.environ.get(ENV) == _SET_BY_US:
        del os.environ[ENV]
    _we_set_it = False
    return "npu_jupyter: tf.keras stays Keras 3 (TF_USE_LEGACY_KERAS unset); tf.compat.v1.layers will not work."


def explain_keras3_error(err: BaseException) -> None:
    """Add to a TF1-layer error under Keras 3 what to do, in place (same type, same traceback)."""
    if not isinstance(err, AttributeError) or not err.args or _KERAS3_MARK not in str(err.args[0]):
        return
    if _tf_keras_installed():
        fix = (
            "restart the kernel and run %load_ext npu_jupyter before importing TensorFlow (it sets "
            "TF_USE_LEGACY_KERAS=1), or set TF_USE_LEGACY_KERAS=1 in the environment"
        )
    else:
        fix = 'install tf_keras (pip install "npu_jupyter[legacy-keras]"), then restart the kernel'
    why = (
        "npu_jupyter: TF1 layers (tf.compat.v1.layers, rnn_cell) need Keras 2, as on the Ascend adapter's "
        f"TensorFlow (1.15, 2.6.5); this kernel's tf.keras is Keras 3. To fix: {fix}."
    )
    err.args = (f"{err.args[0]}\n{why}", *err.args[1:])


def _tf_keras_installed() -> bool:
    """Whether ``tf_keras`` is importable, without importing it (or TensorFlow)."""
    try:
        return importlib.util.find_spec("tf_keras") is not None
    except (ImportError, ValueError):
        return False
