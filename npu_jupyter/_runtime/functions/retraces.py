"""A ``tf.function`` TensorFlow traced more than once: each trace has its own report, and each says so.

TensorFlow traces a Python function again when its inputs change shape or dtype (a custom training
loop's smaller last batch is the common case): the new trace is another function, planned and counted
in its own report. Without a word, two reports titled "Calls of valid_step" read as one function's
calls split at random; the note says which trace each one is, with its inputs, and that each counts
only its own calls.
"""

from __future__ import annotations

import sys
import weakref
from dataclasses import dataclass
from types import FrameType
from typing import TYPE_CHECKING

from npu_jupyter._runtime.functions.labels import helper_kind, python_name

if TYPE_CHECKING:
    from npu_jupyter._runtime.report import RunReport
    from npu_jupyter._tf_types import AtomicFunction, TensorShape

#: How many inputs a note lists before it stops.
_SHOWN_INPUTS = 6
_NOTE_START = "TensorFlow traced "


@dataclass(frozen=True)
class Trace:
    """Which ``tf.function`` a traced function was made from (None: not found), and for which inputs."""

    origin: weakref.ref[object] | None
    inputs: str

    def same_origin(self, other: Trace) -> bool:
        """Both traces come from one live ``tf.function``: two models' ``train_step``s are not retraces."""
        if self.origin is None or other.origin is None:
            return False
        mine = self.origin()
        return mine is not None and mine is other.origin()


def trace_of(function: AtomicFunction, frame: FrameType | None = None) -> Trace:
    """The Trace of ``function``, called now: its ``tf.function`` is the innermost one calling on the stack."""
    return Trace(_calling_tf_function(frame or sys._getframe(1)), trace_inputs(function))


def _calling_tf_function(frame: FrameType | None) -> weakref.ref[object] | None:
    """A weak reference to the innermost ``tf.function`` whose call is on the stack from ``frame``."""
    try:
        from tensorflow.python.eager.polymorphic_function.polymorphic_function import Function
    except ImportError:  # another TensorFlow layout: no origin, so no trace is called a retrace
        return None
    while frame is not None:
        candidate = frame.f_locals.get("self")
        if isinstance(candidate, Function):
            return weakref.ref(candidate)
        frame = frame.f_back
    return None


def trace_inputs(function: AtomicFunction) -> str:
    """The inputs a trace was made for, as shapes and dtypes: ``(8, 32, 32, 3) float32, (8,) int32``.

    Captured tensors (variables, constants of the enclosing scope) are left out: they are the same in
    every trace. Empty when the function has no graph to read.
    """
    graph = getattr(function, "graph", None)
    if graph is None:
        return ""
    captured = {id(t) for t in getattr(graph, "internal_captures", ())}
    args = [t for t in graph.inputs if id(t) not in captured]
    shown = [f"{_shape(t.shape)} {t.dtype.name}" for t in args[:_SHOWN_INPUTS]]
    return ", ".join(shown + (["…"] if len(args) > _SHOWN_INPUTS else []))


def _shape(shape: TensorShape) -> str:
    """``(8, 32)``, ``(8,)``, ``()``; an unknown dimension as None, an unknown rank as ``(unknown rank)``."""
    if shape.rank is None:
        return "(unknown rank)"
    dims = shape.as_list()
    return f"({dims[0]},)" if len(dims) == 1 else f"({', '.join(str(d) for d in dims)})"


def note_retraces(reports: dict[str, RunReport], traces: dict[str, Trace], key: str) -> None:
    """Give every report of the ``tf.function`` that ``key`` is a trace of the note of which trace it is.

    ``reports`` in the order the traces were first called; ``traces`` each one's :func:`trace_of`.
    A note written when there were fewer traces is replaced, so each report says the current count.

    TensorFlow's helpers are never traces of the function: a ``tf.function`` whose first call creates
    variables (Keras builds layers and optimizer slots so) also runs ``initialize_variables``, which
    its own call made, so it has the same origin.
    """
    if helper_kind(key) is not None or key not in traces:  # TensorFlow's helpers: traced per caller
        return
    keys = [k for k in reports if k in traces and helper_kind(k) is None and traces[k].same_origin(traces[key])]
    if len(keys) < 2:
        return
    name = python_name(key)
    # An iterator argument is one resource input whatever batches it yields: traces for other batch
    # shapes (fit's validation and evaluate at other batch sizes) list the same inputs.
    alike = (
        "; their graph inputs read alike, so what changed is inside an argument, such as the shape of the "
        "batches an iterator yields"
        if len({traces[k].inputs for k in keys}) == 1
        else ""
    )
    for index, each in enumerate(keys, start=1):
        report = reports[each]
        report.notes = [n for n in report.notes if not n.startswith(_NOTE_START)]
        seen = f" (inputs {traces[each].inputs})" if traces[each].inputs else ""
        report.notes.append(
            f"{_NOTE_START}{name} {len(keys)} times (it traces a tf.function again when its inputs change "
            f"shape or dtype, e.g. a smaller last batch{alike}): this report is trace {index} of {len(keys)}"
            f"{seen} and counts only its calls; each other trace has its own report."
        )


__all__ = ["Trace", "note_retraces", "trace_inputs", "trace_of"]
