"""Per-run graphs: what one ``Session.run`` executes, rewritten with that run's own plan.

The adapter decides per *run graph*, the subgraph one ``Session.run`` reaches (its fetches' ancestors,
cut at fed tensors; ``om_partition_subgraphs_pass.cc`` sees only that graph). Its whole-graph exits
(tests/data/reference/ADAPTER-FACTS.md §3.1) therefore apply per run: ``sess.run(iterator.initializer)`` is a dataset
initialisation graph and stays float32, while ``sess.run(train_op)`` in the same ``tf.Graph`` is planned
and lowered normally. Deciding once for the whole ``tf.Graph`` gets that wrong.

The emulator keeps one private copy of the user's graph (so variables, iterators and queues live in
one session) and, for each run signature whose plan rounds something, adds a *variant*: a copy of that
run's ops under its own name scope with that plan's storage rounding, wired to the shared stateful ops
(variables, iterators, queues, tables: ops that hold state and have no data inputs) and to the fed
placeholders. Adding nodes to a graph a session runs is allowed (the session extends its graph), so
nothing is rebuilt and no state is lost. A run whose plan rounds nothing runs the copy's original
nodes: no overhead.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Collection, Hashable, cast

from npu_jupyter._runtime.observe.dump.format import DumpGraph
from npu_jupyter._runtime.rewrite import Rounding, emulation_of, insert_casts, roundings

if TYPE_CHECKING:
    import numpy as np

    from npu_jupyter._plan.model import Plan
    from npu_jupyter._runtime.observe.by_design import Provenance
    from npu_jupyter._runtime.session.liveness import Liveness
    from npu_jupyter._tf_types import Graph, Operation, Tensor

    #: A watched tensor: (op, "output" | "input", slot).
    WatchKey = tuple[str, str, int]
    #: A GraphDef protobuf being built or copied (its mutating API is protobuf's own, not typed here).
    GraphDefProto = Any
    #: What ``import_graph_def`` maps a copied input to: a shared tensor, or an op for a control input.
    Mapped = Tensor | Operation

VARIANT_PREFIX = "npu_emu_run"
_FEED_TYPES = frozenset({"Placeholder", "PlaceholderWithDefault", "PlaceholderV2"})


@dataclass
class RunGraph:
    """Where one run signature's ops live in the private graph, and what its plan rounds."""

    graph: Graph  # the private tf.Graph
    prefix: str = ""  # "" = the private copy's own nodes; "npu_emu_run<k>/" for a variant
    copied: frozenset[str] = frozenset()  # user op names copied into the variant
    tensor_map: dict[str, str] = field(default_factory=dict)  # user tensor -> rounded tensor (variant names)
    roundings: list[Rounding] = field(default_factory=list)
    guards: dict[WatchKey, tuple[str, str]] = field(default_factory=dict)  # watch key -> (value, taken index)
    snapshots: dict[WatchKey, str] = field(default_factory=dict)  # watch key -> its copy taken before any write
    captures: dict[WatchKey, list[np.ndarray]] = field(default_factory=dict)  # watch key -> values per iteration
    flags: tuple[str, list[str]] | None = None  # (packed all-finite flags tensor, the user tensors in order)
    flag_take: np.ndarray | None = None  # per tensor of flags[1]: its flag's position in the packed tensor
    provenance: Provenance | None = None  # with flags: the by-design facts of this run (observe.by_design)
    keepalive: list[Callable[..., object]] = field(default_factory=list)  # capture callbacks (TF holds them weakly)

    def watched(self, key: WatchKey) -> str:
        """The private tensor to fetch for a directly fetchable watch ``(op, kind, slot)``."""
        snapshot = self.snapshots.get(key)
        if snapshot is not None:
            return snapshot
        op, kind, slot = key
        if kind == "output":
            return self.tensor_name(f"{op}:{slot}")
        return self.graph.get_operation_by_name(self.op_name(op)).inputs[slot].name

    def finite_flags(self, packed: object) -> np.ndarray:
        """One flag per tensor of ``flags[1]``, from the packed tensor's value (a shared flag is repeated)."""
        import numpy as np

        flat = np.asarray(packed).reshape(-1)
        return flat if self.flag_take is None else flat[self.flag_take]

    def clear_captures(self) -> None:
        """Forget the last run's per-iteration values (before the next run of this graph)."""
        for values in self.captures.values():
            del values[:]

    def tensor_name(self, name: str) -> str:
        """The private tensor holding what the device produces for the user's tensor ``name``."""
        mapped = self.tensor_map.get(name)
        if mapped is not None:
            return mapped
        return self.feed_name(name)

    def feed_name(self, name: str) -> str:
        """The private tensor this run reads for the user's ``name`` (before any output rounding)."""
        op, _, slot = name.rpartition(":")
        return f"{self.prefix}{op}:{slot}" if op in self.copied else name

    def op_name(self, name: str) -> str:
        """The private op that runs the user's op ``name`` in this run."""
        return self.prefix + name if name in self.copied else name

    def emulation(self) -> dict[str, str]:
        """Op -> how this run emulates its precision (ops without rounding absent)."""
        return emulation_of(self.roundings)


