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
import functools
import json
from dataclasses import dataclass, field
from typing import Any

from npu_jupyter.package_data import read_package_text
from npu_jupyter.plan.graph import GraphView, Node
from npu_jupyter.plan.partition import Partition, partition
from npu_jupyter.plan.placement import Placement, _device_reason, _engine
from npu_jupyter.plan.settings import PlanSettings

_CPU, _ANY, _NPU = 0, 1, 2
SOURCE = "node_placer.cpp"


@functools.lru_cache(maxsize=1)
def _rules() -> dict[str, frozenset[str]]:
    """The op lists of ``tf2_placement.json`` as frozensets (parsed once per process)."""
    data = json.loads(read_package_text("npu_jupyter.plan", "tf2_placement.json"))
    return {k: frozenset(v) for k, v in data.items() if isinstance(v, list)}


def tf2_settings(settings: PlanSettings, changed: dict[str, Any]) -> tuple[PlanSettings, list[str]]:
    """Settings with every option the TF2 adapter does not read reset, and the set ones it ignores.

    ``mix_compile_mode`` is then switched on because it selects the partition behaviour NodePlacer
    shares (several clusters, constants copied into each); it is not a TF2 option.
    """
    from npu_jupyter.options import catalogue

    defaults = PlanSettings()
    reset: dict[str, Any] = {}
    for key in PlanSettings.__dataclass_fields__:
        if key != "soc" and key in catalogue.keys() and catalogue.spec(key).tf2 is None:
            reset[key] = getattr(defaults, key)
    reset["mix_compile_mode"] = True
    unread = sorted(k for k in changed if k in catalogue.keys() and catalogue.spec(k).tf2 is None)
    return dataclasses.replace(settings, **reset), unread


def supported(op: str, lib: Any) -> bool:
    """``NpuDevice::Supported``: a key of npu_supported_ops.json (isGray not read) or an add-on op."""
    if op in _rules()["addon_supported_ops"]:
        return True
    caps = lib.caps(op)
    return caps is not None and caps.engine != "HOST" and bool(getattr(caps, "declared", True))


def _subgraph_unsupported(names: Any, view: GraphView, lib: Any) -> list[str]:
    """Unsupported op types inside functions ``names`` and all they call (``GetSubgraphUnsupportedOps``)."""
    queue, seen, found = list(names), set(names), []
    while queue:
        info = view.functions.get(queue.pop(0))
        if info is None:
            continue
        found.extend(op for op in info.op_types if op not in found and not supported(op, lib))
        for callee in info.calls:
            if callee not in seen:
                seen.add(callee)
                queue.append(callee)
    return found


def _copyable(dtype: str) -> bool:
    """``DataTypeCanUseMemcpy``: can a tensor of ``dtype`` cross between CPU and NPU."""
    return dtype not in _rules()["non_copyable_dtypes"] and not dtype.endswith("_ref")


def _is_arg(n: Node) -> bool:
    return n.op == "Placeholder" and not n.inputs


