"""Names a Keras user recognises for the traced functions a cell runs.

TensorFlow names a traced function after its Python function plus a counter
(``__inference_multi_step_on_iterator_211``), and Keras 3 uses the same Python function for ``fit``,
``evaluate`` and ``predict``; the report would show three look-alike names. When a function is first
called, the Python stack still holds the Keras entry point that called it, so its report can say
"Keras fit (train function)". Code outside Keras keeps its Python function name.
"""

from __future__ import annotations

import re
import sys
from typing import Any

#: Keras entry points -> which of the model's functions they run.
_KERAS_ENTRIES = {
    "fit": "train function",
    "train_on_batch": "train function",
    "evaluate": "test function",
    "test_on_batch": "test function",
    "predict": "predict function",
    "predict_on_batch": "predict function",
}
_TRACED_NAME = re.compile(r"^__(?:inference|forward|backward)_(.+?)_\d+$")


def python_name(function_name: str) -> str:
    """The Python function a traced function was made from (``__inference_step_12`` -> ``step``)."""
    match = _TRACED_NAME.match(function_name)
    return match.group(1) if match else function_name


def keras_entry(frame: Any = None) -> str | None:
    """The Keras entry point on the calling stack ("Keras fit (train function)"), else None."""
    frame = frame or sys._getframe(1)
    while frame is not None:
        name = frame.f_code.co_name
        if name in _KERAS_ENTRIES and _is_keras(frame.f_code.co_filename):
            return f"Keras {name} ({_KERAS_ENTRIES[name]})"
        frame = frame.f_back
    return None


def label(function_name: str, frame: Any = None) -> str:
    """What a report calls a traced function: its Keras entry point, else its Python function name."""
    entry = keras_entry(frame or sys._getframe(1))
    return entry or python_name(function_name)


def _is_keras(filename: str) -> bool:
    """True for a file of Keras 3 or tf_keras (``.../keras/src/...``, ``.../tf_keras/...``)."""
    path = filename.replace("\\", "/")
    return "/keras/" in path or "/tf_keras/" in path


__all__ = ["keras_entry", "label", "python_name"]
