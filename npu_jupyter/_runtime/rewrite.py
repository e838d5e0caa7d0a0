"""Build the private graph the emulator runs: a copy of the user's graph with storage rounding.

The emulator never edits the user's graph (that would bump its version, surprise the user and leak
into their checkpoints). It copies the graph into a private ``tf.Graph`` and, where the plan lowers an
op's precision, rounds the float32 tensors that op reads and writes through ``Cast`` to float16 or
bfloat16 and back ("storage rounding"). Every op keeps computing in float32, so no half kernels are
needed and every op type works; the numbers are those of a device that stores the tensor in half
precision. Where the rounding kernel is built (:mod:`.round_kernel`), one ``NpuEmuRound`` node does
the round trip instead of two Casts, with the same values. Rounding nodes carry the marker
:data:`ROUND_MARKER` in their names so profiles and dumps can strip them and name the user's op instead.

A float32-preserving plan produces a copy with no rewrite at all: same nodes, same names, same cost.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Collection, Sequence

from npu_jupyter._runtime import round_kernel
from npu_jupyter._runtime.value_ops import HALF_EXACT
from npu_jupyter._tensorflow_import import require_tensorflow

if TYPE_CHECKING:  # pragma: no cover
    from npu_jupyter._plan.model import Plan
    from npu_jupyter._tf_types import ArgDef, Graph, GraphDef, NodeDef, Operation, Tensor

ROUND_MARKER = "_npu_emu_round"
_HALF = {"float16", "bfloat16"}
_WIDE = {"float32", "float64"}
# A fixed seed pair for random ops built without one, so a float32 reference copy and the emulated copy
# draw the same numbers (only used when drift against a reference is requested).
_SEED = 87654321


@dataclass
class Rounding:
    """One tensor the rewrite rounds: where, to which dtype, and why (for the report)."""

    op: str
    kind: str  # "input" | "output"
    slot: int
    tensor: str  # the user's tensor name that is rounded
    dtype: str


@dataclass
class PrivateGraph:
    """The copy the emulator runs, with the name map from the user's tensors to the copy's."""

    graph: Graph
    tensor_map: dict[str, str] = field(default_factory=dict)  # user tensor name -> rounded tensor name
    roundings: list[Rounding] = field(default_factory=list)

    def emulation(self) -> dict[str, str]:
        """Op -> how its precision is emulated, for the report (ops without rounding are absent)."""
        return emulation_of(self.roundings)

    def tensor_name(self, name: str) -> str:
        """The copy's tensor that holds what the device would produce for the user's ``name``."""
        return self.tensor_map.get(name, name)

    def op_name(self, name: str) -> str:
        """The copy's op for the user's op ``name`` (the same name: the copy keeps every name)."""
        return name

    def feed_name(self, name: str) -> str:
        """The tensor to feed for the user's ``name`` (feeding the original also feeds its rounding)."""
        return name


def emulation_of(rounded: list[Rounding]) -> dict[str, str]:
    """Op -> how its precision is emulated, e.g. ``"storage rounding float16 (in 0,1; out 0)"``."""
    slots: dict[str, dict[tuple[str, str], list[int]]] = {}
    for r in rounded:
        slots.setdefault(r.op, {}).setdefault((r.dtype, r.kind), []).append(r.slot)
    out = {}
    for op, parts in slots.items():
        dtypes = sorted({dtype for dtype, _ in parts})
        where = "; ".join(
            f"{'in' if kind == 'input' else 'out'} {','.join(map(str, s))}"
            for (_, kind), s in sorted(parts.items(), key=lambda kv: kv[0][1])
        )
        out[op] = f"storage rounding {'/'.join(dtypes)} ({where})"
    return out


def needs_rewrite(plan: Plan, graph: Graph) -> bool:
    """True when some op of ``plan`` reads or writes a float32 tensor in half precision."""
    return bool(roundings(plan, graph))


def build_private_graph(graph: Graph, plan: Plan | None, *, fixed_seeds: bool = False) -> PrivateGraph:
    """Copy ``graph`` into a new ``tf.Graph``, rounding what ``plan`` lowers to half precision.

    ``plan`` None (or a plan that changes no float32 tensor) gives a plain copy.
    """
    tf = require_tensorflow("the emulator backend")

    graph_def = graph.as_graph_def(add_shapes=False)
    rounded = roundings(plan, graph) if plan is not None else []
    tensor_map = insert_casts(graph_def, rounded) if rounded else {}
    if fixed_seeds:
        fix_seeds(graph_def)
    private = tf.Graph()
    with private.as_default():
        tf.graph_util.import_graph_def(graph_def, name="")
    return PrivateGraph(private, tensor_map, rounded)


