"""Plain data the planner produces and every later stage reads.

A :class:`Plan` is the adapter's decisions for one graph under one config: for every op where it runs
(AI Core, AI CPU or the host), in which dtype, and why; the device subgraphs (the adapter's GeOp
clusters); and every tensor that crosses between host and device. It holds no TensorFlow objects, so a
plan can be pickled, cached on disk (``graph_compiler_cache_dir``) and rendered anywhere.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from npu_jupyter._plan.readonly import NO_STRINGS, ReadOnlyList
from npu_jupyter._renderers import render_text

if TYPE_CHECKING:  # typing.Literal is Python 3.8+; annotations here are strings, never evaluated
    from typing import Literal  # novermin (never imported at run time)

    Placement = Literal["device", "host"]
    Engine = Literal["AI_CORE", "AI_CPU", "HOST"]


_FLOATS = frozenset({"float16", "bfloat16", "float32", "float64"})


@dataclass
class OpDecision:
    """What the adapter would do with one TensorFlow op.

    ``dtype_before``/``dtype_after`` describe the op's float outputs (the first float output, else
    the first output; "" for ops without outputs). ``input_dtypes`` gives the decided dtype of each
    data input as the device would read it, which is what the emulator casts to. Build it with
    keyword arguments: fields are added over time and 15 positional values are unreadable.

    Its lists are read-only (:class:`~npu_jupyter._plan.readonly.ReadOnlyList`): one list object
    serves every decision with the same values and every plan of the same graph, so changing one
    would change them all. They read like any list; ``list(decision.inputs)`` is a copy of one's own,
    and :meth:`Plan.to_records` gives plain lists.
    """

    name: str
    op_type: str
    placement: Placement
    engine: Engine
    placement_reason: str
    dtype_before: str
    dtype_after: str
    precision_reason: str
    cluster: str | None = None
    inputs: list[str] = field(default_factory=list)  # producer op names of data inputs
    input_dtypes: list[str] = field(default_factory=list)
    output_dtypes: list[str] = field(default_factory=list)  # decided dtype of every output
    impl_mode: str | None = None  # op_select_implmode / op_precision_mode result
    policy: str | None = None  # mixed precision list: "white" | "black" | "gray" | None
    body_ops: list[str] = field(default_factory=list)  # op types inside a called function or a fused unary chain
    approximate: bool = False  # rests on approximate op data (_plan/approximate.py)
    declared_input_dtypes: list[str] = field(default_factory=list)  # each data input's dtype in the graph
    # each data input's dtype as its producer writes it on the device (decided), where the planner knows it
    producer_dtypes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        """Make the lists read-only, as the planner's are (it builds decisions without this call)."""
        for name in _LIST_FIELDS:
            value = getattr(self, name)
            if type(value) is not ReadOnlyList:
                if isinstance(value, (str, bytes)):  # ReadOnlyList("mm") would be ["m", "m"]
                    raise TypeError(
                        f"OpDecision.{name} takes a list of strings, not the single "
                        f"{type(value).__name__} {value!r}: write [{value!r}] for one"
                    )
                setattr(self, name, ReadOnlyList(value) if value else NO_STRINGS)

    @property
    def precision_changed(self) -> bool:
        """True when the device reads or writes this op's data in another dtype than the graph declares.

        Output lowering (``dtype_before != dtype_after``) and input-only lowering count alike: a cube op
        that reads float16 and writes float32 (force_fp32, ``customize_dtypes`` "float16 in, float32
        out") computes on rounded data even though its output dtype is unchanged.
        """
        return self.dtype_before != self.dtype_after or bool(self.lowered_reads)

    @property
    def lowered_reads(self) -> list[str]:
        """The dtypes this op reads float inputs in where they differ from the declared ones and from what
        the producer writes: a cast before this op, so its computation sees rounded data (deduplicated).
        """
        return self._reads(cast_here=True)

    @property
    def followed_reads(self) -> list[str]:
        """The lowered dtypes this op reads float inputs in as their producers already wrote them.

        No cast sits before the op (the adapter inserts one only where producer and consumer dtypes
        differ): an ``ArgMax`` or ``Equal`` after a float16 op under allow_mix_precision reads the
        producer's float16 values unchanged, and its int64/bool output is what it is in float32 on those
        values. The change is the producer's; this op's precision did not change.
        """
        return self._reads(cast_here=False)

    def _reads(self, cast_here: bool) -> list[str]:
        written = self.producer_dtypes or self.declared_input_dtypes  # plans built before producer_dtypes
        reads = [
            got
            for got, declared, wrote in zip(self.input_dtypes, self.declared_input_dtypes, written)
            if got != declared and got in _FLOATS and declared in _FLOATS and (got != wrote) == cast_here
        ]
        return list(dict.fromkeys(reads))


