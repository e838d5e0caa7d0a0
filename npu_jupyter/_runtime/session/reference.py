"""The float32 reference a step's drift is measured against: the user's graph as written, same weights.

``reference=True`` runs, beside each emulated step, an unrewritten copy of the graph in its own session
with fixed seeds, after copying the emulated session's variables into it, and reads the same watched
outputs (through the same liveness guards and loop captures, :mod:`.observe_nodes`), so drift covers
dead-branch-prone tensors and every loop iteration too.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tensorflow.python.client.session import Session as _TFSession

from npu_jupyter._runtime.observe.fetch_map import map_feeds
from npu_jupyter._runtime.rewrite import build_private_graph
from npu_jupyter._runtime.session.liveness import analyse
from npu_jupyter._runtime.session.run_graph import RunGraph, build_run_graph
from npu_jupyter._runtime.session.variables import write_variables
from npu_jupyter._runtime.session.watch import Watch, fetch_names, observe_spec, read_values

if TYPE_CHECKING:
    from npu_jupyter._tf_types import ConfigProto, Graph, Operation


@dataclass(frozen=True)
class ReferenceStep:
    """What one emulated step hands its float32 reference: the same weights, data and watched tensors."""

    weights: dict[Any, Any]  # variable -> value before the step
    executed: set[str]  # ops the step ran
    feed_dict: Any  # the user's feeds
    source_values: dict[str, Any]  # what the step's iterators and queues handed out
    watch: list[Watch]  # the tensors the step looks at
    liveness: Any  # guards for tensors that may be dead


class Float32Reference:
    """An unrewritten copy of one graph version and the session that runs it."""

    def __init__(self, graph: Graph, target: str, proto: ConfigProto | None, capture_lock: threading.Lock) -> None:
        self._graph = graph
        self.version = graph.version
        self._private = build_private_graph(graph, None, fixed_seeds=True)
        self._graph_def = graph.as_graph_def(add_shapes=False)
        self._session = _TFSession(target=target, graph=self._private.graph, config=proto)
        self._runs: dict[tuple[Any, ...], RunGraph] = {}
        self._lock = capture_lock
        self.last_ms: float | None = None

    def close(self) -> None:
        """Release the reference session (the graph version it copied is gone)."""
        self._session.close()

    def values(self, step: ReferenceStep) -> dict[tuple[Any, ...], list[Any]]:
        """Watched float outputs of ``step`` in float32 from its weights, the step's data fed."""
        write_variables(self._session, self._private.graph, step.weights)
        outputs = [w for w in step.watch if w.kind == "output" and w.is_float]
        if not outputs:
            return {}
        observe = observe_spec(outputs, [], step.liveness)
        key = (tuple(sorted(step.executed)), observe)
        run = self._runs.get(key)
        if run is None:
            run = self._runs[key] = build_run_graph(
                self._private.graph,
                self._graph,
                None,
                step.executed,
                len(self._runs),
                self._graph_def,
                observe,
                step.liveness,
            )
        keys, names = fetch_names(run, outputs)
        feeds = map_feeds(step.feed_dict, run) or {}
        feeds.update({run.feed_name(name): value for name, value in step.source_values.items()})
        start = time.perf_counter()
        with self._lock:
            run.clear_captures()
            fetched = self._session.run(names, feeds or None) if names else []
            values = read_values(run, outputs, dict(zip(keys, fetched)))
        self.last_ms = (time.perf_counter() - start) * 1000.0
        return values


# Ops that hand out the next element of shared state (an iterator, a queue, a reader): the reference
# session has its own, unstarted copy of that state, so it is fed what the emulated step received.
_SOURCE_TYPES = frozenset(
    {
        "IteratorGetNext",
        "IteratorGetNextSync",
        "QueueDequeue",
        "QueueDequeueV2",
        "QueueDequeueMany",
        "QueueDequeueManyV2",
        "QueueDequeueUpTo",
        "QueueDequeueUpToV2",
        "ReaderRead",
        "ReaderReadV2",
    }
)


# Ops that draw random numbers: the reference session's kernels are not the step's, whatever their seeds
# (each run graph of a session has its own, each advanced by its own runs), so it draws other numbers.
# Fed what the step drew, its drift is the precision's: a dropout mask drawn anew read as a rel. RMSE of
# 0.73 on RandomUniform, the op ranked first (ModelZoo STNet_ID2360's npu_ops.dropout under --reference).
_RANDOM_TYPES = frozenset(
    {
        "RandomUniform",
        "RandomUniformInt",
        "RandomStandardNormal",
        "TruncatedNormal",
        "ParameterizedTruncatedNormal",
        "Multinomial",
        "RandomShuffle",
        "RandomGamma",
        "RandomPoisson",
        "RandomPoissonV2",
    }
)


def data_sources(graph: Graph, executed: set[str]) -> list[str]:
    """Output tensors of the executed data-source and random ops (fetchable kinds only).

    A variant output (a dataset element holding a SparseTensor) can be neither fetched nor fed, and
    one unfed output makes the reference run the source, whose iterator it never initialised: the
    fetchable outputs of the executed ops that decode it (``DeserializeSparse``) are fed instead.
    A random op inside a loop or a cond branch is left to draw its own (one value per step cannot
    stand for every iteration, nor be fetched from a branch that did not run).
    """
    out: list[str] = []
    liveness = None
    for name in sorted(executed):
        op = graph.get_operation_by_name(name)
        if op.type in _SOURCE_TYPES:
            out.extend(_fetchable(op, executed))
        elif op.type in _RANDOM_TYPES:
            liveness = liveness or analyse(graph)
            if not liveness.frame(name) and not liveness.may_be_dead(name):
                out.extend(t.name for t in op.outputs if graph.is_fetchable(t) and graph.is_feedable(t))
    return list(dict.fromkeys(out))


def _fetchable(op: Operation, executed: set[str]) -> list[str]:
    """``op``'s fetchable outputs, and for a variant one those of its executed readers, recursively."""
    out: list[str] = []
    for t in op.outputs:
        kind = t.dtype.base_dtype.name
        if kind == "variant":
            out.extend(
                name for reader in t.consumers() if reader.name in executed for name in _fetchable(reader, executed)
            )
        elif kind != "resource":
            out.append(t.name)
    return out
