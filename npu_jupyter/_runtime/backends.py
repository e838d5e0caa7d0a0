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
from typing import TYPE_CHECKING, Union, cast

if TYPE_CHECKING:  # pragma: no cover
    from tensorflow.python.client import session as tf_session

    from npu_jupyter._options.config import ConfigSource
    from npu_jupyter._options.snapshot import ConfigSnapshot
    from npu_jupyter._tf_types import ConfigProto, Graph

#: What ``session(config=...)`` takes: a config, a snapshot, a mapping of options, a ConfigProto or None.
SessionConfigInput = Union["ConfigSource", "ConfigProto"]

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
    config: SessionConfigInput = None,
    graph: Graph | None = None,
    backend: str = "auto",
    *,
    reference: bool = False,
    target: str = "",
) -> tf_session.Session:
    """A session configured for the Ascend adapter.

    Parameters
    ----------
    config : NpuConfig, ConfigSnapshot, ConfigProto, mapping or None
        The NPU options. A ``tf.compat.v1.ConfigProto`` (for example one written by hand as in the
        adapter's docs) is read with ``NpuConfig.from_config_proto`` and its other settings are kept.
        ``None`` means the adapter's defaults. The session runs with a snapshot taken here: later
        changes to the caller's config do not reach it (change ``session.config`` instead).
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
    A ``tf.compat.v1.Session`` (ascend) or an :class:`~npu_jupyter._runtime.session.emulator.EmulatorSession`;
    both have ``run``, ``close``, ``graph``, ``as_default`` and work as context managers. The emulator
    also records ``last_report`` / ``reports``.

    """
    if backend not in BACKENDS:
        raise ValueError(f"backend={backend!r} is not a backend; choose one of {', '.join(map(repr, BACKENDS))}")
    snapshot, base_proto = resolve_config(config)
    return open_session(snapshot, base_proto, graph, backend, reference=reference, target=target)


def open_session(
    snapshot: ConfigSnapshot,
    base_proto: ConfigProto | None,
    graph: Graph | None,
    backend: str,
    *,
    reference: bool = False,
    target: str = "",
) -> tf_session.Session:
    """A session on an already-taken ``snapshot`` (a ``%%npu`` cell's), not checked again.

    ``base_proto`` is the user's own ConfigProto whose other settings are kept; the real adapter's
    ConfigProto is built from the snapshot once, here.
    """
    if backend == "auto":
        backend = "ascend" if ascend_available() else "emulator"
    if backend == "ascend":
        return _ascend_session(snapshot, base_proto, graph, target)
    from npu_jupyter._options.config import NpuConfig
    from npu_jupyter._runtime.session.emulator import EmulatorSession

    # The session's own editable config (``session.config``); its first snapshot is ``snapshot`` itself.
    own = NpuConfig.from_snapshot(snapshot)
    return EmulatorSession(own, graph, reference=reference, target=target, base_proto=base_proto)


def resolve_config(config: SessionConfigInput) -> tuple[ConfigSnapshot, ConfigProto | None]:
    """(the snapshot to run with, the user's ConfigProto or None) from whatever the caller passed.

    An NpuConfig, snapshot or mapping is validated here, once; a ConfigProto is read as the adapter
    reads it (its problems surface when the session builds its proto, as the adapter's would).
    """
    from npu_jupyter._options.config import as_snapshot
    from npu_jupyter._options.proto import read_config_proto
    from npu_jupyter._options.snapshot import ConfigSnapshot

    if config is None:
        return ConfigSnapshot(), None
    if hasattr(config, "graph_options") and hasattr(config, "SerializeToString"):
        proto = cast("ConfigProto", config)
        return read_config_proto(proto), proto
    try:
        snapshot = as_snapshot(cast("ConfigSource", config))
    except TypeError:
        raise TypeError(
            f"config must be an NpuConfig, a tf.compat.v1.ConfigProto, a dict of options or None, "
            f"not {type(config).__name__}"
        ) from None
    snapshot.validate()
    return snapshot, None


def _ascend_session(
    snapshot: ConfigSnapshot, base_proto: ConfigProto | None, graph: Graph | None, target: str
) -> tf_session.Session:
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
    from npu_jupyter._runtime.ascend.backend import AscendSession

    proto = snapshot.to_config_proto(base_proto)  # the real adapter reads this one ConfigProto
    return AscendSession(snapshot, target=target, graph=graph, config=proto)
