"""Roofline estimate of a plan on the device: per-op AI Core / AI CPU time, transfers, memory.

Every figure is an estimate from published peak rates (``socs.json``), never a measurement:

* an AI Core op takes ``max(FLOPs / peak rate of its unit in its dtype, bytes / HBM bandwidth)``
  plus a fixed launch cost; matrix ops (``cube_ops``) use the cube's rate for their dtype, other ops
  the vector unit's (a dtype the cube has no mode for falls back to the vector rate);
* an AI CPU op takes ``FLOPs / AI CPU rate + bytes / HBM bandwidth`` plus its launch cost;
* a host op costs the device nothing, but each host<->device transfer of the plan costs
  ``bytes / PCIe bandwidth`` plus a fixed latency;
* so does each copy a run's feeds and fetches add (:func:`run_copies`): a fed tensor a device op reads
  goes to the device, and a fetched tensor a device op makes comes back, every step;
* plumbing ops (``free_ops``: constants, identities, reshapes, variables) cost nothing;
* the step is the sum (one stream, no overlap), and memory is the sum of every device op's outputs in
  its decided dtype (activations, no buffer reuse: an upper bound) plus variables and constants
  (weights).

Each is computed twice: as decided, and with every float tensor in float32, which gives the
"vs float32" ratios the reports and the sweep show.
"""

from __future__ import annotations

import functools
import json
import pkgutil
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Collection, Sequence, cast

from npu_jupyter._units import DTYPE_BYTES, format_bytes
from npu_jupyter.cost.shapes import OpFacts, graph_facts

if TYPE_CHECKING:
    from npu_jupyter._plan.model import OpDecision, Plan
    from npu_jupyter._tf_types import ConcreteFunction, Graph, GraphDef

BASIS = "roofline over published peak rates"  # reports label the numbers "estimated by the cost model"
_SIZES = DTYPE_BYTES
_FLOATS = frozenset({"float16", "bfloat16", "float32"})
_NO_BYTES = frozenset({"resource", "variant", "string"})  # handles and objects: no fixed size to move


@dataclass(frozen=True)
class SocFigures:
    """Peak rates and fixed costs of one SoC (``socs.json``), with where each figure comes from."""

    name: str
    cube_tflops: dict[str, float]
    vector_tflops: dict[str, float]
    hbm_gbps: float
    pcie_gbps: float
    aicore_launch_us: float
    aicpu_gflops: float
    aicpu_launch_us: float
    transfer_latency_us: float
    approximate: bool
    sources: dict[str, str]


@dataclass
class OpCost:
    """One op's estimate: unit, compute dtype, FLOPs, bytes moved and time (µs), as decided and in float32."""

    name: str
    unit: str  # "cube" | "vector" | "aicpu" | "host" | "free"
    dtype: str
    flops: float
    bytes: int
    est_us: float
    fp32_us: float
    bound: str  # "compute" | "memory" | "launch" | ""


@dataclass(frozen=True)
class RunCopy:
    """A tensor a run feeds or fetches, copied across PCIe once per step (see :func:`run_copies`)."""

    tensor: str  # "op:slot"
    direction: str  # "h2d" (fed) | "d2h" (fetched)
    dtype: str  # as TensorFlow feeds and fetches it (the graph's dtype)
    bytes: int


