"""During a ``%%npu`` cell, every ``tf.compat.v1.Session`` the cell creates is an NPU session.

The cell's code stays unchanged: ``tf.compat.v1.Session`` and ``tf.compat.v1.InteractiveSession`` are
replaced, for the duration of the cell only, by factories that build the config from the three layers
(cell flags > the user's own ``NpuOptimizer`` entries > session config) and return
``npu_jupyter._runtime.backends.session(...)``. The originals come back when the cell ends, also when it
raises. Every session made is remembered so its run reports can be shown after the cell.

Sessions created through the ``tf.compat.v1`` names are swapped (which is how user code and helper
modules create them), and so are those of TF's own ``MonitoredTrainingSession``/``MonitoredSession``/
Estimator machinery (:mod:`npu_jupyter._runtime.session.session_names` points its ``SessionManager`` at the
swapped name). Code holding its own reference to the class from before the cell keeps plain TF sessions.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Callable, cast

from npu_jupyter._notebook.cell_options import with_exclusions
from npu_jupyter._options.config import as_snapshot
from npu_jupyter._options.proto import has_npu_optimizer, read_config_proto, without_npu_entries

if TYPE_CHECKING:  # pragma: no cover
    from tensorflow.python.client import session as tf_session

    from npu_jupyter._options.config import ConfigSource
    from npu_jupyter._options.snapshot import ConfigSnapshot
    from npu_jupyter._tf_types import ConfigProto, Graph

_PATCHED = ("Session", "InteractiveSession")


class CellSessions:
    """Builds NPU sessions for one cell and remembers them.

    Parameters
    ----------
    snapshot : ConfigSnapshot (or NpuConfig, taken now)
        The session config when the cell started (the panel may change the shared config while the
        cell runs; the cell does not see that).
    overrides : dict
        The cell's flags as option values (``None`` = unset).
    backend : str
        ``"auto"``, ``"emulator"`` or ``"ascend"``.
    reference : bool
        ``%%npu --reference``: emulator sessions also run a float32 reference and record drift.
    cell_config : ConfigSnapshot, optional
        ``snapshot`` with ``overrides`` laid over, already validated by the magic (computed when absent).
        A session whose code passes no NpuOptimizer entries of its own runs with exactly this one.

    """

    def __init__(
        self,
        snapshot: ConfigSource,
        overrides: dict[str, object],
        backend: str,
        *,
        reference: bool = False,
        cell_config: ConfigSnapshot | None = None,
    ) -> None:
        self.snapshot = as_snapshot(snapshot)
        self.overrides = overrides
        self.backend = backend
        self.reference = reference
        self.cell_config = cell_config if cell_config is not None else self.snapshot.layered(overrides)
        self.sessions: list[tf_session.Session] = []

    def config_for(self, proto: ConfigProto | None) -> ConfigSnapshot:
        """The config of one session: the user's NpuOptimizer entries sit between session and cell."""
        if proto is None or not has_npu_optimizer(proto):
            return self.cell_config

        user_layer = with_exclusions(read_config_proto(proto).changed())
        return self.snapshot.layered(user_layer, self.overrides)

    def make(
        self,
        target: str = "",
        graph: Graph | None = None,
        config: ConfigProto | None = None,
        *,
        interactive: bool = False,
    ) -> tf_session.Session:
        """Replacement for ``tf.compat.v1.Session(target, graph, config)``.

        When the cell passed its own ConfigProto, its other settings (threads, GPU options, ...) are
        kept: the session's ConfigProto is a copy of it with the merged NPU options written in. The
        user's proto object itself is never modified. The options reach the session as one snapshot,
        checked once (a snapshot keeps what its check found).
        """
        from npu_jupyter._runtime import backends

        snapshot = self.config_for(config)
        snapshot.validate()
        base = without_npu_entries(config) if config is not None else None
        session = backends.open_session(
            snapshot, base, graph, self.backend, target=target or "", reference=self.reference
        )
        if interactive:
            _install_as_default(session)
        self.sessions.append(session)
        return session


@contextlib.contextmanager
def swapped_sessions(cell: CellSessions) -> Iterator[CellSessions]:
    """Patch ``tf.compat.v1.Session``/``InteractiveSession`` for the block; always restore them."""
    from npu_jupyter._runtime.session import session_names

    # every namespace: tf.compat.v1, `import tensorflow.compat.v1 as tf` (a different object), TF1's tf
    replaced = session_names.patch(
        _PATCHED, lambda name, original: _factory(cell, original, interactive=name == "InteractiveSession")
    )
    try:
        yield cell
    finally:
        session_names.restore(replaced)


def _factory(cell: CellSessions, original: type, *, interactive: bool) -> Callable[..., object]:
    """A callable that looks like the TF class to the cell's code (name, docstring)."""

    def make_session(target: str = "", graph: Graph | None = None, config: ConfigProto | None = None) -> object:
        if _called_from_npu_jupyter():
            # The emulator runs its rewritten graph in an ordinary TF session of its own; swapping
            # that one too would emulate the emulation.
            return original(target, graph, config)
        return cell.make(target, graph, config, interactive=interactive)

    make_session.__name__ = original.__name__
    make_session.__qualname__ = original.__qualname__
    make_session.__doc__ = f"NPU session (npu_jupyter %%npu cell) in place of {original.__name__}."
    return make_session


def _called_from_npu_jupyter() -> bool:
    """Whether the session is being created by this package (two frames up: past make_session)."""
    caller = sys._getframe(2).f_globals.get("__name__", "")
    return cast("bool", caller == "npu_jupyter" or caller.startswith("npu_jupyter."))


def _install_as_default(session: tf_session.Session) -> None:
    """What ``InteractiveSession`` does: become the default session until closed."""
    context = session.as_default()
    context.__enter__()
    session._npu_default_context = context  # closed with the session by the runtime, or left as TF does
