"""Non-finite by design: inf/NaN values the float32 program computes too, which are no precision alarm.

A float32 program can hold inf/NaN on purpose: with ``enable_op_determinism()`` TensorFlow's sparse
cross-entropy broadcasts a NaN constant that a ``Select`` masks out for valid labels, and attention
masks fill masked scores with ``-inf`` before a softmax. Reporting those as "became non-finite" or as
an overflow would be a false alarm. The rule (docs/faithfulness.md), per execution of a graph or body,
in topological order: a non-finite output is *by design* when every non-finite value it reads is (a
constant whose float32 value holds inf/NaN, or an earlier by-design output), or when it is computed
from constants alone with nothing rounded on the way (the float32 program computes the same value).
Anything else non-finite was made by an op from finite inputs (a float16 overflow, ``log(0)``) or read
from such an op: an alarm. Traced functions (:mod:`.npu_jupyter._runtime.functions.findings`) and sessions
(:mod:`.observers`, ``enable_dump_debug``) both apply it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

import numpy as np

if TYPE_CHECKING:
    from npu_jupyter._plan.model import Plan
    from npu_jupyter._tf_types import Graph, Operation

_LARGEST_CHECKED_CONSTANT = 1 << 24  # elements; larger constants are not read for inf/NaN
#: Op types writing a variable (prefixes; resource and ref variables): a non-finite value they read
#: reaches the model's state. ``ScatterNd`` and ``ScatterNdNonAliasingAdd`` make a new tensor instead.
_WRITER_PREFIXES = (
    "Assign",
    "ResourceApply",
    "ResourceSparseApply",
    "ResourceScatter",
    "Apply",
    "SparseApply",
    "Scatter",
)
_NOT_WRITERS = frozenset({"ScatterNd", "ScatterNdNonAliasingAdd"})


class Provenance:
    """Where a non-finite value of one graph can come from, read once from the graph and its plan.

    ``float_inputs``: op -> the ``(producer, slot)`` of each float data input. ``nonfinite_constants``:
    constants whose float32 value holds inf/NaN (a NaN filler, a ``-inf`` mask). ``exact_constants``:
    ops computed from constants only, with no rounding on the way. ``sinks``: tensors a variable update
    reads; ``writes``: each variable update (topological order) -> the float tensors it reads;
    ``returns``: the tensors a traced function returns.
    """

    def __init__(self, graph: Graph, plan: Plan, rounded: Iterable[tuple[str, str, int]]) -> None:
        self.float_inputs: dict[str, list[tuple[str, int]]] = {}
        self.nonfinite_constants: set[str] = set()
        self.exact_constants: set[str] = set()
        self.sinks: set[tuple[str, int]] = set()
        self.writes: dict[str, list[tuple[str, int]]] = {}
        self.returns: set[tuple[str, int]] = set()
        touched = {op for op, _, _ in rounded}
        for name in plan.ops:
            op = _op(graph, name)
            if op is None:
                continue
            if op.type == "Const":
                if _non_finite_constant(op):
                    self.nonfinite_constants.add(name)
                if name not in touched:
                    self.exact_constants.add(name)
                continue
            inputs = [(t.op.name, t.value_index) for t in op.inputs if t.dtype.base_dtype.is_floating]
            self.float_inputs[name] = inputs
            if inputs and name not in touched and all(src in self.exact_constants for src, _ in inputs):
                self.exact_constants.add(name)
            if is_variable_write(op.type):
                self.sinks.update(inputs)
                self.writes[name] = inputs
        for tensor in getattr(graph, "outputs", None) or []:
            self.returns.add((tensor.op.name, tensor.value_index))


def design_outputs(
    bad: list[tuple[str, int]],
    provenance: Provenance,
    calls: dict[str, bool] | None = None,
) -> set[tuple[str, int]]:
    """Which of the non-finite outputs ``bad`` (one execution, topological order) are by design.

    ``calls`` maps the call nodes among them to whether their called bodies went non-finite by
    design only (a call's outputs are what its bodies returned).
    """
    seen = set(bad)
    found: set[tuple[str, int]] = set()
    for op, slot in bad:
        if calls is not None and op in calls:
            by_design = calls[op]
        elif op in provenance.nonfinite_constants:
            by_design = True  # the constant itself: its float32 value is inf/NaN
        else:
            inputs = provenance.float_inputs.get(op, [])
            bad_in = [src for src in inputs if src in seen or src[0] in provenance.nonfinite_constants]
            if bad_in:
                by_design = all(src in found or src[0] in provenance.nonfinite_constants for src in bad_in)
            else:
                by_design = op in provenance.exact_constants
        if by_design:
            found.add((op, slot))
    return found


def is_variable_write(op_type: str) -> bool:
    """True for an op type that writes a variable (assign, optimizer apply, scatter; ref or resource)."""
    return op_type.startswith(_WRITER_PREFIXES) and op_type not in _NOT_WRITERS


def may_be_by_design(graph: Graph, provenance: Provenance, calls: Iterable[str] = ()) -> set[str]:
    """Ops whose non-finite output the by-design rule could excuse: its sources and what reads them.

    Sources: constants holding inf/NaN, ops computed from constants only (a finite constant itself is
    never non-finite), and calls (their bodies may go non-finite by design only). A flag left out to
    save work must not be one of these, nor one they read: :func:`design_outputs` judges them by it.
    """
    design = set(provenance.nonfinite_constants) | set(calls)
    design |= {name for name in provenance.exact_constants if _type(graph, name) not in ("Const", None)}
    changed = True
    while changed:  # the plan's order is topological: one pass, the loop only guards an odd order
        changed = False
        for name, inputs in provenance.float_inputs.items():
            if name not in design and any(src in design for src, _ in inputs):
                design.add(name)
                changed = True
    return design


def _non_finite_constant(op: Operation) -> bool:
    """True for a float constant holding inf or NaN in its (float32 program's) value."""
    from tensorflow.python.framework import tensor_util

    if not op.outputs or not op.outputs[0].dtype.base_dtype.is_floating:
        return False
    size = op.outputs[0].shape.num_elements()
    if size is not None and size > _LARGEST_CHECKED_CONSTANT:
        return False  # a weight table, not a filler or a mask: not read into memory again
    try:
        value = tensor_util.MakeNdarray(op.get_attr("value"))
    except Exception:  # noqa: BLE001 - an unreadable constant is judged like any other op
        return False
    return bool(value.size) and not bool(np.isfinite(value).all())


def _op(graph: Graph, name: str) -> Operation | None:
    try:
        return graph.get_operation_by_name(name)
    except (KeyError, ValueError):
        return None


def _type(graph: Graph, name: str) -> str | None:
    op = _op(graph, name)
    return op.type if op is not None else None


__all__ = ["Provenance", "design_outputs", "is_variable_write", "may_be_by_design"]
