"""While the emulated adapter is installed, ``tf.compat.v1.Session`` makes emulator sessions.

The real ``npu_bridge.npu_init`` wraps ``Session.__init__`` so every session a script makes carries the
NpuOptimizer config and runs on the device. The emulated surface does the same for the emulator: the
``tf.compat.v1`` names ``Session`` and ``InteractiveSession`` become factories that apply the adapter's
defaults to the script's ConfigProto (``npu_config_proto``) and return ``npu_jupyter.session(...,
backend="emulator")``. Sessions this package makes for itself stay plain TF sessions, and a ``%%npu``
cell's own swap (installed over this one) wins inside the cell.

TensorFlow's own session machinery (``MonitoredTrainingSession``, ``MonitoredSession`` and so the
Estimator) does not go through those names: its ``SessionManager`` calls
``tensorflow.python.client.session.Session`` directly. The emulation gives ``session_manager`` a view
of that module whose ``Session`` is whatever ``tf.compat.v1.Session`` is at the time (this swap, or a
``%%npu`` cell's), so those sessions are emulator sessions too. Where that module cannot be reached (a
TensorFlow laid out otherwise), a warning says such sessions stay plain TensorFlow.
"""

from __future__ import annotations

import sys
import types
import warnings
from typing import Any, cast

_PATCHED = ("Session", "InteractiveSession")
_replaced: list[tuple[Any, str, Any]] = []


def patch() -> None:
    """Swap the session names in every TF namespace scripts use (idempotent)."""
    if _replaced:
        return
    from npu_jupyter.runtime import session_names

    _replaced.extend(
        session_names.patch(
            _PATCHED, lambda name, original: _factory(original, interactive=name == "InteractiveSession")
        )
    )
    _patch_session_manager()


def restore() -> None:
    """Put TensorFlow's own classes back (idempotent)."""
    if not _replaced:
        return
    from npu_jupyter.runtime import session_names

    session_names.restore(_replaced)
    del _replaced[:]


_SESSION_MANAGER = "tensorflow.python.training.session_manager"


class _SessionModuleView(types.ModuleType):
    """``tensorflow.python.client.session`` as ``session_manager`` sees it: ``Session`` is ``tf.compat.v1.Session`` now."""

    def __init__(self, real: types.ModuleType) -> None:
        super().__init__(real.__name__, real.__doc__)
        self.__dict__["_real"] = real

    def __getattr__(self, name: str) -> Any:
        if name == "Session":
            import tensorflow as tf

            return tf.compat.v1.Session
        return getattr(self.__dict__["_real"], name)


def _patch_session_manager() -> None:
    """Monitored sessions and the Estimator's become emulator sessions, or a warning says they do not."""
    import importlib

    try:
        manager: Any = importlib.import_module(_SESSION_MANAGER)
        real = manager.session
    except (ImportError, AttributeError) as err:
        real, manager = err, None
    if not isinstance(real, types.ModuleType) or not hasattr(real, "Session"):
        warnings.warn(
            "the emulated adapter could not reach TensorFlow's SessionManager "
            f"({real}): sessions made by MonitoredTrainingSession, MonitoredSession and the Estimator stay plain "
            "TensorFlow sessions and are NOT emulated; create a tf.compat.v1.Session yourself to run on the emulator",
            stacklevel=3,
        )
        return
    if not isinstance(real, _SessionModuleView):
        _replaced.append((manager, "session", real))
        manager.session = _SessionModuleView(real)


def is_patched() -> bool:
    """True while ``tf.compat.v1.Session`` is replaced by the emulated adapter's session."""
    return bool(_replaced)


def _factory(original: Any, *, interactive: bool) -> Any:
    def make_session(target: str = "", graph: Any = None, config: Any = None) -> Any:
        if _from_npu_jupyter():
            return original(target, graph, config)
        return emulated_session(target, graph, config, interactive=interactive)

    make_session.__name__ = original.__name__
    make_session.__qualname__ = original.__qualname__
    make_session.__doc__ = f"Emulated-adapter session (npu_jupyter) in place of {original.__name__}."
    return make_session


def emulated_session(target: str = "", graph: Any = None, config: Any = None, *, interactive: bool = False) -> Any:
    """What a script's session is under the emulated adapter: the emulator, reading the NpuOptimizer entry."""
    from npu_jupyter.adapter.run_config import npu_config_proto
    from npu_jupyter.runtime import backends

    proto = _copy(config)
    session = backends.session(npu_config_proto(proto), graph=graph, backend="emulator", target=target or "")
    if interactive:
        context = session.as_default()
        context.__enter__()
        session._npu_default_context = context
    return session


def _copy(config: Any) -> Any:
    """A copy of the script's ConfigProto (the adapter edits it in place; we leave the script's alone)."""
    if config is None:
        return None
    clone = type(config)()
    clone.CopyFrom(config)
    return clone


def _from_npu_jupyter() -> bool:
    """Whether this package (the emulator, a %%npu cell's swap) is the one making the session."""
    caller = sys._getframe(2).f_globals.get("__name__", "")
    return cast("bool", caller == "npu_jupyter" or caller.startswith("npu_jupyter."))
