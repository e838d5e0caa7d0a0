"""Device clusters (the adapter's GeOps) and the tensors that cross between host and device.

The entry point applies the adapter's partition rules in order: group the candidates into cycle-free
clusters (:mod:`clustering`), drop a lone NoOp/Identity, merge unrelated clusters (full offload keeps
only the largest, cutting the rest off to the host; mixed computing and lazy_recompile keep several),
then list every tensor that crosses a GeOp boundary (tests/data/reference/ADAPTER-FACTS.md §3.5).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import compress, repeat
from operator import ne
from typing import Callable, Iterable, Sequence

from npu_jupyter._ops.variable_ops import VARIABLE_OPS
from npu_jupyter._plan.clustering import group_candidates, merge_unreachable
from npu_jupyter._plan.graph.graph import GraphView, Node
from npu_jupyter._plan.model import Subgraph, Transfer
from npu_jupyter._plan.placement import Placement
from npu_jupyter._plan.settings import PlanSettings
from npu_jupyter._units import DTYPE_BYTES

GRAPH_COUNTER = 1  # the adapter numbers GeOps per graph: GeOp<graph>_<cluster>
_DTYPE_BYTES = DTYPE_BYTES
CUT_OFF_REASON = (
    "cut off from the largest device cluster: full offload keeps only one GeOp, so this op silently "
    "runs on the host CPU — enable mix_compile_mode or wrap the unsupported ops in "
    "without_npu_compile_scope"
)
CHECKPOINT_PATH_REASON = (
    "a Saver's checkpoint path/control op, cut off from the largest device cluster with its checkpoint "
    "ops: it stays on the host next to SaveV2/RestoreV2 (which run there); no compute is lost"
)
# tf.train.Saver's checkpoint I/O (tests/data/reference/ADAPTER-FACTS.md §3.5-6/8, §3.6: GE cannot run these)
_CHECKPOINT_OPS = frozenset(
    {
        "SaveV2",
        "RestoreV2",
        "MergeV2Checkpoints",
        "Save",
        "SaveSlices",
        "Restore",
        "RestoreSlice",
        "ShardedFilename",
        "ShardedFilespec",
        "StringJoin",
    }
)


@dataclass
class Partition:
    """Clusters (node indices, largest first), each node's cluster name, edges crossing the boundary."""

    clusters: list[list[int]]
    cluster_of: list[str | None]
    subgraphs: list[Subgraph]
    transfers: list[Transfer] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------------------------
# transfers and boundary checks
# --------------------------------------------------------------------------------------------


def _bytes(shape_of: Callable[[str, int], tuple[int, ...] | None], src: str, slot: int, dtype: str) -> int | None:
    """Bytes of output ``slot`` of ``src`` from its static shape (``shape_of``), None when not fully known."""
    size = _DTYPE_BYTES.get(dtype)
    if size is None:
        return None
    shape = shape_of(src, slot)
    if shape is None:
        return None
    for d in shape:
        size *= d
    return size


# Const and variables: the ops mixed computing copies into each GeOp that reads them
_REPLICABLE = VARIABLE_OPS | {"Const"}


def _replicated(
    view: GraphView, cluster_of: list[str | None], s: PlanSettings, part: Partition, outside: list[int] | None
) -> set[int]:
    """Mixed computing: variables and consts feeding several GeOps are copied into each one."""
    if not s.mix_compile_mode or len(part.clusters) < 2:
        return set()
    cons = view.consumers()
    out: set[int] = set()
    for n in _producers_of(view, outside):
        if n.op not in _REPLICABLE:
            continue
        i = n.index
        if cluster_of[i] is None:
            continue
        variable = n.op != "Const"
        if variable and s.variable_placement == "Host":
            continue
        if _reaches_two_clusters(cons[i], cluster_of):
            targets = sorted({c for c in (cluster_of[j] for j, _ in cons[i]) if c is not None})
            out.add(i)
            kind = "variable" if variable else "constant"
            part.notes.append(f"{kind} {n.name} is replicated into each GeOp that uses it: {', '.join(targets)}")
        if variable:
            for j, pos in cons[i]:
                d = view.order[j]
                reads_ref = (d.input_refs is not None and d.input_refs[pos]) or d.input_dtypes[pos] == "resource"
                if cluster_of[j] is None and reads_ref:
                    part.errors.append(f"Ref Tensors (e.g., Variables) output: {n.name} is not in white list")
                    break
    return out


