"""A ``%%npu`` cell's TF2 code: the traced functions it runs, emulated under the cell's config.

``%%npu`` swaps the cell's ``tf.compat.v1`` sessions (``session_swap``); TF2 code — Keras ``fit``,
``evaluate``, ``predict`` and ``tf.function`` loops — never makes a session, so the cell also runs
inside :class:`npu_jupyter._runtime.functions.emulator.FunctionEmulation` when the emulator is the backend and
this TensorFlow supports it. Each function the cell called becomes one report, like a session run.
On the ``ascend`` backend the real adapter (``npu_device``) runs TF2 code, and nothing is emulated.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Iterator

if TYPE_CHECKING:  # pragma: no cover
    from contextlib import AbstractContextManager

    from npu_jupyter._options.config import NpuConfig
    from npu_jupyter._options.snapshot import ConfigSnapshot
    from npu_jupyter._runtime.functions.emulator import FunctionEmulation
    from npu_jupyter._runtime.report import RunReport

    #: (the session snapshot, the cell's overrides)
    Layers = tuple[ConfigSnapshot, Mapping[str, object]]


class CellFunctions:
    """The cell's function reports (empty when nothing was emulated)."""

    def __init__(self) -> None:
        self.reports: list[RunReport] = []


@contextlib.contextmanager
def emulated_functions(
    config: ConfigSnapshot, backend: str, *, reference: bool = False, layers: Layers | None = None
) -> Iterator[CellFunctions]:
    """Run the ``with`` block with every traced function emulated under ``config`` (emulator only).

    ``reference`` (``%%npu --reference``): also measure drift against a float32 shadow of each body.
    ``layers`` = (session snapshot, cell overrides): when the cell's code opens the emulated TF2 device
    (``npu_device.open().as_default()``), the emulation continues under snapshot < the script's
    ``global_options()`` < the cell's flags, as sessions take a script's NpuOptimizer entries.

    TensorFlow is not imported here: a cell that never imported it has no functions to emulate.
    """
    found = CellFunctions()
    if "tensorflow" not in sys.modules or not emulator_backend(backend):
        yield found
        return
    from npu_jupyter._runtime.functions import emulator as functions

    if not functions.supported():
        yield found
        return
    emulation = functions.FunctionEmulation(config, reference=reference)
    # the device's own emulation pauses before the cell's starts and resumes after it ends: each puts
    # back the call path and the functions it found, so they must nest, not interleave
    with _device_options(emulation, layers), emulation:
        try:
            yield found
        finally:
            # plan is None for a function with no plannable graph (_runtime/functions/emulator.py)
            found.reports = [r for r in emulation.reports.values() if r.plan is not None and r.steps]


def _device_options(emulation: FunctionEmulation, layers: Layers | None) -> AbstractContextManager[object]:
    """While the cell runs, the emulated ``npu_device`` hands the options it opened with to ``emulation``."""
    if layers is None:
        return contextlib.nullcontext()
    from npu_jupyter._notebook.cell_options import merged, with_exclusions
    from npu_jupyter.adapter.tf2 import device as tf2_device

    snapshot, overrides = layers

    def take(device_config: NpuConfig) -> None:  # the config the script's npu_device.open() read
        config = merged(snapshot, with_exclusions(device_config.changed()), overrides)
        config.validate()
        emulation.reconfigure(config)

    return tf2_device.cell_device(take)


def emulator_backend(backend: str) -> bool:
    """True when the cell's sessions run on the emulator (the real adapter runs TF2 code itself)."""
    if backend == "emulator":
        return True
    if backend == "ascend":
        return False
    from npu_jupyter._runtime.backends import ascend_available

    return not ascend_available()