def roundings(plan: Plan, graph: Graph, ops: Collection[str] | None = None) -> list[Rounding]:
    """Every float32 input/output the plan wants in half precision, ops in plan order.

    ``ops`` (a set of op names) limits the result to the ops one run executes. Slots the device keeps
    in float32 whatever the op's precision are never rounded (:func:`device_slots`).
    """
    out: list[Rounding] = []
    for name, decision in plan.ops.items():
        if ops is not None and name not in ops:
            continue
        try:
            op = graph.get_operation_by_name(name)
        except (KeyError, ValueError):
            continue
        lowered = [
            (slot, want)
            for slot, want in enumerate(decision.input_dtypes)
            if slot < len(op.inputs) and _lowers(op.inputs[slot], want)
        ]
        lowered_out = [
            (slot, want)
            for slot, want in enumerate(decision.output_dtypes)
            if slot < len(op.outputs) and _lowers(op.outputs[slot], want)
        ]
        if not (lowered or lowered_out):
            continue
        inputs, outputs = device_slots(op)
        out.extend(
            Rounding(name, "input", slot, op.inputs[slot].name, want) for slot, want in lowered if slot in inputs
        )
        out.extend(
            Rounding(name, "output", slot, op.outputs[slot].name, want) for slot, want in lowered_out if slot in outputs
        )
    return out


def device_slots(op: Operation) -> tuple[set[int], set[int]]:
    """(input slots, output slots) whose dtype follows the op's compute precision on the device.

    An Ascend kernel lowered to float16 computes its main tensors (those of the OpDef's ``T``
    attribute) in float16, but keeps float32 wherever the op's signature fixes another type: the
    statistics and scale/offset of ``FusedBatchNormV3`` (attribute ``U``), a variable's stored value
    (``AssignVariableOp``/``ReadVariableOp`` take ``dtype``), a ``Cast``'s other side. Rounding those
    would make an emulated run lose precision (or overflow) where the device does not, so only the
    ``T`` slots are rounded; an op without a ``T`` attribute is rounded wholly only when it is stateless
    and has a single type attribute.
    """
    op_def = op.op_def
    type_attrs = [a.name for a in op_def.attr if a.type == "type"]
    if "T" in type_attrs:
        keep = "T"
    elif len(type_attrs) == 1 and not op_def.is_stateful:
        keep = type_attrs[0]
    else:
        return set(), set()
    return _slots_of(op, op_def.input_arg, keep), _slots_of(op, op_def.output_arg, keep)


def _lowers(tensor: Tensor, want: str) -> bool:
    dtype = tensor.dtype
    return want in _HALF and not dtype._is_ref_dtype and dtype.name in _WIDE


def _slots_of(op: Operation, args: Sequence[ArgDef], keep: str) -> set[int]:
    """The flattened slots of ``args`` whose type comes from attribute ``keep``."""
    slots: set[int] = set()
    index = 0
    for arg in args:
        if arg.number_attr:
            count = int(op.get_attr(arg.number_attr))
        elif arg.type_list_attr:
            count = len(op.get_attr(arg.type_list_attr))
        else:
            count = 1
        if arg.type_attr == keep:
            slots.update(range(index, index + count))
        index += count
    return slots


def insert_casts(graph_def: GraphDef, roundings: list[Rounding], graph: Graph | None = None) -> dict[str, str]:
    """Add Cast pairs to ``graph_def`` in place; return user tensor -> rounded tensor for outputs.

    With the user's ``graph``, roundings that cannot change a value are left out (:func:`held_values`):
    same numbers, fewer Cast nodes. The ``roundings`` (what the report says is rounded) stay as they are.
    """
    nodes = {node.name: node for node in graph_def.node}
    dtypes = _float_dtype_enums()
    fused = round_kernel.in_use()
    tensor_map: dict[str, str] = {}
    held, kept = held_values(graph, roundings) if graph is not None else ({}, set())
    for r in roundings:
        if r.kind == "output" and r.tensor not in kept:
            src = r.tensor
            base = f"{r.op}/{ROUND_MARKER}_out{r.slot}"
            if nodes[r.op].op in _NEXT_ITERATION:
                _round_before(graph_def, nodes[r.op], base, r.dtype, dtypes, fused)
                continue
            tensor_map[src] = _add_round_trip(graph_def, base, _input_ref(src), r.dtype, dtypes, fused)
    # Consumers read outputs through their rounding (what the device stored), then inputs are rounded.
    if tensor_map:
        _rewire_consumers(graph_def, tensor_map)
    shared: dict[tuple[str, str], str] = {}  # (tensor read, dtype) -> its rounding, one per tensor
    for r in roundings:
        if r.kind != "input":
            continue
        node = nodes[r.op]
        data = [i for i, ref in enumerate(node.input) if not ref.startswith("^")]
        index = data[r.slot]
        current = node.input[index]
        if ROUND_MARKER in current and current.endswith(ROUND_MARKER_SUFFIX[r.dtype]):
            continue  # already read through a rounding to the same dtype: idempotent
        if held.get(r.tensor) == r.dtype and current == _input_ref(r.tensor):
            continue  # the producer's value already is a value of that dtype
        rounded = shared.get((current, r.dtype))
        if rounded is None:
            base = f"{r.op}/{ROUND_MARKER}_in{r.slot}"
            rounded = _input_ref(_add_round_trip(graph_def, base, current, r.dtype, dtypes, fused))
            shared[(current, r.dtype)] = rounded
        node.input[index] = rounded
    return tensor_map