def _reaches_two_clusters(uses: list[tuple[int, int]], cluster_of: list[str | None]) -> bool:
    """True when the consumers in ``uses`` lie in two or more GeOps (most consts feed one op)."""
    first = None
    for j, _ in uses:
        c = cluster_of[j]
        if c is not None and c != first:
            if first is not None:
                return True
            first = c
    return False


# Every edge crossing a GeOp boundary has an end outside the largest GeOp. In a training graph nearly
# every node is in one GeOp, so the boundary checks look only around the nodes outside it.


def _outside_largest(cluster_of: list[str | None], clusters: list[list[int]]) -> list[int] | None:
    """Nodes outside the largest GeOp in ascending order; None when they are over half the graph."""
    count = len(cluster_of)
    largest = max(clusters, key=len, default=None)
    if not largest or (count - len(largest)) * 2 > count:
        return None
    return list(compress(range(count), map(ne, cluster_of, repeat(cluster_of[largest[0]]))))


def _producers_of(view: GraphView, outside: list[int] | None) -> Iterable[Node]:
    """Nodes with a consumer outside the largest GeOp, in topological order (every node without a list).

    Only those can feed two GeOps or feed the host from a GeOp.
    """
    order = view.order
    if outside is None:
        return order
    found = bytearray(len(order))
    for i in outside:
        for j in order[i].in_idx:
            if j >= 0:
                found[j] = 1
    return map(order.__getitem__, compress(range(len(order)), found))


def _crossing_edges(
    view: GraphView, cluster_of: list[str | None], clusters: list[list[int]], outside: list[int] | None
) -> Iterable[tuple[int, int]]:
    """(consumer, input position) of every data edge between two GeOps or a GeOp and the host, in order.

    Such an edge ends outside the largest GeOp, or starts outside it and ends inside: the in-edges
    of the nodes outside it and their out-edges into it, sorted. Without that list, every edge is
    looked at.
    """
    order = view.order
    if outside is None:
        return (
            (i, pos)
            for i, n in enumerate(order)
            for pos, j in enumerate(n.in_idx)
            if j >= 0 and cluster_of[j] != cluster_of[i]
        )
    largest = cluster_of[max(clusters, key=len)[0]]
    cons = view.consumers()
    edges: list[tuple[int, int]] = []
    for i in outside:
        c = cluster_of[i]
        for pos, j in enumerate(order[i].in_idx):
            if j >= 0 and cluster_of[j] != c:
                edges.append((i, pos))
        for use in cons[i]:
            if cluster_of[use[0]] == largest:
                edges.append(use)
    edges.sort()
    return edges


def _transfers(
    view: GraphView, cluster_of: list[str | None], replicated: set[int], part: Partition, outside: list[int] | None
) -> None:
    """One Transfer per tensor leaving a GeOp (d2h) and per (tensor, GeOp) it enters (h2d).

    Keyed like the adapter's ``_Retval``/``_Arg`` so that a tensor read by several ops is moved, and
    counted in ``transfer_bytes``, once; later readers are appended to ``consumers``. A transfer is
    found or made inline, in the loop, rather than by a call per crossing edge: mixed computing's
    plan of ResNet-50's training step has 1,178 crossing edges and 1,072 transfers.
    """
    order = view.order
    shape_of = None  # resolved at the first crossing tensor: a plan with none never asks the graph
    sizes: dict[str, int | None] = {}
    seen: dict[tuple[str, str | None], Transfer] = {}
    made = part.transfers
    for i, pos in _crossing_edges(view, cluster_of, part.clusters, outside):
        n = order[i]
        j = n.in_idx[pos]
        if j in replicated:
            continue
        src_c, dst_c = cluster_of[j], cluster_of[i]
        src, slot, dtype = n.input_names[pos], n.input_slots[pos], n.input_dtypes[pos]
        tensor = f"{src}:{slot}"
        if tensor not in sizes:
            if shape_of is None:
                shape_of = view.shape_reader()
            sizes[tensor] = _bytes(shape_of, src, slot, dtype)
        name = n.name
        # OMSplitter looks at the *destination's* input type: a ref output read through a plain
        # input (SaveV2 reading a VariableV2) is cast to a value and crosses without complaint
        is_ref = n.input_refs is not None and n.input_refs[pos]
        size = sizes[tensor]
        if src_c is not None:  # leaves a GeOp: one _Retval whatever reads it
            key: tuple[str, str | None] = (tensor, None)
            t = seen.get(key)
            if t is None:
                t = seen[key] = Transfer(src, name, tensor, dtype, "d2h", size, [name])
                made.append(t)
            elif t.consumers[-1] != name:  # one op reading the tensor twice is still one consumer
                t.consumers.append(name)
            if is_ref:
                part.errors.append(_ref_error("d2h", tensor, src_c, dst_c, name))
        if dst_c is not None:  # enters a GeOp: one _Arg per GeOp
            key = (tensor, dst_c)
            t = seen.get(key)
            if t is None:
                t = seen[key] = Transfer(src, name, tensor, dtype, "h2d", size, [name])
                made.append(t)
            elif t.consumers[-1] != name:
                t.consumers.append(name)
            if is_ref:
                part.errors.append(_ref_error("h2d", tensor, src_c, dst_c, name))


