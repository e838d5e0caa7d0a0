"""Where the TF2 adapter (``npu_device``) runs each op of a ``tf.function`` graph: NPU clusters or the CPU.

TensorFlow 2 code reaches the NPU through ``npu_device`` (``tf_adapter_2.x``), whose rule differs from
the TF1 adapter's partition pass. Read from hicann/tensorflow (``tf_adapter_2.x/npu_device/core``):

* **Op support** (``npu_device.cpp`` ``LoadSupportedOps``/``Supported``): an op type is supported when
  it is a key of the built-in or a custom ``npu_supported_ops.json`` -- every key, the ``isGray`` flag
  is never read -- or one of the add-on ops ``IteratorV2``/``IteratorGetNext``. (Only when the
  built-in file yields no ops does everything but ``_EagerConst`` count as supported.)
* **Resource inputs** (``npu_trans_resource_input_to_node_optimizer.cpp``): a resource argument that
  is an NPU variable (a ``VarHandleOp`` created while the NPU device was the default) or a mirrored
  dataset iterator is replaced by a copy of its ``VarHandleOp``/``IteratorV2`` marked
  ``_is_substitute``, which is placed on the NPU. Any other resource (a variable created on the CPU,
  a lookup table) stays a CPU argument -- and then mirrored iterators stay CPU arguments too.
* **Whole function** (``npu_build_npu_op_optimizer.cpp``): when every op, including every op inside
  the functions its nodes call, is supported and every remaining input/output type can be copied
  (``DataTypeCanUseMemcpy``: not string/resource/variant), the whole function compiles to one NPU
  graph. Otherwise it runs "in mix mode" and ``NodePlacer`` (``optimizers/runtime/node_placer.cpp``)
  places each node:

  1. ``DeterminedSurelyNodes``: function arguments/return values and unsupported op types go to the
     CPU; ops of the adapter's own op library and resource substitutes go to the NPU; a node calling
     functions (``If``/``While``/``StatefulPartitionedCall`` ...) that hold an unsupported op goes to
     the CPU.
  2. ``SpreadCpuNode``: from every CPU node, CPU placement spreads forward and backward along every
     data edge whose dtype cannot be copied (string, resource, variant), to a fixed point. Reaching a
     node that must be on the NPU is an error (the function fails to compile).
  3. ``BuildConcreteCluster``: nodes joined by such edges -- and every node on a path between the two
     ends of one -- must be placed together; a group holding a CPU node goes wholly to the CPU.
  4. ``SpreadNpuNode``: every remaining node joins an NPU cluster (clusters merge when no CPU node lies
     on a path between them), unless the graph holds ``MutexLock`` (``tf.CriticalSection``): then only
     the nodes determined NPU in step 1 are compiled.
  5. ``BuildNpuOp``: a cluster of only ``Identity``/``NoOp``/``Const`` with no node that must be on the
     NPU and no function call is not worth an ``NpuCall`` and stays on the CPU.
  6. ``CopyShareableNode``: constants and substitutes are copied per consumer, so each follows its
     consumer (a constant used by an NPU op is compiled into that cluster).
  7. ``PlaceCpuNodeSubgraphs``: the functions of a CPU node are placed again by the same rule.

Clustering reuses the TF1 planner's mixed-computing partition (:mod:`partition`: cycle-free clusters,
several kept, constants copied into each), and precision is GE's, decided by :mod:`precision` as for
TF1 (the TF2 adapter passes the same precision options to GE). Op lists live in ``tf2_placement.json``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from npu_jupyter._plan.graph.graph import GraphView, Node
from npu_jupyter._plan.partition import Partition, partition
from npu_jupyter._plan.placement import Placement, _engine
from npu_jupyter._plan.settings import PlanSettings
from npu_jupyter._plan.tf2.node_placer import (
    SOURCE,
    copyable,
    is_arg,
    op_lists,
    place_mixed,
    subgraph_unsupported,
    supported,
    supported_reason,
)

if TYPE_CHECKING:
    from npu_jupyter._ops.library import OpLibrary


def tf2_settings(settings: PlanSettings, changed: dict[str, Any]) -> tuple[PlanSettings, list[str]]:
    """Settings with every option the TF2 adapter does not read reset, and the set ones it ignores.

    ``mix_compile_mode`` is then switched on because it selects the partition behaviour NodePlacer
    shares (several clusters, constants copied into each); it is not a TF2 option.
    """
    from npu_jupyter._options import catalogue

    defaults = PlanSettings()
    reset: dict[str, Any] = {}
    for key in PlanSettings.__dataclass_fields__:
        if key != "soc" and key in catalogue.keys() and catalogue.spec(key).tf2 is None:
            reset[key] = getattr(defaults, key)
    reset["mix_compile_mode"] = True
    unread = sorted(k for k in changed if k in catalogue.keys() and catalogue.spec(k).tf2 is None)
    return dataclasses.replace(settings, **reset), unread


def _resource_args(view: GraphView) -> tuple[dict[int, str], dict[int, str]]:
    """(NPU substitutes -> "variable"/"iterator", CPU resource args -> why) among the resource arguments."""
    lists = op_lists()
    cons = view.consumers()
    kinds: dict[int, str] = {}
    for n in view.order:
        if not (is_arg(n) and n.output_dtypes[:1] == ["resource"]):
            continue
        ops = [view.order[j] for j, _ in cons[n.index]]
        if any(c.op in lists["iterator_consumer_ops"] for c in ops):
            kinds[n.index] = "iterator"
        elif all(
            c.functions
            or c.op in lists["variable_consumer_ops"]
            or c.op.startswith(tuple(lists["variable_consumer_prefixes"]))
            for c in ops
        ):
            kinds[n.index] = "variable"
        else:
            kinds[n.index] = "other"
    others = {i for i, k in kinds.items() if k == "other"}
    cpu: dict[int, str] = {}
    for i in others:
        cpu[i] = "a resource that is not an NPU variable or iterator (e.g. a lookup table): a CPU argument"
    if others:
        for i, k in kinds.items():
            if k == "iterator":
                cpu[i] = "a dataset iterator, kept on the CPU because the function also takes a CPU resource"
    return {i: k for i, k in kinds.items() if i not in cpu}, cpu


@dataclass
class Tf2Placement:
    """Placement and partition of one function graph under the npu_device rule."""

    placed: Placement
    part: Partition
    whole: bool  # the whole function compiles to one NPU graph
    notes: list[str] = field(default_factory=list)

    @property
    def mode_word(self) -> str:
        """The plan title's placement words: whole function on the NPU, or mixed with N clusters."""
        return npu_device_words(self.whole, len(self.part.subgraphs))


