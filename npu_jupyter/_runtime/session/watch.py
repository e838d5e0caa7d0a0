"""What an observed step looks at: one named record per watched tensor, and how to read it.

A watch is a tensor of the user's op (an output or an input slot) that dump, overflow detection or
drift needs. How it is read depends on where it runs (see :mod:`.liveness`): ``"fetch"`` directly,
``"guard"`` through a liveness guard when it may be dead, ``"capture"`` per iteration when it runs in
a while-loop frame (:mod:`.observe_nodes`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, NamedTuple

from npu_jupyter._runtime.observe.by_design import is_variable_write
from npu_jupyter._runtime.session.liveness import Liveness
from npu_jupyter._runtime.session.run_graph import Observe

if TYPE_CHECKING:
    import numpy as np

    from npu_jupyter._plan.model import Plan
    from npu_jupyter._runtime.session.run_graph import RunGraph
    from npu_jupyter._tf_types import Graph, Tensor

    #: How a "fetch" or "guard" watch's value comes back from the session: ("fetch" | "guard", op, kind, slot).
    FetchKey = tuple[str, str, str, int]

_UNFETCHABLE = frozenset({"resource", "variant", "string"})
STATE_TYPES = frozenset({"VariableV2", "Variable", "VarHandleOp"})
_ENTER = frozenset({"Enter", "RefEnter", "NextIteration", "RefNextIteration"})  # not captured in a frame


class Watch(NamedTuple):
    """One tensor to look at in a step."""

    op: str
    kind: str  # "output" | "input"
    slot: int
    decided_dtype: str  # the plan's dtype for the slot ("" when the plan has none)
    is_float: bool
    mode: str = "fetch"  # "fetch" | "guard" | "capture"
    frame: tuple[str, ...] = ()  # the loop frames of a "capture" watch
    aliases_state: bool = False  # a ref variable's read: its buffer is the variable's (see reads_state_buffer)

    @property
    def key(self) -> tuple[str, str, int]:
        """(op, kind, slot): how a watched tensor is keyed in dumps and drift."""
        return (self.op, self.kind, self.slot)


def watch_list(
    graph: Graph, plan: Plan, executed: set[str], fed: tuple[str, ...], kinds: set[str], liveness: Liveness
) -> list[Watch]:
    """Every tensor of ``kinds`` ("output", "input") of the executed ops the plan decides."""
    watch: list[Watch] = []
    for name, decision in plan.ops.items():
        if name not in executed:
            continue
        op = graph.get_operation_by_name(name)
        if op.type in STATE_TYPES:
            continue  # a variable: state, not a result
        frame = liveness.frame(name)
        if frame and op.type in _ENTER:
            continue  # Enter runs in the first iteration only; NextIteration is its input op's value
        if "output" in kinds:
            for slot, t in enumerate(op.outputs):
                if fetchable(graph, t, fed, bool(frame)):
                    want = decision.output_dtypes[slot] if slot < len(decision.output_dtypes) else ""
                    _add(watch, name, "output", slot, want, t, frame, liveness.may_be_dead(name))
        if "input" in kinds:
            for slot, t in enumerate(op.inputs):
                if frame and t.op.type in _ENTER:
                    # A Merge's loop inputs: Enter's value is the outer op's, NextIteration's is its input
                    # op's (captured there). Capturing NextIteration's output would also gate the frame's
                    # NextIteration on itself: a cycle the graph import refuses.
                    continue
                if not t.dtype._is_ref_dtype and fetchable(graph, t, fed, bool(frame)):  # a ref is state
                    want = decision.input_dtypes[slot] if slot < len(decision.input_dtypes) else ""
                    _add(watch, name, "input", slot, want, t, frame, _input_may_be_dead(liveness, t))
    return watch


def _input_may_be_dead(liveness: Liveness, tensor: Tensor) -> bool:
    return liveness.may_be_dead(tensor.op.name)


def _add(
    watch: list[Watch], op: str, kind: str, slot: int, want: str, tensor: Tensor, frame: tuple[str, ...], dead: bool
) -> None:
    is_ref = tensor.dtype._is_ref_dtype
    is_float = tensor.dtype.base_dtype.is_floating
    aliases = reads_state_buffer(tensor)
    if frame:
        if not is_ref:
            watch.append(Watch(op, kind, slot, want, is_float, "capture", frame, aliases))
    elif dead:
        if not is_ref:
            watch.append(Watch(op, kind, slot, want, is_float, "guard", aliases_state=aliases))
    else:
        watch.append(Watch(op, kind, slot, want, is_float, aliases_state=aliases))


def reads_state_buffer(tensor: Tensor) -> bool:
    """Whether ``tensor`` is a ref variable's read (``v/read``): an Identity that hands on the variable's buffer.

    Fetched after the step, such a tensor holds the variable as this step's updates left it, not the
    value the step's ops read: a dump showed ``w/read`` after the optimizer's update while ``MatMul``
    read it before. The run graph copies it before any write (:mod:`.observe_nodes`).
    """
    op = tensor.op
    return op.type == "Identity" and any(t.dtype._is_ref_dtype for t in op.inputs)


def observe_spec(watch: list[Watch], flagged: list[str], liveness: Liveness) -> Observe:
    """The guards, captures and flags a run graph needs for ``watch`` and the finite flags."""
    guarded = {w.key for w in watch if w.mode == "guard"}
    snapped = tuple(sorted({w.key for w in watch if w.aliases_state and w.mode != "capture"}))
    for name in flagged:
        op, _, slot = name.rpartition(":")
        if liveness.may_be_dead(op):
            guarded.add((op, "output", int(slot)))
    captured = sorted({(*w.key, w.frame) for w in watch if w.mode == "capture"})
    return Observe(tuple(sorted(guarded)), tuple(captured), tuple(flagged), snapped)


def float_fetches(graph: Graph, names: list[str]) -> list[str]:
    """The fetched float tensors of a run (user names): the values whose inf/NaN a report explains."""
    return [name for name in names if ":" in name and graph.get_tensor_by_name(name).dtype.base_dtype.is_floating]


def writes_variables(graph: Graph, executed: set[str]) -> bool:
    """Whether a run writes a variable: a training step fetching only its train op still gets the flags
    that say whether it wrote inf/NaN into a variable (``run_notes.written_non_finite``).
    """
    return any(is_variable_write(graph.get_operation_by_name(name).type) for name in executed)


def finite_flag_tensors(
    graph: Graph, plan: Plan, executed: set[str], fed: tuple[str, ...], liveness: Liveness
) -> list[str]:
    """Float outputs (outside loop frames) of the executed ops, in the plan's (topological) order."""
    out: list[str] = []
    for name in plan.ops:
        if name not in executed or liveness.frame(name):
            continue
        op = graph.get_operation_by_name(name)
        if op.type in STATE_TYPES:
            continue
        for t in op.outputs[:3] if op.type.startswith("FusedBatchNorm") else op.outputs:  # not reserve space
            if t.dtype.base_dtype.is_floating and not t.dtype._is_ref_dtype and fetchable(graph, t, fed):
                out.append(t.name)
    return out