def _ref_error(direction: str, tensor: str, src_c: str | None, dst_c: str | None, name: str) -> str:
    """The adapter's error for a ref tensor crossing a GeOp boundary (a result or an argument)."""
    if direction == "d2h":
        return f"Ref Tensors (e.g., Variables) are not supported as results: {tensor} of {src_c} read by {name}"
    return f"Ref Tensors (e.g., Variables) are not supported as args: {tensor} read by {name} in {dst_c}"


def _is_checkpoint_plumbing(
    view: GraphView, group: list[int], preds: Sequence[Sequence[int]], succs: Sequence[Sequence[int]]
) -> bool:
    """True when a cut-off cluster only carries a Saver's checkpoint paths and control.

    Every ``tf.compat.v1.train.Saver`` adds such clusters (filename consts, ``save/control_dependency``;
    a sharded one also picks the temp prefix with StaticRegexFullMatch/Select and packs prefixes) next
    to its SaveV2/RestoreV2, which always run on the host; keeping them there loses no compute, so they
    deserve no full-offload warning. A cluster qualifies when every op only handles strings (see
    :func:`_handles_only_paths`) and it touches at least one checkpoint op.
    """
    order = view.order
    touches = False
    for i in group:
        n = order[i]
        if not _handles_only_paths(n):
            return False
        touches = (
            touches or n.op in _CHECKPOINT_OPS or any(order[j].op in _CHECKPOINT_OPS for j in (*preds[i], *succs[i]))
        )
    return touches


def _handles_only_paths(n: Node) -> bool:
    """Checkpoint op, NoOp, an op producing only strings, or a string predicate (StaticRegexFullMatch)."""
    if n.op in _CHECKPOINT_OPS or n.op == "NoOp":
        return True
    outs = n.output_dtypes
    if outs and all(d == "string" for d in outs):
        return True
    ins = n.input_dtypes
    return bool(ins) and bool(outs) and all(d == "string" for d in ins) and all(d == "bool" for d in outs)


def _checkpoint_note(view: GraphView, groups: list[list[int]]) -> str:
    """Say once that the Saver's path ops stay on the host, so their per-op reasons are not a surprise."""
    names = [view.order[i].name for g in groups for i in sorted(g)]
    shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    return (
        f"{len(names)} checkpoint path/control ops of a Saver (SaveV2/RestoreV2 run on the host) are "
        f"kept on the host with their checkpoint ops, outside the GeOp: {shown}. No compute is lost."
    )


