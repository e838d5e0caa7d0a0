"""Which finite flags a traced function's body needs: fewer flags, the same first non-finite op.

A body under a precision-lowering plan gets one "any inf/NaN" flag per float output
(:mod:`.observe_nodes`), and the first false flag that is no by-design value names the first op that
went non-finite (:mod:`.findings`). A flag that can never be that first one is not computed: the
flag of an op that only passes on or picks among the values it reads
(:func:`~npu_jupyter._runtime.value_ops.passes_on_values`: ``Identity``, ``Reshape``, ``Relu``,
``Transpose``, ``ConcatV2`` ...), reading each float input exactly as it is checked, earlier in the
list. Its output holds inf/NaN only where such an input does, so a false flag of it always comes
after a false flag of an input.

The by-design rule (:mod:`npu_jupyter._runtime.observe.by_design`) judges an op by the non-finite
inputs it reads, so a left-out flag must not change a judgement: ops that *may* be by design (a
constant holding inf/NaN, an op computed from constants only, a call, and every op reading one of
these) keep their flags and so do their producers' flags. Every other op is never by design; when one
of them goes non-finite, the first such op overall has its flag (a left-out one always has an earlier
non-finite input of the same kind), and every op before it reads only finite left-out values, so the
finding, the by-design set and what reaches a result are the same as with every flag.

The values a variable write reads and those passed to a call keep their flags too: whether an inf/NaN
left the body is read from them (:mod:`.reach`).

Only the always-on flags are thinned: ``enable_dump_debug`` lists every overflowing op, so it keeps them all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Collection

from npu_jupyter._runtime.functions.reach import result_tensors
from npu_jupyter._runtime.observe.by_design import may_be_by_design
from npu_jupyter._runtime.value_ops import passes_on_values

if TYPE_CHECKING:
    from npu_jupyter._runtime.functions.observe_nodes import Watched
    from npu_jupyter._runtime.functions.rewrite import StoredRefs
    from npu_jupyter._runtime.observe.by_design import Provenance
    from npu_jupyter._tf_types import Graph, Operation


def needed_flags(
    flagged: list[Watched], graph: Graph, refs: StoredRefs, provenance: Provenance, calls: Collection[str]
) -> list[Watched]:
    """``flagged`` (topological order) without the flags that can never be the first false one."""
    design = may_be_by_design(graph, provenance, calls)
    order = {(w.op, w.slot): i for i, w in enumerate(flagged)}
    results = result_tensors(provenance, calls)  # kept: they tell whether an inf/NaN left the body (.reach)
    kept = [
        w for i, w in enumerate(flagged) if (w.op, w.slot) in results or not _implied(w, i, graph, refs, order, design)
    ]
    return kept or flagged[:1]  # one flag at least: "nothing went non-finite" stays a checked answer


def _implied(
    w: Watched, index: int, graph: Graph, refs: StoredRefs, order: dict[tuple[str, int], int], design: set[str]
) -> bool:
    """True when ``w``'s flag is false only after an earlier one is (see the module docstring)."""
    if not passes_on_values(w.op_type) or w.op in design:
        return False
    op = _operation(graph, w.op)
    if op is None or refs.ref(w.op, "output", w.slot) != refs.original(w.op, w.slot):
        return False  # checked through a rounding of its own, which can overflow
    if any(consumer.name in design for consumer in op.outputs[w.slot].consumers()):
        return False  # a possibly by-design op is judged by this value
    floats = [(slot, t) for slot, t in enumerate(op.inputs) if t.dtype.base_dtype.is_floating]
    return bool(floats) and all(
        order.get((t.op.name, t.value_index), index) < index
        and refs.ref(w.op, "input", slot) == refs.ref(t.op.name, "output", t.value_index)
        for slot, t in floats
    )


def _operation(graph: Graph, name: str) -> Operation | None:
    try:
        return graph.get_operation_by_name(name)
    except (KeyError, ValueError):
        return None


__all__ = ["needed_flags"]