def executed_ops(graph: Graph, names: list[str], fed: set[str]) -> set[str]:
    """Ops a run of ``names`` executes: the fetch closure over data and control edges, cut at fed tensors."""
    stack: list[Operation] = []
    for name in names:
        element = graph.as_graph_element(name, allow_tensor=True, allow_operation=True)
        stack.append(cast("Operation", element) if hasattr(element, "control_inputs") else element.op)
    return cast("set[str]", op_closure(stack, fed))


def op_closure(stack: list[Operation], fed: Collection[str] = (), limit: int | None = None) -> set[str] | None:
    """Names of the ops in ``stack`` and every op they reach over data and control inputs.

    The walk stops at a fed tensor (a fed placeholder still counts: its value is part of the step, dumped
    as its output). None when more than ``limit`` ops are reached (the caller then needs no set).
    """
    seen: set[str] = set()
    while stack:
        op = stack.pop()
        if op.name in seen:
            continue
        seen.add(op.name)
        if limit is not None and len(seen) > limit:
            return None
        for t in op.inputs:
            if t.name not in fed:
                stack.append(t.op)
            elif t.op.type in _FEED_TYPES:
                seen.add(t.op.name)
        stack.extend(op.control_inputs)
    return seen


def is_shared(op: Operation) -> bool:
    """Ops every run must share rather than copy: placeholders and state holders without data inputs.

    Variables, iterators, queues, tables and readers own state that lives in the session; a copy
    would own other state. They have no data inputs, so sharing them never mixes two plans' roundings.
    """
    if op.type in _FEED_TYPES:
        return True
    if op.inputs or not op.op_def.is_stateful:
        return False
    return any(t.dtype._is_ref_dtype or t.dtype.base_dtype.name == "resource" for t in op.outputs)


@dataclass(frozen=True)
class Observe:
    """What a run must observe that a plain fetch cannot give: watches behind a liveness guard, per
    iteration captures inside loop frames, and the all-finite flag of each float output.
    """

    guarded: tuple[WatchKey, ...] = ()  # (op, kind, slot) whose value may be dead: fetched through a guard
    captured: tuple[tuple[str, str, int, tuple[str, ...]], ...] = ()  # (op, kind, slot, frame path) in a loop
    flagged: tuple[str, ...] = ()  # user output tensor names (float, outside loops) to check for inf/NaN
    snapped: tuple[WatchKey, ...] = ()  # ref variable reads: copied before the step writes the variable

    def __bool__(self) -> bool:
        return bool(self.guarded or self.captured or self.flagged or self.snapped)


def build_run_graph(
    private: Graph,
    user_graph: Graph,
    plan: Plan | None,
    executed: set[str],
    index: int,
    graph_def: GraphDefProto = None,
    observe: Observe | None = None,
    liveness: Liveness | None = None,
) -> RunGraph:
    """The run graph of ``plan`` over ``executed``: the private copy itself, or a variant.

    ``private`` is the private copy (same names as ``user_graph``); ``graph_def`` is the user graph's
    GraphDef when the caller already has it. A variant is built when the plan rounds a tensor the run
    executes or ``observe`` asks for guards, captures or flags (``liveness`` then names the loop frames).
    """
    observe = observe or Observe()
    rounded = roundings(plan, user_graph, executed) if plan is not None else []
    copied = {name for name in executed if not is_shared(user_graph.get_operation_by_name(name))}
    rounded = [r for r in rounded if r.op in copied]
    if not rounded and not observe:
        return RunGraph(private)
    prefix = _free_prefix(private, index)
    sub = sub_graph_def(graph_def if graph_def is not None else user_graph.as_graph_def(), copied, prefix)
    tensor_map = insert_casts(sub, rounded, user_graph)
    run = RunGraph(private, prefix, frozenset(copied), {u: prefix + n for u, n in tensor_map.items()}, rounded)
    from npu_jupyter._runtime.session.observe_nodes import add_observers

    add_observers(sub, run, tensor_map, observe, user_graph, liveness, plan)
    input_map = outside_inputs(sub, copied, private)
    import tensorflow as tf

    with private.as_default():
        tf.graph_util.import_graph_def(sub, input_map=input_map, name=prefix.rstrip("/"))
    return run


def _free_prefix(private: Graph, index: int) -> str:
    """A name scope no op of the private graph uses yet."""
    taken = {op.name.split("/", 1)[0] for op in private.get_operations()}
    k = index
    while f"{VARIANT_PREFIX}{k}" in taken:
        k += 1
    return f"{VARIANT_PREFIX}{k}/"