@dataclass
class StepCost:
    """A step's estimate: per-op costs, transfers, totals and their float32 counterparts."""

    soc: str
    ops: dict[str, OpCost] = field(default_factory=dict)
    transfer_us: float = 0.0
    step_ms: float = 0.0
    fp32_step_ms: float = 0.0
    activation_bytes: int = 0
    weight_bytes: int = 0
    fp32_memory_bytes: int = 0
    launch_us: float = 0.0  # fixed costs in step_ms: per-op launches and per-transfer latencies
    guessed_shapes: int = 0  # ops with a dimension unknown before the run (counted at ``unknown_dim``)
    unknown_transfers: int = 0  # transfers of unknown size (not counted)
    run_copies: list[RunCopy] = field(default_factory=list)  # the run's feeds and fetches, copied every step
    approximate_figures: bool = False

    @property
    def memory_bytes(self) -> int:
        """Bytes the step moves: activations plus weights (estimated by the model)."""
        return self.activation_bytes + self.weight_bytes

    @property
    def step_ratio_fp32(self) -> float | None:
        """Estimated step time over the float32 step's (None when float32 is not estimated)."""
        return self.step_ms / self.fp32_step_ms if self.fp32_step_ms else None

    @property
    def memory_ratio_fp32(self) -> float | None:
        """Estimated bytes moved over the float32 step's (None when float32 is not estimated)."""
        return self.memory_bytes / self.fp32_memory_bytes if self.fp32_memory_bytes else None

    @property
    def launch_share(self) -> float | None:
        """The part of the estimated step that is fixed launch and latency cost, which no dtype changes.

        A small model's step is mostly that floor, so its time shows ~1.00× float32 under any
        precision mode; the report says so rather than leave it to look like no gain.
        """
        return min(self.launch_us / (self.step_ms * 1e3), 1.0) if self.step_ms else None

    @property
    def basis(self) -> str:
        """What the estimate rests on, for the report's label: the model, the SoC figures, any guesses."""
        notes = [BASIS, f"{self.soc} figures from socs.json (see docs/cost-model.md)"]
        if self.approximate_figures:
            notes.append(f"the {self.soc} figures are from secondary sources or assumed")
        if self.guessed_shapes:
            notes.append(f"{self.guessed_shapes} ops had a dimension unknown before the run, counted as 1")
        if self.unknown_transfers:
            notes.append(f"{self.unknown_transfers} transfers of unknown size are not counted")
        if self.run_copies:
            fed = sum(1 for c in self.run_copies if c.direction == "h2d")
            back = len(self.run_copies) - fed
            copied = [f"{_count(fed, 'fed tensor')} to the device"] if fed else []
            copied += [f"{_count(back, 'fetched tensor')} back"] if back else []
            moved = format_bytes(sum(c.bytes for c in self.run_copies))
            notes.append(f"each step also copies the run's {' and '.join(copied)} ({moved}), counted as transfers")
        return "; ".join(notes)

    def payload(self) -> dict[str, Any]:
        """The ``cost_model`` block of the report payload (docs/report-schema.md)."""
        return {
            "step_ms": self.step_ms,
            "memory_bytes": self.memory_bytes,
            "step_ratio_fp32": self.step_ratio_fp32,
            "memory_ratio_fp32": self.memory_ratio_fp32,
            "launch_share": self.launch_share,
            "basis": self.basis,
        }

    def est_us(self) -> dict[str, float]:
        """Estimated µs per op that costs anything (the payload's per-op ``est_us``)."""
        return {name: c.est_us for name, c in self.ops.items() if c.unit not in ("free", "host")}


@functools.lru_cache(maxsize=1)
def _data() -> dict[str, Any]:
    data = pkgutil.get_data("npu_jupyter.cost", "socs.json")  # importlib.resources.files is 3.9+
    if data is None:  # pragma: no cover - a broken install
        raise FileNotFoundError("npu_jupyter/cost/socs.json is missing from the installed package")
    return cast("dict[str, Any]", json.loads(data.decode("utf-8")))


def soc_figures(soc: str) -> SocFigures:
    """The figures of ``soc`` (any spelling the op tables accept: Ascend910A, Ascend910B3, ...)."""
    from npu_jupyter._ops.library import SUPPORTED_SOCS, resolve_soc

    name = SUPPORTED_SOCS[resolve_soc(soc)][0]
    row = _data()[name]
    return SocFigures(
        name,
        dict(row["cube_tflops"]),
        dict(row["vector_tflops"]),
        float(row["hbm_gbps"]),
        float(row["pcie_gbps"]),
        float(row["aicore_launch_us"]),
        float(row["aicpu_gflops"]),
        float(row["aicpu_launch_us"]),
        float(row["transfer_latency_us"]),
        bool(row.get("approximate", False)),
        dict(row["sources"]),
    )


