"""The Ascend adapter's Python surface, emulated for the CPU emulator (opt-in).

``npu_jupyter.emulate_adapter()`` (or ``%npu adapter emulate``) lets a real Ascend TF1 script —
``from npu_bridge.npu_init import *``, ``NPURunConfig``, ``npu_config_proto``, ``npu_scope``,
``npu_ops.dropout``, ``NPULossScaleOptimizer``, ``util``, ``npu_convert_dropout``, ``hccl.manage.api``,
``NPUEstimator`` — or TF2 script — ``import npu_device``, ``global_options()``, ``open().as_default()``,
``NpuLossScaleOptimizer`` — run unchanged on this machine's CPU. Never over a real adapter. One module per
idea: ``surface`` (the modules and not-emulated stand-ins, from ``surface.json`` and ``surface_tf2.json``),
``install`` (on/off), ``sessions`` (sessions, also monitored ones, become emulator sessions),
``run_config``, ``loss_scale``, ``optimizers``, ``npu_ops``, ``resources``, ``rank_values`` and
``hccl_api`` (one rank), ``iteration_loop`` and ``graph_exec`` (``util``), ``dropout_swap``,
``estimator``; for TF2 ``tf2_options`` (the options tree), ``tf2_device`` (open, as_default: traced
functions emulated), ``tf2_loss_scale``, ``tf2_distribute``, ``tf2_ops``. Importing this package does not
import TensorFlow.
"""

from __future__ import annotations

from npu_jupyter.adapter.install import emulate_adapter, is_emulated, real_adapter_location, status, uninstall
from npu_jupyter.adapter.surface import NotEmulatedError

__all__ = ["NotEmulatedError", "emulate_adapter", "is_emulated", "real_adapter_location", "status", "uninstall"]