def sub_graph_def(graph_def: GraphDefProto, copied: set[str], prefix: str) -> GraphDefProto:
    """The copied nodes (and the function library) as a GraphDef, ready for import under ``prefix``.

    Colocation hints are dropped (they may name shared ops outside the copy; the CPU ignores them) and
    while-loop frame names get the prefix so a variant's loop is never the user's loop.
    """
    from tensorflow.core.framework import graph_pb2

    sub = graph_pb2.GraphDef()
    sub.versions.CopyFrom(graph_def.versions)
    sub.library.CopyFrom(graph_def.library)
    for node in graph_def.node:
        if node.name not in copied:
            continue
        new = sub.node.add()
        new.CopyFrom(node)
        if "_class" in new.attr:
            del new.attr["_class"]
        if new.op in ("Enter", "RefEnter") and "frame_name" in new.attr:
            new.attr["frame_name"].s = prefix.encode() + new.attr["frame_name"].s
    return sub


def outside_inputs(sub: GraphDefProto, copied: set[str], private: Graph) -> dict[str, Mapped]:
    """input_map for every input the copy reads from outside it: shared ops and fed producers."""
    input_map: dict[str, Mapped] = {}
    local = {node.name for node in sub.node}  # the copy plus the casts and observers added to it
    for node in sub.node:
        for ref in node.input:
            control = ref.startswith("^")
            name = ref[1:] if control else ref
            op_name = name.split(":")[0]
            if op_name in copied or op_name in local or ref in input_map:
                continue
            if control:
                input_map[ref] = private.get_operation_by_name(op_name)
            else:
                tensor = name if ":" in name else f"{name}:0"
                input_map[ref] = private.get_tensor_by_name(tensor)
    return input_map


def extend_copy(private: Graph, old_def: GraphDefProto, new_def: GraphDefProto, *, fixed_seeds: bool = False) -> bool:
    """Add the ops the user's graph gained since ``old_def`` to the private copy; False when it cannot.

    A ``tf.Graph`` only grows, so a new version is the old ops plus new ones. Importing just the new
    ops into the copy (wired to the copy's existing tensors) keeps the inner session and with it every
    variable, iterator position and queue, and a queue-runner thread blocked in that session keeps
    running. The copy is rebuilt only when this returns False.
    """
    old = {node.name for node in old_def.node}
    new_names = {node.name for node in new_def.node}
    if not old <= new_names:
        return False
    added = new_names - old
    if not added:
        return True
    sub = sub_graph_def(new_def, added, "")
    if fixed_seeds:
        from npu_jupyter._runtime.rewrite import fix_seeds

        fix_seeds(sub)
    input_map = outside_inputs(sub, added, private)
    controls = _detach_outside_controls(sub, input_map)
    import tensorflow as tf

    with private.as_default():
        tf.graph_util.import_graph_def(sub, input_map=input_map, name="")
    for name, ops in controls.items():
        private.get_operation_by_name(name)._add_control_inputs(ops)
    return True


def _detach_outside_controls(sub: GraphDefProto, input_map: dict[str, Mapped]) -> dict[str, list[Operation]]:
    """Take control inputs on ops outside ``sub`` out of it (and of ``input_map``); re-added after import.

    ``import_graph_def`` maps control inputs only into a named scope, and the grown ops must keep the
    user's names (``global_variables_initializer()`` made after a run is a NoOp on existing ops).
    """
    outside = {ref: cast("Operation", input_map.pop(ref)) for ref in [r for r in input_map if r.startswith("^")]}
    detached: dict[str, list[Operation]] = {}
    for node in sub.node:
        if not any(ref in outside for ref in node.input):
            continue
        detached[node.name] = [outside[ref] for ref in node.input if ref in outside]
        kept = [ref for ref in node.input if ref not in outside]
        del node.input[:]
        node.input.extend(kept)
    return detached


class StepCounter:
    """Steps per run graph, as the device counts iterations per compiled graph, and the session's total.

    Each distinct run signature (fetches + fed tensors) is its own graph, numbered in the order first
    run, with its own step counter (``dump_step`` selects by it).
    """

    def __init__(self) -> None:
        self.total = 0
        self._graphs: dict[Hashable, list[int]] = {}  # run signature -> [graph id, runs so far]
        self._lock = threading.Lock()

    def count(self, names: list[str], fed: tuple[str, ...]) -> tuple[int, int, DumpGraph]:
        """Reserve this run's steps: (session-wide step, this graph's step, the graph) under a lock."""
        signature = (tuple(names), tuple(fed))
        with self._lock:
            step = self.total
            self.total += 1
            entry = self._graphs.get(signature)
            if entry is None:
                entry = self._graphs[signature] = [len(self._graphs), 0]
            graph_step = entry[1]
            entry[1] += 1
        return step, graph_step, DumpGraph(entry[0], signature[0], signature[1])