def estimate(
    plan: Plan,
    graph: Graph | GraphDef | ConcreteFunction,
    *,
    unknown_dim: int = 1,
    facts: dict[str, OpFacts] | None = None,
    fed_shapes: dict[str, list[int]] | None = None,
    stood_in: Collection[str] = (),
    in_place: Sequence[str] = (),
    fetched: Sequence[str] = (),
) -> StepCost:
    """The estimated device cost of one step of ``plan`` (whose ops are ``graph``'s).

    ``fed_shapes`` are the shapes a run fed (``RunReport.fed_shapes``): a report of a run is
    estimated at the batch it ran, not at ``unknown_dim``. ``stood_in`` names the emulator's stand-ins
    the device does not run and ``in_place`` the AI Core ops it runs there, one entry per op
    (:func:`~npu_jupyter.cost.stand_ins.replacement`): the stand-ins are not estimated, and each op in
    their place adds its launch cost (ops that read a few bytes, as a float-status register read does).
    The tensors fed (the keys of ``fed_shapes``) and ``fetched`` (a run's fetch names) add the copies
    of :func:`run_copies`.
    """
    figures = soc_figures(plan.soc)
    facts = facts if facts is not None else graph_facts(graph, unknown_dim, fed_shapes)
    cost = StepCost(soc=figures.name, approximate_figures=figures.approximate)
    fp32_bytes = 0
    variables = frozenset(_data()["variable_ops"])
    total_us = fp32_us = cost.launch_us = figures.aicore_launch_us * len(in_place)  # the device's ops there
    for name, decision in plan.ops.items():
        fact = facts.get(name)
        if fact is None or name in stood_in:
            continue
        cost.guessed_shapes += fact.guessed
        op_cost = _op_cost(decision, fact, facts, plan.ops, figures)
        cost.ops[name] = op_cost
        total_us += op_cost.est_us
        cost.launch_us += _launch_us(op_cost.unit, figures)
        fp32_us += op_cost.fp32_us
        if decision.engine == "HOST":
            continue
        if decision.op_type in variables and fact.variable_shape is not None:
            size = _elements(fact.variable_shape) * _size(fact.variable_dtype)
            cost.weight_bytes += size
            fp32_bytes += _elements(fact.variable_shape) * _size(_as_fp32(fact.variable_dtype))
            continue
        dtypes = _output_dtypes(decision, fact)
        decided = _tensor_bytes(fact.outputs, dtypes)
        if decision.op_type == "Const":
            cost.weight_bytes += decided
        else:
            cost.activation_bytes += decided
        fp32_bytes += _tensor_bytes(fact.outputs, [_as_fp32(d) for d in dtypes])
    known = [(t.bytes, t.dtype) for t in plan.transfers if t.bytes is not None]
    cost.unknown_transfers = len(plan.transfers) - len(known)
    cost.run_copies = run_copies(plan, facts, fed_shapes or {}, fetched)
    for size, dtype in known + [(c.bytes, c.dtype) for c in cost.run_copies]:  # each a PCIe copy per step
        cost.transfer_us += size / (figures.pcie_gbps * 1e3) + figures.transfer_latency_us
        cost.launch_us += figures.transfer_latency_us
        fp32_us += size * _widen(dtype) / (figures.pcie_gbps * 1e3) + figures.transfer_latency_us
    cost.step_ms = (total_us + cost.transfer_us) / 1e3
    cost.fp32_step_ms = fp32_us / 1e3
    cost.fp32_memory_bytes = fp32_bytes
    return cost


def run_copies(
    plan: Plan, facts: dict[str, OpFacts], fed_shapes: dict[str, list[int]], fetched: Sequence[str]
) -> list[RunCopy]:
    """The copies a run's feeds and fetches add to each step, beside the plan's own transfers.

    The adapter's partition pass (``om_partition_subgraphs_pass.cc``: ``RecordArg``, ``RecordResult``)
    gives a GeOp one ``_Arg`` per tensor entering it from outside, a fed tensor among them (the session
    feeds it through an ``_arg_`` node), and one ``_Retval`` per tensor leaving it. So every step copies
    each fed tensor a device op reads to the device, and each fetched tensor a device op makes back to
    the host, in the dtype TensorFlow feeds and fetches. A tensor the plan already moves across (mixed
    computing) is not counted twice, and a fetched tensor that is also fed never leaves the host.
    """
    crossing = {transfer.tensor for transfer in plan.transfers}
    on_device = {name for name, decision in plan.ops.items() if decision.engine != "HOST" and name in facts}
    read = {f"{src}:{slot}" for name in on_device for src, slot in facts[name].inputs}
    copies = []
    for name, shape in sorted(fed_shapes.items()):
        found = _copied_tensor(facts, name)
        if found is not None and name in read and name not in crossing:
            copies.append(RunCopy(name, "h2d", found[1], _elements(shape) * _size(found[1])))
    for name in dict.fromkeys(fetched):  # once per tensor, in fetch order
        found = _copied_tensor(facts, name)
        if found is not None and found[0] in on_device and name not in fed_shapes and name not in crossing:
            _, dtype, shape = found
            copies.append(RunCopy(name, "d2h", dtype, _elements(shape) * _size(dtype)))
    return copies