#: How every npu_device plan title's placement words begin (:func:`npu_device_words`).
NPU_DEVICE_WORDS = "TF2 adapter (npu_device):"


def npu_device_words(whole: bool, clusters: int) -> str:
    """A plan title's placement words under npu_device: the whole function on the NPU, or mixed
    with ``clusters`` NPU clusters (a call tree's title counts the clusters of every function in it).
    """
    if whole:
        return f"{NPU_DEVICE_WORDS} whole function on the NPU"
    return f"{NPU_DEVICE_WORDS} mixed, {clusters} NPU cluster(s)"


def place_tf2(view: GraphView, lib: OpLibrary, s: PlanSettings) -> Tf2Placement:
    """Device flag, engine and reason of every node, and the NPU clusters, as npu_device decides."""
    count = len(view.order)
    placed = Placement(device=[False] * count, engine=["HOST"] * count, reason=[""] * count)
    substitutes, cpu_resources = _resource_args(view)
    problems = _unsupported(view, lib)
    bad_types = _uncopyable_io(view, substitutes)
    whole = not problems and not bad_types
    notes = _iterator_note(view, substitutes, whole)
    must_npu: list[bool] | None = None
    if whole:
        for n in view.order:
            placed.device[n.index] = True
            placed.reason[n.index] = (
                f"npu_device: {_whole_reason(n, lib, substitutes)} (npu_build_npu_op_optimizer.cpp)"
            )
    else:
        why = "; ".join(
            x for x in (f"unsupported ops {', '.join(sorted(problems))}" if problems else "", bad_types) if x
        )
        notes.append(
            f"npu_device compiles this function in mix mode ({why}): NodePlacer splits it between NPU and CPU."
        )
        must_npu = place_mixed(view, lib, placed, substitutes, cpu_resources)
    part = _partition(view, placed, s, must_npu)
    for n in view.order:
        if placed.device[n.index]:
            placed.engine[n.index] = _engine(n, lib)
    return Tf2Placement(placed, part, whole, notes)


def _unsupported(view: GraphView, lib: OpLibrary) -> set[str]:
    """Unsupported op types of the graph and of every function it calls (``GetGraphUnsupportedOps``)."""
    out = {n.op for n in view.order if not is_arg(n) and not supported(n.op, lib)}
    return out | set(subgraph_unsupported(sorted({f for n in view.order for f in n.functions}), view, lib))


def _uncopyable_io(view: GraphView, substitutes: dict[int, str]) -> str:
    """Inputs/outputs whose dtype cannot be copied (``ValidateInputTypes``/``ValidateOutputTypes``)."""
    ins = sorted(
        {d for n in view.order if is_arg(n) and n.index not in substitutes for d in n.output_dtypes if not copyable(d)}
    )
    outputs = getattr(view.tf_graph, "outputs", None) or []
    outs = sorted({o.dtype.name for o in outputs if not copyable(o.dtype.name)})
    parts = [f"{d} input" for d in ins] + [f"{d} output" for d in outs]
    return ", ".join(parts) + (" cannot be copied to or from the NPU" if parts else "")


_WHILE_OPS = frozenset({"While", "StatelessWhile"})


