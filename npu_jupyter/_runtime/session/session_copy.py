"""The emulator session's private copy of the user's graph and the inner session that runs it.

The user's graph is copied once into a private ``tf.Graph``; an inner TensorFlow session runs it, so
every variable, iterator and queue lives in one session. The copy follows the user's graph: new ops
are added to it (:func:`~npu_jupyter._runtime.session.run_graph.extend_copy`), and it is rebuilt only when it
must be (the graph changed otherwise, or the session's ConfigProto did), carrying initialized
variables over (:mod:`.variables`). A change of phase alone (``accelerate_train_mode``) changes the
plans, not the copy.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

from npu_jupyter._runtime.rewrite import PrivateGraph, build_private_graph
from npu_jupyter._runtime.session.fast_run import FastRuns
from npu_jupyter._runtime.session.run_graph import RunGraph, extend_copy
from npu_jupyter._runtime.session.variables import read_variables, write_variables

if TYPE_CHECKING:
    from typing import Hashable

    from npu_jupyter._tf_types import ConfigProto, Graph, GraphDef, Session

    #: (graph version, config snapshot, reduced phase): what the copy and its plans are made for.
    CopyKey = tuple[int, Hashable, bool]


@dataclass
class Executor:
    """One private copy of the user's graph, the inner session that runs it, and its run graphs."""

    key: CopyKey
    private: PrivateGraph
    session: Session  # the inner session (TensorFlow's own Session class)
    runs: dict[Hashable, RunGraph] = field(default_factory=dict)  # (signature, plan key, Observe) -> RunGraph
    graph_def: GraphDef | None = None  # the user's GraphDef the copy was made from (variants copy from it)
    proto: bytes = b""  # the inner session's ConfigProto, serialized
    fast: FastRuns = field(init=False)  # the inner session's steps as compiled callables

    def __post_init__(self) -> None:
        self.fast = FastRuns(self.session, self.private.graph)


class SessionCopy:
    """Makes, grows and rebuilds the private copy of one user graph (built under a lock).

    ``proto`` gives the inner session's ConfigProto and ``fixed_seeds`` whether random ops get fixed
    seeds (a float32 reference must draw what the step drew); both are read when a copy is made.
    """

    def __init__(
        self, graph: Graph, target: str, proto: Callable[[], ConfigProto], fixed_seeds: Callable[[], bool]
    ) -> None:
        self._graph = graph
        self._target = target
        self._proto = proto
        self._fixed_seeds = fixed_seeds
        self._lock = threading.Lock()
        self.current: Executor | None = None

    def get(self, key: CopyKey) -> Executor:
        """The copy for ``key``: the current one when it fits, else grown or rebuilt.

        Under a lock: a queue-runner thread and the main thread making their first runs at once must
        share one copy (two copies would hold two queues, one filled and one drained, forever).
        """
        ex = self.current
        if ex is not None and ex.key == key:
            return ex
        with self._lock:
            return self._get_locked(key)

    def _get_locked(self, key: CopyKey) -> Executor:
        ex = self.current
        if ex is not None and ex.key == key:
            return ex
        if ex is not None and ex.key[:2] == key[:2]:
            ex.key = key  # only the phase changed: plans differ, the copy and session do not
            return ex
        graph_def = self._graph.as_graph_def(add_shapes=False)
        proto = self._proto()
        proto_bytes = proto.SerializeToString(deterministic=True)
        if ex is not None and ex.proto == proto_bytes and self._extended(ex, graph_def):
            ex.key, ex.graph_def = key, graph_def  # the graph grew or options changed: same copy, same session
            return ex
        from tensorflow.python.client.session import Session as _TFSession

        private = build_private_graph(self._graph, None, fixed_seeds=self._fixed_seeds())
        session = _TFSession(target=self._target, graph=private.graph, config=proto)
        new = Executor(key, private, session, graph_def=graph_def, proto=proto_bytes)
        if ex is not None:
            write_variables(session, private.graph, read_variables(ex.session, ex.private.graph))
            ex.session.close()
        self.current = new
        return new

    def _extended(self, ex: Executor, graph_def: GraphDef) -> bool:
        """Grow ``ex``'s copy by the user's new ops; False (rebuild) when the graph changed otherwise."""
        try:
            return extend_copy(ex.private.graph, ex.graph_def, graph_def, fixed_seeds=self._fixed_seeds())
        except (ValueError, TypeError, KeyError):
            return False

    def close(self) -> None:
        """Close the inner session (the copy is dropped)."""
        ex, self.current = self.current, None
        if ex is not None:
            ex.session.close()


__all__ = ["CopyKey", "Executor", "SessionCopy"]
