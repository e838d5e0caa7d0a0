"""The one place the kernel side imports TensorFlow, so a missing TensorFlow gives one clear error.

Installing ``npu_jupyter`` never installs or changes TensorFlow (an Ascend server's TensorFlow is the
one its adapter was built against). Options, code generation and ``%load_ext`` need no TensorFlow; the
planner, the emulator, scopes and the ``ascend`` backend do, and they all come through here.
"""

from __future__ import annotations

import importlib
import types

INSTALL_HINT = (
    'install it with pip install "npu_jupyter[emulator]" (TensorFlow for the CPU emulator), '
    "or use this kernel's own TensorFlow (on an Ascend server: the 1.15.0 or 2.6.5 build the adapter "
    "supports)"
)


class TensorFlowMissingError(ImportError):
    """TensorFlow is needed for what was asked and is not importable in this kernel."""


def require_tensorflow(what: str = "this") -> types.ModuleType:
    """Import and return the ``tensorflow`` module, or raise one error naming what to install.

    ``what`` names the feature that needed TensorFlow, so the message says why it was wanted.
    """
    try:
        return importlib.import_module("tensorflow")
    except ImportError as exc:
        # Only a missing TensorFlow itself is ours to explain; a TensorFlow that is installed but
        # fails inside its own import (a broken build, a missing CUDA library) keeps its own error.
        if getattr(exc, "name", None) not in ("tensorflow", None) or isinstance(exc, TensorFlowMissingError):
            raise
        raise TensorFlowMissingError(
            f"npu_jupyter: TensorFlow is not installed in this Python environment, and {what} needs it; {INSTALL_HINT}."
        ) from exc
