"""The Ascend adapter's Python surface, emulated for the CPU emulator (opt-in).

``npu_jupyter.emulate_adapter()`` (or ``%npu adapter emulate``) lets a real Ascend TF1 script —
``from npu_bridge.npu_init import *``, ``NPURunConfig``, ``npu_config_proto``, ``npu_scope``,
``npu_ops.dropout``, ``NPULossScaleOptimizer``, ``util``, ``npu_convert_dropout``, ``hccl.manage.api``,
``NPUEstimator`` — or TF2 script — ``import npu_device``, ``global_options()``, ``open().as_default()``,
``NpuLossScaleOptimizer`` — run unchanged on this machine's CPU. Never over a real adapter.

:mod:`.surface` builds the modules and not-emulated stand-ins (from ``surface.json`` and
``surface_tf2.json``), :mod:`.install` turns them on and off; :mod:`.tf1` holds the ``npu_bridge`` /
``hccl`` names, :mod:`.tf2` the ``npu_device`` names. This package stays public: the emulated modules
resolve to ``npu_jupyter.adapter.*`` and users call ``npu_jupyter.adapter.status()``. Importing it does
not import TensorFlow.
"""

from __future__ import annotations

from npu_jupyter.adapter.install import emulate_adapter, is_emulated, real_adapter_location, status, uninstall
from npu_jupyter.adapter.surface import NotEmulatedError

__all__ = ["NotEmulatedError", "emulate_adapter", "is_emulated", "real_adapter_location", "status", "uninstall"]
