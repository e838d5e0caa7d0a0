"""A ``tf.function`` TensorFlow traced more than once: each trace has its own report, and each says so.

TensorFlow traces a Python function again when its inputs change shape or dtype (a custom training
loop's smaller last batch is the common case): the new trace is another function, planned and counted
in its own report. Without a word, two reports titled "Calls of valid_step" read as one function's
calls split at random; the note says which trace each one is, with its inputs, and that each counts
only its own calls.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from npu_jupyter._runtime.functions.labels import helper_kind, python_name

if TYPE_CHECKING:
    from npu_jupyter._runtime.report import RunReport
    from npu_jupyter._tf_types import AtomicFunction, TensorShape

#: How many inputs a note lists before it stops.
_SHOWN_INPUTS = 6
_NOTE_START = "TensorFlow traced "


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


def note_retraces(reports: dict[str, RunReport], inputs: dict[str, str]) -> None:
    """Give every report of a Python function traced more than once the note of which trace it is.

    ``reports`` in the order the traces were first called; ``inputs`` each trace's :func:`trace_inputs`.
    A note written when there were fewer traces is replaced, so each report says the current count.
    """
    groups: dict[str, list[str]] = {}
    for key in reports:
        if helper_kind(key) is None:  # TensorFlow's own helpers are traced once per caller by design
            groups.setdefault(python_name(key), []).append(key)
    for name, keys in groups.items():
        if len(keys) < 2:
            continue
        for index, key in enumerate(keys, start=1):
            report = reports[key]
            report.notes = [n for n in report.notes if not n.startswith(_NOTE_START)]
            seen = f" (inputs {inputs[key]})" if inputs.get(key) else ""
            report.notes.append(
                f"{_NOTE_START}{name} {len(keys)} times (it traces a tf.function again when its inputs change "
                f"shape or dtype, e.g. a smaller last batch): this report is trace {index} of {len(keys)}{seen} and "
                "counts only its calls; each other trace has its own report."
            )


__all__ = ["note_retraces", "trace_inputs"]