def _cut_off_warning(
    view: GraphView, cut: list[int], device: list[bool], preds: Sequence[Sequence[int]], succs: Sequence[Sequence[int]]
) -> str:
    """Name the ops cut off and the host ops that separate them from the GeOp."""
    cut_set = set(cut)
    blockers: list[str] = []
    seen: set[int] = set()
    for i in cut:
        for j in (*preds[i], *succs[i]):
            if j not in cut_set and not device[j] and j not in seen and view.order[j].op != "Const":
                seen.add(j)
                blockers.append(view.order[j].name)
    names = [view.order[i].name for i in cut]
    shown = ", ".join(names[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")
    why = f" (separated from it by host ops such as {', '.join(blockers[:5])})" if blockers else ""
    return (
        f"Full offload keeps only the largest device cluster: {len(names)} supported ops are cut off "
        f"from it{why} and silently run on the host CPU: {shown}. Enable mixed computing "
        "(mix_compile_mode=True) to offload them as further GeOps, or wrap the unsupported ops in "
        "without_npu_compile_scope."
    )


def _getnexts_kept_apart(view: GraphView, device: list[bool], s: PlanSettings) -> frozenset[int]:
    """Device GetNexts whose out-edges the adapter does not contract (lazy_recompile + enable_dp)."""
    if not (s.lazy_recompile and s.enable_data_pre_proc):
        return frozenset()
    if "IteratorGetNext" not in view.op_counts():
        return frozenset()
    return frozenset(n.index for n in view.order if n.op == "IteratorGetNext" and device[n.index])


# --------------------------------------------------------------------------------------------
# entry point
# --------------------------------------------------------------------------------------------


def partition(view: GraphView, placed: Placement, s: PlanSettings) -> Partition:
    """Cluster the candidates, apply the full-offload single-GeOp rule and list boundary tensors.

    Nodes cut off from the surviving GeOp are moved to the host in ``placed`` (flag, engine, reason).
    """
    device = placed.device
    preds, succs = view.preds(), view.succs()
    kept_apart = _getnexts_kept_apart(view, device, s)
    groups = group_candidates(device, preds, succs, s.mix_compile_mode or s.lazy_recompile, kept_apart)
    if groups and len(groups[0]) == 1:  # §3.5-3: lone NoOp/Identity are not worth a GeOp
        for g in groups:
            if view.order[g[0]].op in ("NoOp", "Identity"):
                device[g[0]] = False
                placed.engine[g[0]] = "HOST"
                placed.reason[g[0]] = "a lone NoOp/Identity is not offloaded when no larger cluster exists"
        groups = [g for g in groups if device[g[0]]]
    # lazy_recompile merges GeOps "in the new way" of mixed computing: several GeOps, none cut off
    full_offload = not (s.mix_compile_mode or s.lazy_recompile)
    merged, cut = merge_unreachable(groups, preds, succs, full_offload)
    part = Partition(clusters=merged, cluster_of=[None] * len(device), subgraphs=[])
    if s.lazy_recompile and not s.mix_compile_mode and len(merged) > 1:
        part.notes.append(
            f"dynamic_input with dynamic_graph_execute_mode='lazy_recompile': the adapter keeps "
            f"{len(merged)} GeOps apart, as in mixed computing, instead of keeping only the "
            "largest one; no supported op is cut off to the host."
        )
    for i in kept_apart:
        if device[i]:
            placed.reason[i] += (
                "; lazy_recompile with enable_data_pre_proc: the adapter never merges a GetNext "
                "with its consumers, so it gets a GeOp of its own"
            )
    if cut:
        cut_nodes = sorted(i for g in cut for i in g)
        for i in cut_nodes:
            device[i] = False
            placed.engine[i] = "HOST"
            placed.reason[i] = CUT_OFF_REASON
        plumbing = [g for g in cut if _is_checkpoint_plumbing(view, g, preds, succs)]
        for i in (i for g in plumbing for i in g):  # no advice to change the config for these
            placed.reason[i] = CHECKPOINT_PATH_REASON
        worth_warning = sorted(i for g in cut if g not in plumbing for i in g)
        if worth_warning:
            part.warnings.append(_cut_off_warning(view, worth_warning, device, preds, succs))
        if plumbing:
            part.notes.append(_checkpoint_note(view, plumbing))
    order = view.order
    for k, members in enumerate(merged):
        name = f"GeOp{GRAPH_COUNTER}_{k}"
        for i in members:
            part.cluster_of[i] = name
        part.subgraphs.append(Subgraph(name, [order[i].name for i in members]))
    outside = _outside_largest(part.cluster_of, merged)
    replicated = _replicated(view, part.cluster_of, s, part, outside)
    _transfers(view, part.cluster_of, replicated, part, outside)
    return part