def _iterator_note(view: GraphView, substitutes: dict[int, str], whole: bool) -> list[str]:
    """What npu_device does with the dataset iterator the function reads, and whether NPU_LOOP_SIZE applies.

    npu_device runs NPU_LOOP_SIZE iterations per call only for a function compiled whole on the NPU
    whose while loop takes the mirrored iterator itself: only such a While gets ``_consumed_iterators``
    (npu_trans_resource_input_to_node_optimizer.cpp), and ``TryTransToNpuLoopGraph``
    (npu_concrete_graph.cpp) skips a function in mix mode, one with another while loop, or one with ops
    the loop does not need (``IsGraphNeedLoop``, npu_utils.cpp). A Keras step function reads the
    iterator with ``IteratorGetNext`` outside any loop: each call is one step, whatever NPU_LOOP_SIZE is.
    """
    iterators = [i for i, kind in substitutes.items() if kind == "iterator"]
    if not iterators:
        return []
    head = "npu_device reads the dataset iterator on the NPU (a mirrored iterator)"
    cons = view.consumers()
    if not any(view.order[j].op in _WHILE_OPS for i in iterators for j, _ in cons[i]):
        text = (
            f"{head}; each call of this function is one step: NPU_LOOP_SIZE applies only to a function whose "
            "while loop takes the iterator itself (TryTransToNpuLoopGraph), and this one reads it outside a loop."
        )
    elif not whole:
        text = (
            f"{head} in a while loop; each call runs the loop as TensorFlow does: npu_device makes a device "
            "loop of NPU_LOOP_SIZE iterations only of a function compiled whole on the NPU (TryTransToNpuLoopGraph)."
        )
    else:
        text = (
            f"{head} in a while loop: when that loop is the whole function (one while loop, every op feeding it, "
            "no outputs), npu_device compiles it into the device graph, which runs NPU_LOOP_SIZE iterations per "
            "call (TryTransToNpuLoopGraph; 1 unless the environment sets it); the plan shows the function once."
        )
    return [text]


def _whole_reason(n: Node, lib: OpLibrary, substitutes: dict[int, str]) -> str:
    if n.index in substitutes:
        return f"resource argument replaced by its NPU {substitutes[n.index]} (_is_substitute); the whole function is one NPU graph"
    if is_arg(n):
        return "function argument: an input of the NPU graph, which holds the whole function"
    return f"every op of the function is supported, so the whole function is one NPU graph; {supported_reason(n, lib)}"


# --------------------------------------------------------------------------------------------
# clusters (NpuCall ops)
# --------------------------------------------------------------------------------------------

# partition()'s own reason for a lone NoOp/Identity it leaves on the host (the TF1 rule's wording):
# npu_device leaves it on the CPU by its BuildNpuOp rule, so the reason is replaced.
_LONE_PREFIX = "a lone NoOp/Identity"


def _partition(view: GraphView, placed: Placement, s: PlanSettings, must_npu: list[bool] | None) -> Partition:
    """The TF1 mixed-computing partition, then BuildNpuOp's skip of meaningless clusters; npu_cluster names."""
    part = partition(view, placed, s)
    if must_npu is not None and _meaningless_clusters(view, placed, part, must_npu):
        part = partition(view, placed, s)  # changed flags move clusters and transfers
    for n in view.order:
        if placed.reason[n.index].startswith(_LONE_PREFIX):
            placed.reason[n.index] = _meaningless_reason()
    names = {sub.name: f"npu_cluster_{k}" for k, sub in enumerate(part.subgraphs)}
    for sub in part.subgraphs:
        sub.name = names[sub.name]
    part.cluster_of = [names.get(c, c) if c is not None else None for c in part.cluster_of]
    for old, new in names.items():
        part.notes = [note.replace(old, new) for note in part.notes]
    part.notes = [note.replace("each GeOp", "each NPU cluster") for note in part.notes]
    return part


def _meaningless_clusters(view: GraphView, placed: Placement, part: Partition, must_npu: list[bool]) -> bool:
    """``BuildNpuOp``: clusters of only Identity/NoOp/Const, nothing that must be on the NPU and no call."""
    meaningless = op_lists()["npu_meaningless_ops"]
    changed = False
    for members in part.clusters:
        nodes = [view.order[i] for i in members]
        if any(must_npu[n.index] or n.functions or n.op not in meaningless for n in nodes):
            continue
        for n in nodes:
            placed.device[n.index] = False
            placed.engine[n.index] = "HOST"
            placed.reason[n.index] = _meaningless_reason()
        changed = True
    return changed


def _meaningless_reason() -> str:
    return (
        f"npu_device: its cluster holds only Identity/NoOp/Const, which is not worth an NPU op: TensorFlow runs it "
        f"on the CPU ({SOURCE} BuildNpuOp)"
    )


def unread_note(unread: list[str]) -> list[str]:
    """Say which set options the TF2 adapter does not read (they changed nothing in this plan)."""
    if not unread:
        return []
    return [f"Options the TF2 adapter (npu_device) does not read, ignored by this plan: {', '.join(unread)}."]