def _resource_args(view: GraphView) -> tuple[set[int], dict[int, str]]:
    """(NPU substitutes, CPU resource args with why) among the function's resource arguments."""
    rules = _rules()
    cons = view.consumers()
    kinds: dict[int, str] = {}
    for n in view.order:
        if not (_is_arg(n) and n.output_dtypes[:1] == ["resource"]):
            continue
        ops = [view.order[j] for j, _ in cons[n.index]]
        if any(c.op in rules["iterator_consumer_ops"] for c in ops):
            kinds[n.index] = "iterator"
        elif all(
            c.functions or c.op in rules["variable_consumer_ops"] or c.op.startswith(tuple(rules["variable_consumer_prefixes"]))
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
    return {i for i in kinds if i not in cpu}, cpu


@dataclass
class Tf2Placement:
    """Placement and partition of one function graph under the npu_device rule."""

    placed: Placement
    part: Partition
    whole: bool  # the whole function compiles to one NPU graph
    notes: list[str] = field(default_factory=list)

    @property
    def mode_word(self) -> str:
        if self.whole:
            return "TF2 adapter (npu_device): whole function on the NPU"
        return f"TF2 adapter (npu_device): mixed, {len(self.part.subgraphs)} NPU cluster(s)"


def place_tf2(view: GraphView, lib: Any, s: PlanSettings) -> Tf2Placement:
    """Device flag, engine and reason of every node, and the NPU clusters, as npu_device decides."""
    count = len(view.order)
    placed = Placement(device=[False] * count, engine=["HOST"] * count, reason=[""] * count)
    substitutes, cpu_resources = _resource_args(view)
    problems = _unsupported(view, lib)
    bad_types = _uncopyable_io(view, substitutes)
    notes = _iterator_note(view, substitutes)
    whole = not problems and not bad_types
    must_npu: list[bool] | None = None
    if whole:
        for n in view.order:
            placed.device[n.index] = True
            placed.reason[n.index] = f"npu_device: {_whole_reason(n, lib, substitutes)} (npu_build_npu_op_optimizer.cpp)"
    else:
        why = "; ".join(x for x in (f"unsupported ops {', '.join(sorted(problems))}" if problems else "", bad_types) if x)
        notes.append(f"npu_device compiles this function in mix mode ({why}): NodePlacer splits it between NPU and CPU.")
        must_npu = _node_placer(view, lib, placed, substitutes, cpu_resources)
    part = _partition(view, placed, s, must_npu)
    for n in view.order:
        if placed.device[n.index]:
            placed.engine[n.index] = _engine(n, lib)
    return Tf2Placement(placed, part, whole, notes)


def _unsupported(view: GraphView, lib: Any) -> set[str]:
    """Unsupported op types of the graph and of every function it calls (``GetGraphUnsupportedOps``)."""
    out = {n.op for n in view.order if not _is_arg(n) and not supported(n.op, lib)}
    return out | set(_subgraph_unsupported(sorted({f for n in view.order for f in n.functions}), view, lib))


def _uncopyable_io(view: GraphView, substitutes: set[int]) -> str:
    """Inputs/outputs whose dtype cannot be copied (``ValidateInputTypes``/``ValidateOutputTypes``)."""
    ins = sorted({d for n in view.order if _is_arg(n) and n.index not in substitutes for d in n.output_dtypes if not _copyable(d)})
    outputs = getattr(view.tf_graph, "outputs", None) or []
    outs = sorted({o.dtype.name for o in outputs if not _copyable(o.dtype.name)})
    parts = [f"{d} input" for d in ins] + [f"{d} output" for d in outs]
    return ", ".join(parts) + (" cannot be copied to or from the NPU" if parts else "")


def _iterator_note(view: GraphView, substitutes: set[int]) -> list[str]:
    if not any(view.order[i].op == "Placeholder" and _reads_iterator(view, i) for i in substitutes):
        return []
    return [
        "npu_device reads the dataset iterator on the NPU (a mirrored iterator): with NPU_LOOP_SIZE a "
        "training loop consuming it runs on the device (TryTransToNpuLoopGraph); the plan shows one step."
    ]


def _reads_iterator(view: GraphView, i: int) -> bool:
    return any(view.order[j].op in _rules()["iterator_consumer_ops"] for j, _ in view.consumers()[i])


def _whole_reason(n: Node, lib: Any, substitutes: set[int]) -> str:
    if n.index in substitutes:
        return "resource argument replaced by its NPU variable/iterator (_is_substitute); the whole function is one NPU graph"
    if _is_arg(n):
        return "function argument: an input of the NPU graph, which holds the whole function"
    return f"every op of the function is supported, so the whole function is one NPU graph; {_supported_reason(n, lib)}"


def _supported_reason(n: Node, lib: Any) -> str:
    """The support sentence of a supported op, saying when the TF1 adapter would have kept it off."""
    if n.op == "Const":
        return "constant"
    if n.functions:
        return f"calls {', '.join(n.functions)}, whose ops are all supported"
    caps = lib.caps(n.op)
    if caps is None or caps.engine == "HOST":
        return f"{n.op} is an add-on op npu_device supports (npu_device.cpp LoadSupportedOps)"
    text = _device_reason(caps)
    if caps.gray_in_mix:
        text += " (isGray: the TF1 adapter keeps it on the host in mixed computing; npu_device ignores isGray)"
    return text


# --------------------------------------------------------------------------------------------
# NodePlacer (mix mode)
# --------------------------------------------------------------------------------------------


def _node_placer(
    view: GraphView, lib: Any, placed: Placement, substitutes: set[int], cpu_res: dict[int, str]
) -> list[bool]:
    """Steps 1-4 and 6 of NodePlacer::Apply; device flags and reasons into ``placed``.

    Returns which nodes must be on the NPU (step 1), which step 5 needs.
    """
    rules = _rules()
    state = [_ANY] * len(view.order)
    must_npu = [False] * len(view.order)
    reason = placed.reason
    for n in view.order:
        i = n.index
        state[i], reason[i] = _determined(n, view, lib, substitutes, cpu_res)
        must_npu[i] = state[i] == _NPU
    _returned_uncopyable(view, state, reason, must_npu, placed.errors)
    _spread_cpu(view, state, reason, must_npu, placed.errors)
    _concrete(view, state, reason, substitutes)
    mutex = any(n.op in rules["cpu_only_marker_ops"] for n in view.order)
    for n in view.order:
        i = n.index
        if state[i] == _ANY and n.op != "Const" and mutex:
            state[i] = _CPU
            reason[i] = (
                f"npu_device: the function holds MutexLock (tf.CriticalSection), so only ops that must run on the "
                f"NPU are compiled: runs on the CPU ({SOURCE} SpreadNpuNode)"
            )
        elif state[i] != _CPU and n.op != "Const":
            state[i] = _NPU
            if not reason[i]:
                reason[i] = f"npu_device: {_supported_reason(n, lib)}; joins an NPU cluster ({SOURCE} SpreadNpuNode)"
    for n in view.order:
        placed.device[n.index] = state[n.index] == _NPU
    _copied_consts(view, placed)
    return must_npu


def _determined(
    n: Node, view: GraphView, lib: Any, substitutes: set[int], cpu_res: dict[int, str]
) -> tuple[int, str]:
    """``DeterminedSurelyNodes``: (state, reason) of one node before any spreading."""
    where = f"({SOURCE} DeterminedSurelyNodes)"
    if n.index in substitutes:
        what = "iterator" if n.output_dtypes[:1] == ["resource"] else "resource"
        return _NPU, f"npu_device: resource argument replaced by its NPU variable/{what} (_is_substitute): on the NPU {where}"
    if n.index in cpu_res:
        return _CPU, f"npu_device: {cpu_res[n.index]} (_Arg frame node): on the CPU {where}"
    if _is_arg(n):
        return _CPU, f"npu_device: function argument (_Arg frame node): on the CPU; its value enters NPU clusters as an input {where}"
    if n.op == "Const":
        return _ANY, ""
    if not supported(n.op, lib):
        return _CPU, f"npu_device: {n.op} is not in npu_supported_ops.json: runs on the CPU {where}"
    if n.op in _rules()["npu_specific_ops"]:
        return _NPU, f"npu_device: {n.op} is an op of the adapter's own library (npu specific): on the NPU {where}"
    problems = _subgraph_unsupported(n.functions, view, lib) if n.functions else []
    if problems:
        return _CPU, (
            f"npu_device: calls {', '.join(n.functions)}, which holds {', '.join(problems[:3])} (not in "
            f"npu_supported_ops.json): runs on "
            f"the CPU {where}; the ops inside are placed again by the same rule (PlaceCpuNodeSubgraphs)"
        )
    return _ANY, ""


def _returned_uncopyable(
    view: GraphView, state: list[int], reason: list[str], must_npu: list[bool], errors: list[str]
) -> None:
    """A function output feeds a ``_Retval`` (a CPU frame node): an uncopyable one pulls its producer."""
    for out in getattr(view.tf_graph, "outputs", None) or []:
        n = view.nodes.get(out.op.name)
        dtype = out.dtype.name
        if n is None or _copyable(dtype) or state[n.index] == _CPU:
            continue
        if must_npu[n.index]:
            errors.append(f"Failed spread place {n.name} on cpu as has placed on npu (npu_device {SOURCE} SpreadCpuNode)")
            continue
        state[n.index] = _CPU
        reason[n.index] = (
            f"npu_device: returns a {dtype} tensor from the function; the return value (_Retval) is on the CPU and "
            f"{dtype} tensors cannot be copied, so it runs on the CPU ({SOURCE} SpreadCpuNode)"
        )


def _spread_cpu(view: GraphView, state: list[int], reason: list[str], must_npu: list[bool], errors: list[str]) -> None:
    """``SpreadCpuNode``: CPU placement crosses every uncopyable data edge, both ways, to a fixed point."""
    order, cons = view.order, view.consumers()
    work = [i for i, st in enumerate(state) if st == _CPU]
    seen = set(work)
    while work:
        i = work.pop()
        n = order[i]
        edges = [(j, order[j].input_dtypes[pos], "feeds") for j, pos in cons[i]]
        edges += [(k, n.input_dtypes[pos], "reads") for pos, k in enumerate(n.in_idx) if k >= 0]
        for j, dtype, verb in edges:
            if j in seen or _copyable(dtype):
                continue
            seen.add(j)
            work.append(j)
            if must_npu[j]:
                errors.append(
                    f"Failed spread place {order[j].name} on cpu as has placed on npu (npu_device {SOURCE} "
                    f"SpreadCpuNode: it exchanges a {dtype} tensor with CPU op {n.name}; the function fails to compile)"
                )
                continue
            if state[j] == _ANY:
                state[j] = _CPU
                other = "to" if verb == "reads" else "from"
                reason[j] = (
                    f"npu_device: {'gets' if verb == 'feeds' else 'sends'} a {dtype} tensor {other} CPU op {n.name}; "
                    f"{dtype} tensors cannot be copied between CPU and NPU, so it runs on the CPU ({SOURCE} SpreadCpuNode)"
                )


def _concrete(view: GraphView, state: list[int], reason: list[str], substitutes: set[int]) -> None:
    """``BuildConcreteCluster``: ends of an uncopyable edge and the nodes on paths between them stay together.

    Constants and substitutes are copied per consumer first (CopyShareableNode), so an edge leaving
    one has no path nodes. A group holding a CPU node goes wholly to the CPU.
    """
    order = view.order
    parent = list(range(len(order)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def union(a: int, b: int) -> None:
        parent[find(a)] = find(b)

    for n in order:
        for pos, u in enumerate(n.in_idx):
            if u < 0 or _copyable(n.input_dtypes[pos]) or state[u] == _CPU:
                continue
            union(u, n.index)
            if order[u].op != "Const" and u not in substitutes:
                for k in _path_nodes(view, u, n.index):
                    union(k, n.index)
    groups: dict[int, list[int]] = {}
    for i in range(len(order)):
        groups.setdefault(find(i), []).append(i)
    for members in groups.values():
        cpu = [i for i in members if state[i] == _CPU]
        if len(members) < 2 or not cpu:
            continue
        for i in members:
            if state[i] != _CPU:
                state[i] = _CPU
                reason[i] = (
                    f"npu_device: joined to CPU op {order[cpu[0]].name} by string/resource/variant tensors (or lies on a "
                    f"path between the ends of one), so they are placed together on the CPU ({SOURCE} BuildConcreteCluster)"
                )


def _path_nodes(view: GraphView, u: int, v: int) -> set[int]:
    """Nodes strictly between ``u`` and ``v`` on some path from ``u`` to ``v`` (data and control edges)."""
    preds, succs = view.preds(), view.succs()
    down: set[int] = set()
    stack = [u]
    while stack:
        for j in succs[stack.pop()]:
            if j < v and j not in down:
                down.add(j)
                stack.append(j)
    up: set[int] = set()
    stack = [v]
    while stack:
        for j in preds[stack.pop()]:
            if j > u and j not in up and j in down:
                up.add(j)
                stack.append(j)
    return up


def _copied_consts(view: GraphView, placed: Placement) -> None:
    """``CopyShareableNode``: a constant is copied to each consumer, so it is on the NPU when one is."""
    cons, succs = view.consumers(), view.succs()
    for n in view.order:
        if n.op != "Const":
            continue
        i = n.index
        on_npu = any(placed.device[j] for j, _ in cons[i]) or any(placed.device[j] for j in succs[i])
        placed.device[i] = on_npu
        placed.reason[i] = (
            f"npu_device: constant, copied into the NPU cluster of each consumer ({SOURCE} CopyShareableNode)"
            if on_npu
            else f"npu_device: constant used only by CPU ops: stays on the CPU ({SOURCE} CopyShareableNode)"
        )


# --------------------------------------------------------------------------------------------
# clusters (NpuCall ops)
# --------------------------------------------------------------------------------------------

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
    meaningless = _rules()["npu_meaningless_ops"]
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