def _copied_tensor(facts: dict[str, OpFacts], name: str) -> tuple[str, str, list[int]] | None:
    """(op, graph dtype, static shape) of tensor ``name`` ("op:slot"); None for an op name or a tensor
    no copy carries (a resource handle, a variant, a string).
    """
    op, _, slot = name.rpartition(":")
    fact = facts.get(op)
    if fact is None or not slot.isdigit() or int(slot) >= len(fact.dtypes):
        return None
    dtype = fact.dtypes[int(slot)]
    return None if dtype in _NO_BYTES else (op, dtype, fact.outputs[int(slot)])


def _count(n: int, what: str) -> str:
    return f"{n} {what}" + ("" if n == 1 else "s")


def _op_cost(
    decision: OpDecision, fact: OpFacts, facts: dict[str, OpFacts], ops: dict[str, OpDecision], figures: SocFigures
) -> OpCost:
    """Roofline time of one op as decided and in float32."""
    data = _data()
    op_type = decision.op_type
    if decision.engine == "HOST" or op_type in data["free_ops"]:
        unit = "host" if decision.engine == "HOST" else "free"
        return OpCost(decision.name, unit, decision.dtype_after, 0.0, 0, 0.0, 0.0, "")
    in_shapes = [_input_shape(facts, src, slot) for src, slot in fact.inputs]
    in_dtypes = _input_dtypes(decision, fact, facts, ops)
    out_dtypes = _output_dtypes(decision, fact)
    flops = _flops(op_type, fact, in_shapes)
    moved = _tensor_bytes(in_shapes, in_dtypes) + _tensor_bytes(fact.outputs, out_dtypes)
    moved32 = _tensor_bytes(in_shapes, [_as_fp32(d) for d in in_dtypes]) + _tensor_bytes(
        fact.outputs, [_as_fp32(d) for d in out_dtypes]
    )
    dtype = next((d for d in in_dtypes if d in _FLOATS), None) or decision.dtype_after or "float32"
    if decision.engine == "AI_CPU":
        fixed = figures.aicpu_launch_us
        us = flops / (figures.aicpu_gflops * 1e3) + moved / (figures.hbm_gbps * 1e3) + fixed
        us32 = flops / (figures.aicpu_gflops * 1e3) + moved32 / (figures.hbm_gbps * 1e3) + fixed
        return OpCost(decision.name, "aicpu", dtype, flops, moved, us, us32, "compute")
    cube = op_type in data["cube_ops"]
    unit = "cube" if cube and dtype in figures.cube_tflops else "vector"
    us, bound = _roofline(flops, moved, _rate(figures, cube, dtype), figures)
    us32, _ = _roofline(flops, moved32, _rate(figures, cube, _as_fp32(dtype)), figures)
    return OpCost(decision.name, unit, dtype, flops, moved, us, us32, bound)


def _launch_us(unit: str, figures: SocFigures) -> float:
    """The fixed launch cost an op of ``unit`` adds to the step (none for host and plumbing ops)."""
    if unit in ("cube", "vector"):
        return figures.aicore_launch_us
    return figures.aicpu_launch_us if unit == "aicpu" else 0.0


def _rate(figures: SocFigures, cube: bool, dtype: str) -> float:
    """Peak TFLOPS for an op: the cube's for matrix ops in a dtype it has, else the vector unit's."""
    if cube and dtype in figures.cube_tflops:
        return figures.cube_tflops[dtype]
    return figures.vector_tflops.get(dtype, figures.vector_tflops["float32"])