def fetchable(graph: Graph, tensor: Tensor, fed: tuple[str, ...], captured: bool = False) -> bool:
    """A tensor a run can hand back: not a handle, string or unfed placeholder.

    Inside a loop frame TensorFlow marks tensors unfetchable; those are ``captured`` per iteration.
    """
    if tensor.dtype.base_dtype.name in _UNFETCHABLE:
        return False
    if tensor.op.type == "Placeholder" and tensor.name not in fed:
        return False
    return captured or graph.is_fetchable(tensor)


def read_values(
    run: RunGraph,
    watch: list[Watch],
    fetched: Mapping[FetchKey, Any],  # what TensorFlow fetched: an array, or a guard's (value, index) pair
) -> dict[tuple[str, str, int], list[np.ndarray]]:
    """Watch key -> the step's values (one per live iteration; empty when the tensor was dead).

    ``fetched`` holds what the session returned for the run graph's fetch names of "fetch" and
    "guard" watches (see :func:`fetch_names`).
    """
    values: dict[tuple[str, str, int], list[np.ndarray]] = {}
    for w in watch:
        if w.mode == "fetch":
            fetch_key = ("fetch", *w.key)  # named: mypy misreads a starred tuple inside [] as 3.11 syntax
            values[w.key] = [fetched[fetch_key]]
        elif w.mode == "guard":
            guard_key = ("guard", *w.key)
            value, index = fetched[guard_key]
            values[w.key] = [value] if int(index) == 0 else []
        else:
            values[w.key] = list(run.captures.get(w.key, ()))
    return values


def fetch_names(run: RunGraph, watch: list[Watch]) -> tuple[list[FetchKey], list[str | list[str]]]:
    """(keys, private names) to add to the session's fetches for the "fetch" and "guard" watches."""
    keys: list[FetchKey] = []
    names: list[str | list[str]] = []
    for w in watch:
        if w.mode == "fetch":
            keys.append(("fetch", *w.key))
            names.append(run.watched(w.key))
        elif w.mode == "guard" and w.key in run.guards:
            keys.append(("guard", *w.key))
            names.append(list(run.guards[w.key]))
    return keys, names
