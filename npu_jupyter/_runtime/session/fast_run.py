"""The inner session's steps as compiled callables: what ``Session.run`` re-derives every call, done once.

``tf.compat.v1.Session.run`` rebuilds its fetch handler (walking the fetch structure, looking every
name up in the graph) and converts and shape-checks every feed on each call: per step, that is a
sizeable part of a small graph's time. An emulated step runs the same private fetches and feeds
again and again, so it runs them through a callable of the inner session instead
(``Session._make_callable_from_options``, TensorFlow's ``MakeCallable``), made once per run graph,
fetch structure and fed tensors, with TensorFlow's own fetch handler kept to build the results.
The callable is made on the first run whose feeds it can take, not before: making one builds a
TensorFlow executor for the run graph (tens of seconds for a large model's rewritten graph), and a
step whose feeds always go through ``Session.run`` (a script feeding a Python float learning rate)
would build a second executor there. A step that ran through ``Session.run`` before it had a callable
keeps running there, so no run graph gets two executors for a few microseconds per step.

Only steps a callable runs exactly as ``Session.run`` would take this path: every fetch a graph name
(no SparseTensor or handle), no fetched tensor also fed, every fed value a numpy array of the fed
tensor's own dtype or a Python float, int or bool (converted as ``Session.run`` converts it), of a
compatible shape, no run options or metadata. Anything else (and any step
whose feeds need ``Session.run``'s conversion or its error for a wrong shape) goes through
``Session.run`` unchanged. Errors are raised through the session's own ``_do_call``, so an op's
failure reads as it does from ``Session.run``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Hashable, Mapping, cast

import numpy as np

if TYPE_CHECKING:
    from npu_jupyter._tf_types import Graph, Session

# Callables per executor are dropped whole past this many (fetch structures are few in practice).
_LIMIT = 256


@dataclass
class _Step:
    """One step: what each feed must be, the fetch handler that shapes its results, and its callable.

    ``call`` is made on the step's first run whose feeds fit (:meth:`FastRuns.run`), from ``options``.
    """

    options: object  # CallableOptions: the fed, fetched and target names
    build: Callable[[Session, list[object]], list[object]]  # TensorFlow's _FetchHandler.build_results
    feeds: tuple[tuple[np.dtype, tuple[int | None, ...] | None], ...]  # (dtype, static shape) per fed tensor
    call: Callable[..., list[object]] | None = None


def structure_key(fetches: object) -> Hashable | None:
    """A hashable spelling of a fetch structure whose leaves are all graph names; None otherwise."""
    if isinstance(fetches, str):
        return fetches
    if isinstance(fetches, (list, tuple)):
        parts = tuple(structure_key(f) for f in fetches)
        return None if None in parts else (type(fetches), parts)
    if isinstance(fetches, dict):
        values = tuple(structure_key(v) for v in fetches.values())
        return None if None in values else (type(fetches), tuple(fetches), values)
    return None


class FastRuns:
    """The compiled steps of one inner session, made on first use."""

    def __init__(self, session: Session, graph: Graph) -> None:
        self._session = session
        self._graph = graph
        self._steps: dict[Hashable, _Step | None] = {}  # None: this step cannot run as a callable

    def run(self, fetches: list[object], feeds: Mapping[str, object] | None) -> list[object] | None:
        """The results of ``fetches`` (a list) run as a callable; None when ``Session.run`` must run them."""
        shape = structure_key(fetches)
        if shape is None:
            return None
        fed = tuple(feeds) if feeds else ()
        key = (shape, fed)
        if key in self._steps:
            step = self._steps.get(key)  # .get: another thread may have just cleared the cache (then remade)
        else:  # (a queue runner's thread may make the same step at the same time: harmless)
            step = self._make(fetches, fed)
            if len(self._steps) >= _LIMIT:
                self._steps.clear()
            self._steps[key] = step
        if step is None:
            return None
        values = [_fitted(v, spec) for v, spec in zip(feeds.values(), step.feeds)] if feeds else []
        if any(v is None for v in values):
            if step.call is None:  # Session.run builds this run graph's executor: it stays the only one
                self._steps[key] = None
            return None
        if step.call is None:  # (two threads may make it at once: harmless, one is kept)
            step.call = self._session._make_callable_from_options(step.options)  # type: ignore[attr-defined]
        do_call: Callable[..., list[object]] = self._session._do_call  # type: ignore[attr-defined]  # TF's error rewriting
        return step.build(self._session, do_call(step.call, *values))

    def _make(self, fetches: object, fed: tuple[str, ...]) -> _Step | None:
        """The step (its callable made later), or None when a callable would not run it as ``Session.run`` does."""
        from tensorflow.core.protobuf import config_pb2
        from tensorflow.python.client.session import _FetchHandler

        graph = self._graph
        handler = _FetchHandler(graph, fetches, {})
        fetched = handler.fetches()
        if handler._fetch_handles or {t.name for t in fetched} & set(fed):  # session handles; a fed fetch
            return None
        specs = []
        for name in fed:
            tensor = graph.get_tensor_by_name(name)
            if not graph.is_feedable(tensor):
                return None  # Session.run raises its own error for it
            dims = tensor.shape.as_list() if tensor.shape.rank is not None else None
            specs.append((np.dtype(tensor.dtype.as_numpy_dtype), None if dims is None else tuple(dims)))
        options = config_pb2.CallableOptions()
        options.feed.extend(fed)
        options.fetch.extend(t.name for t in fetched)
        options.target.extend(op.name for op in handler.targets())
        return _Step(options, handler.build_results, tuple(specs))


#: Python scalars a script feeds (a learning rate, a training flag, a step number), converted as
#: ``Session.run`` converts them: ``np.asarray(value, dtype=<the fed tensor's numpy dtype>)``.
_SCALARS = (float, int, bool)


def _fitted(value: object, spec: tuple[np.dtype, tuple[int | None, ...] | None]) -> np.ndarray | None:
    """The array the callable is fed for ``value``, or None when ``Session.run`` must take the feed.

    A numpy array must already have the fed tensor's dtype. A Python float, int or bool fed to a numeric
    or bool tensor is converted as ``Session.run`` converts it; an int or bool the dtype cannot hold
    exactly, and any scalar fed to a string tensor, is left to ``Session.run``, which raises its own
    TypeError for it. The result's shape must fit the tensor's static shape, else
    ``Session.run`` raises its own ValueError.
    """
    dtype, dims = spec
    kind = type(value)
    if kind is np.ndarray:
        array = cast("np.ndarray", value)
        if array.dtype != dtype:
            return None
    elif kind in _SCALARS and dtype.kind != "O":  # string tensors: Session.run's own check and error
        try:
            array = np.asarray(value, dtype=dtype)
        except (TypeError, ValueError, OverflowError):
            return None
        if kind is not float and array.item() != value:  # Session.run refuses an int (or bool) it would change
            return None
    else:
        return None
    if dims is None:
        return array
    shape = array.shape
    fits = len(shape) == len(dims) and all(d is None or d == s for d, s in zip(dims, shape))
    return array if fits else None
