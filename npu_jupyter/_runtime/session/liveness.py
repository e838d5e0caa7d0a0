"""Which tensors of a TF1 graph may be dead at run time, and which run inside a while-loop frame.

TF1 control flow marks tensors *dead* instead of computing them: a ``Switch`` sends its input to one
output and a dead token to the other, and every op downstream of a dead tensor is dead too, until a
``Merge`` takes whichever input is live. Fetching a dead tensor fails the whole run
(``Retval[N] does not have value``), and gradients of ``tf.cond``, an EMA built on
``initialized_value()`` or a ``tf.cond`` learning-rate warm-up put ``Switch`` ops outside any cond
context. Ops inside a ``tf.while_loop`` frame cannot be fetched at all: they run once per iteration.

This module reads the structure (not Python's control-flow contexts, which imported graphs lack) in
one pass in topological order and answers, per op: may its outputs be dead (``may_be_dead``), and
which frame does it run in (``frame``; ``()`` outside every loop; the innermost frame name last).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from npu_jupyter._tf_types import Graph, Operation, Tensor

    #: A branch a tensor needs to be live: (the Switch's predicate tensor name, the output index taken).
    Branch = tuple[str, int]

_ENTER = frozenset({"Enter", "RefEnter"})
_EXIT = frozenset({"Exit", "RefExit"})
_MERGE = frozenset({"Merge", "RefMerge"})
_SWITCH = frozenset({"Switch", "RefSwitch"})
_NEXT = frozenset({"NextIteration", "RefNextIteration"})


@dataclass
class Liveness:
    """Per op name: the (predicate, branch) pairs it needs to be live, and its while-loop frame path."""

    killers: dict[str, frozenset[Branch]] = field(default_factory=dict)
    frames: dict[str, tuple[str, ...]] = field(default_factory=dict)
    next_iterations: dict[tuple[str, ...], str] = field(default_factory=dict)  # frame path -> one NextIteration op
    switches: set[str] = field(default_factory=set)  # Switch ops outside loops: each output is dead on one branch

    def may_be_dead(self, op: str) -> bool:
        """Whether some Switch outside a loop can leave this op's outputs dead in a run."""
        return op in self.switches or bool(self.killers.get(op))

    def frame(self, op: str) -> tuple[str, ...]:
        """The while-loop frames the op runs in, outermost first; ``()`` outside every loop."""
        return self.frames.get(op, ())


def analyse(graph: Graph) -> Liveness:
    """Liveness of every op of the ``tf.Graph``, cached on the graph per version."""
    cached = getattr(graph, "_npu_emu_liveness", None)
    if cached is not None and cached[0] == graph.version:
        return cast("Liveness", cached[1])
    result = _analyse(graph)
    graph._npu_emu_liveness = (graph.version, result)  # type: ignore[attr-defined]  # cached on the graph
    return result


def _topological(graph: Graph) -> list[Operation]:
    """Ops in an order where each op follows its inputs; loop back edges (NextIteration -> Merge) ignored."""
    ops = graph.get_operations()
    pending: dict[str, int] = {}
    users: dict[str, list[Operation]] = {}
    for op in ops:
        preds = [t.op for t in op.inputs if not (op.type in _MERGE and t.op.type in _NEXT)] + list(op.control_inputs)
        pending[op.name] = len(preds)
        for p in preds:
            users.setdefault(p.name, []).append(op)
    ready = [op for op in ops if pending[op.name] == 0]
    order: list[Operation] = []
    while ready:
        op = ready.pop()
        order.append(op)
        for user in users.get(op.name, ()):
            pending[user.name] -= 1
            if pending[user.name] == 0:
                ready.append(user)
    if len(order) < len(ops):  # a cycle we do not understand: keep the rest in graph order
        placed = {op.name for op in order}
        order.extend(op for op in ops if op.name not in placed)
    return order


def _analyse(graph: Graph) -> Liveness:
    out = Liveness()
    killers, frames = out.killers, out.frames
    empty: frozenset[Branch] = frozenset()
    for op in _topological(graph):
        preds = [t.op for t in op.inputs if not (op.type in _MERGE and t.op.type in _NEXT)]
        controls = list(op.control_inputs)
        frame = max((frames.get(p.name, ()) for p in preds + controls), key=len, default=())
        if op.type in _ENTER:
            frame = (*frame, op.get_attr("frame_name").decode() if op.get_attr("frame_name") else op.name)
        elif op.type in _EXIT:
            frame = frame[:-1]
        frames[op.name] = frame
        if op.type in _NEXT and frame and frame not in out.next_iterations:
            out.next_iterations[frame] = op.name
        if frame:
            killers[op.name] = empty  # inside a loop: captured per iteration, only live iterations run
            continue
        if op.type == "ControlTrigger" or op.type in _EXIT:  # a loop's exit is live once the loop ends
            killers[op.name] = empty
            continue
        sets = [_tensor_killers(killers, t, empty) for t in op.inputs if not (op.type in _MERGE and t.op.type in _NEXT)]
        control = [killers.get(p.name, empty) for p in controls]
        if op.type in _MERGE:
            merged = frozenset.intersection(*sets) if sets else empty  # live when any input is
        else:
            merged = frozenset().union(*sets) if sets else empty
        killers[op.name] = merged.union(*control) if control else merged
        if op.type in _SWITCH:
            out.switches.add(op.name)
    return out


def _tensor_killers(
    killers: dict[str, frozenset[Branch]], tensor: Tensor, empty: frozenset[Branch]
) -> frozenset[Branch]:
    """What a tensor needs to be live: its op's needs, plus the branch a Switch output stands for."""
    base = killers.get(tensor.op.name, empty)
    if tensor.op.type in _SWITCH and len(tensor.op.inputs) == 2:
        return base | {(tensor.op.inputs[1].name, tensor.value_index)}
    return base
