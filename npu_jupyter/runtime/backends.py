"""``npu_jupyter.session``: the real adapter when it is installed, the CPU emulator otherwise.

Both backends take the same config and return an object with ``tf.compat.v1.Session``'s interface, so
a notebook written on a laptop runs unchanged on an Ascend machine. Choosing is cheap: ``auto`` only
asks whether ``npu_bridge`` can be found (``importlib.util.find_spec``), it does not import it.

This module must stay importable without TensorFlow (the magics import it at ``%load_ext``).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from typing import Any

BACKENDS = ("auto", "ascend", "emulator")


def ascend_available() -> bool:
    """Whether the real Ascend adapter (``npu_bridge``) is installed, without importing it.

    npu_jupyter's emulated surface (``emulate_adapter()``) is not the adapter: with it installed this
    is False, so ``auto`` keeps choosing the emulator.
    """
    loaded = sys.modules.get("npu_bridge")
    if loaded is not None:
        return not getattr(loaded, "__npu_jupyter_emulated__", False)
    try:
        return importlib.util.find_spec("npu_bridge") is not None
    except (ImportError, ValueError):
        return False


def available_backends() -> list[str]:
    """Backends usable on this machine: always ``emulator``, plus ``ascend`` when npu_bridge is found."""
    return (["ascend"] if ascend_available() else []) + ["emulator"]


def session(
    config: Any = None,
    graph: Any = None,
    backend: str = "auto",
    *,
    reference: bool = False,
    target: str = "",
) -> Any:
    """A session configured for the Ascend adapter.

    Parameters
    ----------
    config : NpuConfig, ConfigProto, mapping or None
        The NPU options. A ``tf.compat.v1.ConfigProto`` (for example one written by hand as in the
        adapter's docs) is read with ``NpuConfig.from_config_proto`` and its other settings are kept.
        ``None`` means the adapter's defaults.
    graph : tf.Graph, optional
        The graph to run (default: the default graph).
    backend : {"auto", "ascend", "emulator"}
        ``auto`` picks ``ascend`` when ``npu_bridge`` is installed, else ``emulator``.
    reference : bool
        Emulator only: also run a float32 reference of every step and record per-op drift.
    target : str
        Passed to the TensorFlow session.

    Returns
    -------
    A ``tf.compat.v1.Session`` (ascend) or an :class:`~npu_jupyter.runtime.emulator.EmulatorSession`;
    both have ``run``, ``close``, ``graph``, ``as_default`` and work as context managers. The emulator
    also records ``last_report`` / ``reports``.

    """
    if backend not in BACKENDS:
        raise ValueError(f"backend={backend!r} is not a backend; choose one of {', '.join(map(repr, BACKENDS))}")
    npu_config, base_proto = resolve_config(config)
    if backend == "auto":
        backend = "ascend" if ascend_available() else "emulator"
    if backend == "ascend":
        return _ascend_session(npu_config, base_proto, graph, target)
    from npu_jupyter.runtime.emulator import EmulatorSession

    return EmulatorSession(npu_config, graph, reference=reference, target=target, base_proto=base_proto)


def resolve_config(config: Any) -> tuple[Any, Any]:
    """(NpuConfig copy, the user's ConfigProto or None) from whatever the caller passed."""
    from npu_jupyter.options.config import NpuConfig

    if config is None:
        return NpuConfig(), None
    if isinstance(config, NpuConfig):
        config.validate()
        return config.copy(), None
    if hasattr(config, "graph_options") and hasattr(config, "SerializeToString"):
        return NpuConfig.from_config_proto(config), config
    if isinstance(config, dict):
        npu = NpuConfig(**config)
        npu.validate()
        return npu, None
    raise TypeError(
        f"config must be an NpuConfig, a tf.compat.v1.ConfigProto, a dict of options or None, "
        f"not {type(config).__name__}"
    )


def _ascend_session(config: Any, base_proto: Any, graph: Any, target: str) -> Any:
    """A real TF session with the NpuOptimizer config, after importing the adapter."""
    if not ascend_available() and "npu_bridge" in sys.modules:
        raise RuntimeError(
            "backend='ascend' needs the real Ascend TensorFlow adapter, but the npu_bridge loaded here is "
            "npu_jupyter's emulated surface (emulate_adapter()); use backend='emulator' or 'auto'."
        )
    try:
        importlib.import_module("npu_bridge.npu_init")
    except ImportError as exc:
        raise RuntimeError(
            "backend='ascend' needs the Ascend TensorFlow adapter, but `import npu_bridge` failed "
            f"({exc}). Install the adapter that matches your CANN toolkit (the npu_bridge / "
            "tensorflow-adapter wheel shipped with CANN, on a machine with Ascend NPUs), or use "
            "backend='emulator' (or 'auto') to emulate the adapter on this machine's CPU."
        ) from exc
    from npu_jupyter.runtime.ascend import AscendSession

    proto = config.to_config_proto(base_proto) if base_proto is not None else config.to_config_proto()
    return AscendSession(config, target=target, graph=graph, config=proto)
