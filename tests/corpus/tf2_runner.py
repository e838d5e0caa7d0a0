"""Running a TF2 corpus script as its user would: ``python script.py`` after ``emulate_adapter()``, or in ``%%npu``.

The scripts are Keras 2 scripts (the TF2 adapter runs TensorFlow 2.6.5). On TensorFlow >= 2.16, where
``tf.keras`` is Keras 3, :func:`keras2` makes ``tf.keras`` / ``tensorflow.keras`` the ``tf_keras``
package for the run, as ``TF_USE_LEGACY_KERAS=1`` does for a user. :class:`CallClock` times each call
of a traced function underneath the emulation (the emulation wraps it), an independent measure to hold
a report's timing against. Everything a run changes is put back afterwards.
"""

from __future__ import annotations

import contextlib
import re
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterator

from corpus.corpus import Tf2Script
from corpus.tf2_scripts import SCRIPT_DIR


@contextlib.contextmanager
def keras2() -> Iterator[None]:
    """``tf.keras`` is Keras 2 for the block (tf_keras on TensorFlow >= 2.16; nothing to do before)."""
    import tensorflow as tf

    if tuple(int(part) for part in re.findall(r"\d+", tf.__version__)[:2]) < (2, 16):
        yield  # tf.keras is Keras 2 already
        return
    import tf_keras

    saved_attr = tf.__dict__.get("keras")
    saved_module = sys.modules.get("tensorflow.keras")
    tf.keras = tf_keras
    sys.modules["tensorflow.keras"] = tf_keras
    try:
        yield
    finally:
        tf_keras.backend.clear_session()
        if saved_attr is None:
            del tf.keras
        else:
            tf.keras = saved_attr
        if saved_module is None:
            sys.modules.pop("tensorflow.keras", None)
        else:
            sys.modules["tensorflow.keras"] = saved_module


class CallClock:
    """Wall time of every eager call of each traced function, measured below the emulation's own timer."""

    def __init__(self) -> None:
        self.calls: dict[str, list[float]] = defaultdict(list)

    @contextlib.contextmanager
    def installed(self) -> Iterator[CallClock]:
        from tensorflow.python.eager.polymorphic_function import atomic_function

        original = atomic_function.AtomicFunction.call_flat
        clock = self

        def call_flat(function: Any, *args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return original(function, *args, **kwargs)
            finally:
                name = function.name.decode() if isinstance(function.name, bytes) else str(function.name)
                clock.calls[name].append((time.perf_counter() - start) * 1000.0)

        atomic_function.AtomicFunction.call_flat = call_flat
        try:
            yield self
        finally:
            atomic_function.AtomicFunction.call_flat = original


def argv(script: Tf2Script, tmp: Path) -> list[str]:
    """The script's command line for a run in ``tmp``."""
    return [str(SCRIPT_DIR / f"{script.name}.py"), *(a.replace("{tmp}", str(tmp)) for a in script.argv)]


def expected_options(script: Tf2Script, tmp: Path) -> dict[str, Any]:
    """The options the script sets with these flags, paths filled in."""
    return {k: v.replace("{tmp}", str(tmp)) if isinstance(v, str) else v for k, v in script.options.items()}


@contextlib.contextmanager
def script_context(script: Tf2Script, tmp: Path, monkeypatch: Any) -> Iterator[None]:
    """What ``python script.py <flags>`` has: its folder on sys.path, its argv, cwd ``tmp``; Keras 2.

    The shipped dropout helper patches Keras' ``Dropout.call``; the original comes back after the run.
    """
    monkeypatch.setattr(sys, "argv", argv(script, tmp))
    monkeypatch.syspath_prepend(str(SCRIPT_DIR))
    monkeypatch.chdir(tmp)
    with keras2():
        import tensorflow as tf

        dropout_call = tf.keras.layers.Dropout.call
        try:
            yield
        finally:
            tf.keras.layers.Dropout.call = dropout_call
            for helper in ("npu_convert_dropout", "npu_ops"):
                sys.modules.pop(helper, None)


def source(script: Tf2Script) -> str:
    """The script's text, as a user would paste it into a cell."""
    return (SCRIPT_DIR / f"{script.name}.py").read_text(encoding="utf-8")