ROUND_MARKER_SUFFIX = {"float16": "_f16/back", "bfloat16": "_bf16/back"}
_NEXT_ITERATION = frozenset({"NextIteration", "RefNextIteration"})


def _round_before(
    graph_def: GraphDef, node: NodeDef, base: str, dtype: str, enums: dict[str, int], fused: bool
) -> None:
    """Round a NextIteration's output by rounding the value it passes on, before it.

    A loop's Merge must read its back edge straight from the NextIteration (TensorFlow's graph import
    refuses any other cycle: "N nodes in a cycle"), so no Cast may sit between the two. NextIteration
    hands on its input unchanged, so the rounded input is the rounded output: same values, and every
    reader of the output, the Merge included, reads it as it is.
    """
    data = next(i for i, ref in enumerate(node.input) if not ref.startswith("^"))
    node.input[data] = _input_ref(_add_round_trip(graph_def, base, node.input[data], dtype, enums, fused))


def held_values(graph: Graph, roundings: list[Rounding]) -> tuple[dict[str, str], set[str]]:
    """(tensor -> the half dtype its values are already exact in, rounded outputs that need no Cast).

    An op's output is exact in a half dtype when it is rounded to it, or when the op only passes on or
    picks among its float inputs' values (:data:`~npu_jupyter._runtime.value_ops.HALF_EXACT`) and each of those inputs is read
    through a rounding to that dtype or is itself exact in it. Rounding such an output again is the
    identity (float32 -> float16 -> float32 of a float16 value, inf and NaN included), so its Cast pair
    is left out, and so are input roundings of such values. ``roundings`` come in plan (topological)
    order, so a producer is decided before its consumers; where they are not, a Cast is kept.
    """
    inputs = {(r.op, r.slot): r.dtype for r in roundings if r.kind == "input"}
    held: dict[str, str] = {}
    kept: set[str] = set()
    for r in roundings:
        if r.kind != "output":
            continue
        op = graph.get_operation_by_name(r.op)
        floats = [(slot, t) for slot, t in enumerate(op.inputs) if t.dtype.is_floating]
        if (
            op.type in HALF_EXACT
            and floats
            and all(inputs.get((r.op, slot)) == r.dtype or held.get(t.name) == r.dtype for slot, t in floats)
        ):
            kept.add(r.tensor)
        held[r.tensor] = r.dtype
    return held, kept


def _add_round_trip(
    graph_def: GraphDef, base: str, src_ref: str, dtype: str, enums: dict[str, int], fused: bool
) -> str:
    """Append ``Cast(src -> half) -> Cast(-> float32)``, or one ``NpuEmuRound`` node when ``fused`` (the
    rounding kernel is in use); return the rounded tensor name. The last node's name is the same either
    way, so what reads a rounding by name (:data:`ROUND_MARKER_SUFFIX`) needs no second spelling.
    """
    tag = "_f16" if dtype == "float16" else "_bf16"
    if fused:
        node = graph_def.node.add(name=f"{base}{tag}/back", op=round_kernel.OP_TYPE)
        node.input.append(src_ref)
        node.attr["to"].type = enums[dtype]
        return f"{node.name}:0"
    wide = enums["float32"]
    down = graph_def.node.add(name=f"{base}{tag}/to", op="Cast")
    down.input.append(src_ref)
    down.attr["SrcT"].type = wide
    down.attr["DstT"].type = enums[dtype]
    down.attr["Truncate"].b = False
    up = graph_def.node.add(name=f"{base}{tag}/back", op="Cast")
    up.input.append(down.name)
    up.attr["SrcT"].type = enums[dtype]
    up.attr["DstT"].type = wide
    up.attr["Truncate"].b = False
    return f"{up.name}:0"


def _rewire_consumers(graph_def: GraphDef, tensor_map: dict[str, str]) -> None:
    """Point every data input that reads a rounded output at the rounded tensor (not the casts)."""
    refs = {_input_ref(k): _input_ref(v) for k, v in tensor_map.items()}
    for node in graph_def.node:
        if ROUND_MARKER in node.name:
            continue
        for i, ref in enumerate(node.input):
            if not ref.startswith("^") and ref in refs:
                node.input[i] = refs[ref]


def _input_ref(tensor_name: str) -> str:
    """GraphDef input spelling of a tensor name: ``op`` for slot 0, ``op:1`` otherwise."""
    op, _, slot = tensor_name.rpartition(":")
    return op if slot == "0" else tensor_name


def fix_seeds(graph_def: GraphDef) -> None:
    """Give unseeded random ops a fixed seed so two copies draw the same numbers."""
    import zlib

    for node in graph_def.node:
        has_seeds = "seed" in node.attr and "seed2" in node.attr
        if has_seeds and node.attr["seed"].i == 0 and node.attr["seed2"].i == 0:
            node.attr["seed"].i = _SEED
            node.attr["seed2"].i = zlib.crc32(node.name.encode()) & 0x7FFFFFFF


def _float_dtype_enums() -> dict[str, int]:
    tf = require_tensorflow("the emulator backend")

    return {name: getattr(tf, name).as_datatype_enum for name in ("float16", "bfloat16", "float32")}