def _roofline(flops: float, moved: int, tflops: float, figures: SocFigures) -> tuple[float, str]:
    compute = flops / (tflops * 1e6)
    memory = moved / (figures.hbm_gbps * 1e3)
    body = max(compute, memory)
    bound = "launch" if body < figures.aicore_launch_us * 0.1 else "compute" if compute >= memory else "memory"
    return body + figures.aicore_launch_us, bound


def _flops(op_type: str, fact: OpFacts, in_shapes: list[list[int]]) -> float:
    """Floating-point operations of one op from its shapes (multiply-add = 2)."""
    out = _elements(fact.outputs[0]) if fact.outputs else 0
    if op_type == "MatMul" and in_shapes and len(in_shapes[0]) == 2:
        k = in_shapes[0][0] if fact.flags.get("transpose_a") else in_shapes[0][1]
        return 2.0 * out * k
    if op_type.startswith("BatchMatMul") and in_shapes and len(in_shapes[0]) >= 2:
        k = in_shapes[0][-2] if fact.flags.get("adj_x") else in_shapes[0][-1]
        return 2.0 * out * k
    if op_type in ("Conv2D", "Conv3D") and len(in_shapes) > 1 and in_shapes[1]:
        return 2.0 * out * _elements(in_shapes[1][:-1])  # kh*kw*cin per output element
    if op_type in ("Conv2DBackpropInput", "Conv3DBackpropInputV2") and len(in_shapes) > 2:
        return 2.0 * _elements(in_shapes[2]) * _elements(in_shapes[1][:-1])
    if op_type in ("Conv2DBackpropFilter", "Conv3DBackpropFilterV2") and len(in_shapes) > 2 and fact.outputs:
        return 2.0 * _elements(in_shapes[2]) * _elements(fact.outputs[0][:-1])
    if op_type.startswith("DepthwiseConv2dNative") and len(in_shapes) > 1:
        kernel = (
            in_shapes[1]
            if op_type == "DepthwiseConv2dNative"
            else (fact.outputs[0] if op_type.endswith("Filter") else in_shapes[1])
        )
        grad = out if op_type == "DepthwiseConv2dNative" else _elements(in_shapes[-1])
        return 2.0 * grad * _elements(kernel[:2]) if len(kernel) >= 2 else 2.0 * grad
    factors = _data()["flops_per_element"]
    widest = max([out] + [_elements(s) for s in in_shapes])
    return float(factors.get(op_type, factors["_default"])) * widest


def _input_shape(facts: dict[str, OpFacts], src: str, slot: int) -> list[int]:
    producer = facts.get(src)
    if producer is None or slot >= len(producer.outputs):
        return []
    return producer.outputs[slot]


def _input_dtypes(
    decision: OpDecision, fact: OpFacts, facts: dict[str, OpFacts], ops: dict[str, OpDecision]
) -> list[str]:
    """Decided dtype of each data input (the plan's ``input_dtypes``, else the producer's output)."""
    decided = list(decision.input_dtypes or [])
    out = []
    for k, (src, slot) in enumerate(fact.inputs):
        if k < len(decided) and decided[k]:
            out.append(decided[k])
            continue
        producer = ops.get(src)
        dtypes = list(producer.output_dtypes or []) if producer is not None else []
        out.append(dtypes[slot] if slot < len(dtypes) else "float32")
    return out


def _output_dtypes(decision: OpDecision, fact: OpFacts) -> list[str]:
    dtypes = list(decision.output_dtypes or [])
    return [
        dtypes[k] if k < len(dtypes) and dtypes[k] else (decision.dtype_after or "float32")
        for k in range(len(fact.outputs))
    ]


def _elements(shape: list[int]) -> int:
    count = 1
    for dim in shape:
        count *= max(int(dim), 0)
    return count


def _size(dtype: str) -> int:
    return _SIZES.get(dtype.replace("_ref", ""), 4)


def _as_fp32(dtype: str) -> str:
    base = dtype.replace("_ref", "")
    return "float32" if base in _FLOATS else base


def _widen(dtype: str) -> float:
    """Bytes factor of a tensor of ``dtype`` if it were float32 instead."""
    return _size(_as_fp32(dtype)) / _size(dtype)


def _tensor_bytes(shapes: list[list[int]], dtypes: list[str]) -> int:
    return sum(_elements(s) * _size(d) for s, d in zip(shapes, dtypes) if d not in _NO_BYTES)