# the fields annotated as lists (annotations are strings here: ``from __future__ import annotations``)
_LIST_FIELDS = tuple(f.name for f in fields(OpDecision) if str(f.type).startswith("list["))


def _record(decision: OpDecision) -> dict[str, Any]:
    """One decision as a flat dict whose lists are plain copies (the decision's are read-only)."""
    out = {}
    for f in fields(decision):
        value = getattr(decision, f.name)
        out[f.name] = list(value) if isinstance(value, list) else value
    return out


@dataclass
class Subgraph:
    """One device cluster: the ops the adapter would replace by a single GeOp."""

    name: str
    ops: list[str]


@dataclass
class Transfer:
    """A tensor crossing the host/device boundary, once per GeOp output / input (not per consumer).

    The adapter gives a GeOp one ``_Retval`` per tensor leaving it and one ``_Arg`` per tensor entering
    it, however many ops read it, so ``bytes`` is moved once; ``consumers`` lists every reader.
    """

    src: str  # producer op name
    dst: str  # first consumer op name
    tensor: str  # "op:slot"
    dtype: str
    direction: Literal["h2d", "d2h"]  # novermin (a string annotation)
    bytes: int | None = None  # None when the shape is not fully known
    consumers: list[str] = field(default_factory=list)  # every consumer op name, ``dst`` first


@dataclass
class Plan:
    """The adapter's decisions for one graph under one config.

    Attributes
    ----------
    ops : dict[str, OpDecision]
        Every planned op by name, in topological order.
    subgraphs : list[Subgraph]
        Device clusters, largest first.
    transfers : list[Transfer]
        Host<->device edges.
    warnings, errors : list[str]
        Findings a user should act on; ``errors`` are what the real adapter would refuse.

    """

    ops: dict[str, OpDecision]
    subgraphs: list[Subgraph] = field(default_factory=list)
    transfers: list[Transfer] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    soc: str = "Ascend910"
    precision_mode: str = ""  # effective mode after defaults
    config_changes: dict[str, Any] = field(default_factory=dict)
    title: str = ""
    notes: list[str] = field(default_factory=list)  # informational (e.g. variables replicated per GeOp)
    fetches: list[str] = field(default_factory=list)  # what the plan was asked for ("loss"); titles name it
    # a traced function's call tree (_runtime.functions.tree): the called function first, then the ones it
    # calls, whose ops are named "<function>/<op>"; empty for a plan of one graph
    functions: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """Counts a person reads first: where ops run and how many changed precision."""
        engines = [d.engine for d in self.ops.values()]
        sizes = [t.bytes for t in self.transfers]
        return {
            "ops": len(self.ops),
            "ai_core": engines.count("AI_CORE"),
            "ai_cpu": engines.count("AI_CPU"),
            "host": engines.count("HOST"),
            "precision_changed": sum(d.precision_changed for d in self.ops.values()),
            "clusters": len(self.subgraphs),
            "transfers": len(self.transfers),
            "transfer_bytes": None if None in sizes else sum(s for s in sizes if s is not None),
        }

    def to_records(self) -> list[dict[str, Any]]:
        """One flat dict per op, ready for ``pandas.DataFrame`` or a CSV writer."""
        return [_record(d) for d in self.ops.values()]

    def __str__(self) -> str:
        """``print(plan)`` shows the readable text report once ``npu_jupyter._display`` has registered
        its renderer (importing ``npu_jupyter`` does that); the plan never imports the display layer.
        """
        return render_text(self)
