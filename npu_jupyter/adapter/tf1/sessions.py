"""While the emulated adapter is installed, ``tf.compat.v1.Session`` makes emulator sessions.

The real ``npu_bridge.npu_init`` wraps ``Session.__init__`` so every session a script makes carries the
NpuOptimizer config and runs on the device. The emulated surface does the same for the emulator: the
``tf.compat.v1`` names ``Session`` and ``InteractiveSession`` become factories that apply the adapter's
defaults to the script's ConfigProto (``npu_config_proto``) and return ``npu_jupyter.session(...,
backend="emulator")``. Sessions this package makes for itself stay plain TF sessions, and a ``%%npu``
cell's own swap (installed over this one) wins inside the cell.

Sessions of TensorFlow's own machinery (``MonitoredTrainingSession``, the Estimator) follow the swap
too: :mod:`npu_jupyter._runtime.session.session_names` points ``SessionManager`` at the swapped name.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Callable, cast

if TYPE_CHECKING:
    from npu_jupyter._runtime.session.emulator import EmulatorSession
    from npu_jupyter._tf_types import ConfigProto, Graph, Session

_PATCHED = ("Session", "InteractiveSession")
_replaced: list[tuple[Any, str, Any]] = []


def patch() -> None:
    """Swap the session names in every TF namespace scripts use (idempotent)."""
    if _replaced:
        return
    from npu_jupyter._runtime.session import session_names

    _replaced.extend(
        session_names.patch(
            _PATCHED, lambda name, original: _factory(original, interactive=name == "InteractiveSession")
        )
    )


def restore() -> None:
    """Put TensorFlow's own classes back (idempotent)."""
    if not _replaced:
        return
    from npu_jupyter._runtime.session import session_names

    session_names.restore(_replaced)
    del _replaced[:]


def is_patched() -> bool:
    """True while ``tf.compat.v1.Session`` is replaced by the emulated adapter's session."""
    return bool(_replaced)


def _factory(original: Callable[..., Session], *, interactive: bool) -> Callable[..., Session]:
    def make_session(target: str = "", graph: Graph | None = None, config: ConfigProto | None = None) -> Session:
        if _from_npu_jupyter():
            return original(target, graph, config)
        return emulated_session(target, graph, config, interactive=interactive)

    make_session.__name__ = original.__name__
    make_session.__qualname__ = original.__qualname__
    make_session.__doc__ = f"Emulated-adapter session (npu_jupyter) in place of {original.__name__}."
    return make_session


def emulated_session(
    target: str = "", graph: Graph | None = None, config: ConfigProto | None = None, *, interactive: bool = False
) -> EmulatorSession:
    """What a script's session is under the emulated adapter: the emulator, reading the NpuOptimizer entry."""
    from npu_jupyter._runtime import backends
    from npu_jupyter.adapter.tf1.run_config import npu_config_proto

    proto = _copy(config)
    session: EmulatorSession = backends.session(
        npu_config_proto(proto), graph=graph, backend="emulator", target=target or ""
    )
    if interactive:
        context = session.as_default()
        context.__enter__()
        session._npu_default_context = context
    return session


def _copy(config: ConfigProto | None) -> ConfigProto | None:
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
