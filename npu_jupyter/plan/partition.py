"""Device clusters (the adapter's GeOps) and the tensors that cross between host and device.

The adapter contracts candidate→candidate edges one at a time with a dynamic cycle check (TF
``GraphCycles``), then, in full offload, keeps only the largest cluster plus clusters mutually
unreachable from it; in mixed computing it keeps several (ADAPTER-FACTS §3.5).

Doing the same edge by edge in Python is quadratic on large graphs. Instead each node gets a *level*:
the largest number of host nodes (that have a device ancestor) on any path reaching it. Two adjacent
candidates with the same level can never be joined by a path through a host node, so merging every
connected same-level group of candidates is cycle-free, and the whole step is one pass in topological
order (linear). The level rule can split an edge the adapter would contract (a host node on a
parallel branch raises one end's level); a repair pass then rejoins such groups when no path through
anything else connects them, using one bitset per node over groups. Reachability between clusters
for the final merge step is exact.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from npu_jupyter.ops.variable_ops import VARIABLE_OPS
from npu_jupyter.plan.graph import GraphView, Node
from npu_jupyter.plan.model import Subgraph, Transfer
from npu_jupyter.plan.placement import Placement
from npu_jupyter.plan.settings import PlanSettings

GRAPH_COUNTER = 1  # the adapter numbers GeOps per graph: GeOp<graph>_<cluster>
_DTYPE_BYTES = {
    "float16": 2, "bfloat16": 2, "float32": 4, "float64": 8, "int8": 1, "uint8": 1, "int16": 2,
    "uint16": 2, "int32": 4, "uint32": 4, "int64": 8, "uint64": 8, "bool": 1, "complex64": 8,
    "complex128": 16, "qint8": 1, "quint8": 1, "qint32": 4,
}
CUT_OFF_REASON = (
    "cut off from the largest device cluster: full offload keeps only one GeOp, so this op silently "
    "runs on the host CPU — enable mix_compile_mode or wrap the unsupported ops in "
    "without_npu_compile_scope"
)
# tf.train.Saver's checkpoint I/O (ADAPTER-FACTS §3.5-6/8, §3.6: GE cannot run these)
_CHECKPOINT_OPS = frozenset({"SaveV2", "RestoreV2", "MergeV2Checkpoints", "Save", "SaveSlices", "Restore",
                             "RestoreSlice", "ShardedFilename", "ShardedFilespec", "StringJoin"})


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
# graph helpers
# --------------------------------------------------------------------------------------------


def _find(parent: list[int], i: int) -> int:
    while parent[i] != i:
        parent[i] = parent[parent[i]]
        i = parent[i]
    return i


def _group(device: list[bool], preds: list[list[int]], succs: list[list[int]], mix: bool,
           kept_apart: frozenset[int] = frozenset()) -> list[list[int]]:
    """Cycle-free clusters: connected candidates with equal host-crossing level (one linear pass).

    ``kept_apart`` holds nodes whose out-edges are never contracted (a GetNext under lazy_recompile):
    they and their consumers end up in different clusters.

    Source candidates (no inputs: consts, variables, random shapes) have level 0 whatever they feed;
    they join their consumers' cluster instead when that adds no path (all consumers in one cluster),
    or, in mixed computing, the largest consumer cluster (the adapter copies consts and variables into
    every GeOp that uses them).
    """
    count = len(device)
    level = [0] * count
    tainted = [False] * count  # host node with a device ancestor: a path may come back from it
    parent = list(range(count))
    for i in range(count):
        ps = preds[i]
        if device[i]:
            lv = 0
            for p in ps:
                if device[p]:
                    if level[p] > lv:
                        lv = level[p]
                elif tainted[p] and level[p] + 1 > lv:
                    lv = level[p] + 1
            level[i] = lv
            # i is still its own root here (unions only happen at a node's own step), so its root
            # is tracked instead of searched for: the same roots, half the _find calls.
            root = i
            for p in ps:
                if device[p] and level[p] == lv and p not in kept_apart:
                    a = _find(parent, p)
                    if a != root:
                        parent[root] = a
                        root = a
        else:
            lv = 0
            t = False
            for p in ps:
                if device[p] or tainted[p]:
                    t = True
                    if level[p] > lv:
                        lv = level[p]
            level[i] = lv
            tainted[i] = t
    sources = [i for i in range(count) if device[i] and not preds[i]]
    size = [0] * count
    for i in range(count):
        if device[i] and preds[i]:
            size[_find(parent, i)] += 1
    for i in sources:
        if i in kept_apart:
            continue
        roots = {_find(parent, j) for j in succs[i] if device[j] and preds[j]}
        if len(roots) == 1 or (mix and roots):
            target = max(roots, key=lambda r: (size[r], -r))
            parent[_find(parent, i)] = target
    groups: dict[int, list[int]] = {}
    for i in range(count):
        if device[i]:
            groups.setdefault(_find(parent, i), []).append(i)
    return _rejoin(list(groups.values()), device, preds, kept_apart)


_REJOIN_PASSES = 8
# Above this many groups, per-node bitsets would not fit comfortably in memory: groups stay as they
# are (possibly finer than the adapter's clusters, never cyclic).
_MAX_BITSET_CLUSTERS = 4096


def _rejoin(groups: list[list[int]], device: list[bool], preds: list[list[int]],
            kept_apart: frozenset[int] = frozenset()) -> list[list[int]]:
    """Merge groups the level rule split although no path joins them through anything else.

    The level rule splits candidate edge a→b when b is also fed by a host node that has *some* device
    ancestor, even one unrelated to a. The adapter merges such edges (no cycle arises), so: for each
    group, collect the groups that reach it through an outside predecessor (bitsets, one topological
    pass); a→b may merge when a's group is not among them for b's group. Merges in one pass form a
    matching (each group at most once) so the reachability used stays exact; passes repeat.
    """
    count = len(device)
    for _ in range(_REJOIN_PASSES):
        k = len(groups)
        if k < 2 or k > _MAX_BITSET_CLUSTERS:
            break
        gid = [-1] * count
        for c, g in enumerate(groups):
            for i in g:
                gid[i] = c
        cross = [(gid[p], gid[i]) for i in range(count) if gid[i] >= 0
                 for p in preds[i] if gid[p] >= 0 and gid[p] != gid[i] and p not in kept_apart]
        if not cross:
            break
        up = [0] * count
        for i in range(count):
            acc = (1 << gid[i]) if gid[i] >= 0 else 0
            for p in preds[i]:
                acc |= up[p]
            up[i] = acc
        entering = [0] * k  # groups with a path into group c through a node outside it
        for i in range(count):
            c = gid[i]
            if c < 0:
                continue
            for p in preds[i]:
                d = gid[p]
                if d != c:
                    entering[c] |= up[p] & ~(1 << d) if d >= 0 else up[p]
        parent = list(range(k))
        touched = bytearray(k)
        merged_any = False
        for a, b in cross:
            if touched[a] or touched[b] or entering[b] >> a & 1:
                continue
            touched[a] = touched[b] = 1
            parent[b] = a
            merged_any = True
        if not merged_any:
            break
        joined: dict[int, list[int]] = {}
        for c, g in enumerate(groups):
            joined.setdefault(parent[c], []).extend(g)
        groups = [sorted(g) for g in joined.values()]
    return sorted(groups, key=lambda g: (-len(g), g[0]))


class _Reach:
    """Nodes reachable from / reaching a growing set of clusters; each node is visited once."""

    def __init__(self, preds: list[list[int]], succs: list[list[int]]) -> None:
        self.preds, self.succs = preds, succs
        self.fwd = bytearray(len(preds))
        self.bwd = bytearray(len(preds))

    def add(self, members: list[int]) -> None:
        for mark, nxt in ((self.fwd, self.succs), (self.bwd, self.preds)):
            stack = [i for i in members if not mark[i]]
            for i in stack:
                mark[i] = 1
            while stack:
                i = stack.pop()
                for j in nxt[i]:
                    if not mark[j]:
                        mark[j] = 1
                        stack.append(j)

    def unrelated(self, members: list[int]) -> bool:
        fwd, bwd = self.fwd, self.bwd
        return not any(fwd[i] or bwd[i] for i in members)


def _merge_unreachable(groups: list[list[int]], preds: list[list[int]], succs: list[list[int]],
                       full_offload: bool) -> tuple[list[list[int]], list[list[int]]]:
    """Merge mutually unreachable clusters; full offload returns the rest as cut off."""
    if not groups:
        return [], []
    if full_offload:
        return _merge_into_largest(groups, preds, succs)
    return _merge_all(groups, preds), []


def _merge_into_largest(groups: list[list[int]], preds: list[list[int]], succs: list[list[int]]
                        ) -> tuple[list[list[int]], list[list[int]]]:
    """Full offload: the largest cluster absorbs every cluster unrelated to all it holds (§3.5-4).

    Reachability sets only grow as clusters join, so each node is visited at most once per direction.
    """
    reach = _Reach(preds, succs)
    reach.add(groups[0])
    members = list(groups[0])
    cut: list[list[int]] = []
    for g in groups[1:]:
        if reach.unrelated(g):
            reach.add(g)
            members.extend(g)
        else:
            cut.append(g)
    return [sorted(members)], cut


def _merge_all(groups: list[list[int]], preds: list[list[int]]) -> list[list[int]]:
    """Mixed computing: walking clusters by size, each absorbs those unrelated to it (§3.5-5).

    Which clusters reach which is computed once with one bitset per node (a Python int with one bit
    per cluster) in topological order, so the merge costs O(edges * clusters / 64) word operations
    instead of a graph search per cluster. Above ``_MAX_BITSET_CLUSTERS`` clusters are kept as they are.
    """
    k = len(groups)
    if k == 1 or k > _MAX_BITSET_CLUSTERS:
        return [sorted(g) for g in groups]
    count = len(preds)
    own = [0] * count
    for c, g in enumerate(groups):
        bit = 1 << c
        for i in g:
            own[i] = bit
    up = [0] * count  # clusters with a path to the node (itself included)
    for i in range(count):
        acc = own[i]
        for p in preds[i]:
            acc |= up[p]
        up[i] = acc
    ancestors = [0] * k  # clusters that reach cluster c
    for c, g in enumerate(groups):
        acc = 0
        for i in g:
            acc |= up[i]
        ancestors[c] = acc & ~(1 << c)
    descendants = [0] * k  # clusters cluster c reaches (transpose of ancestors)
    for c in range(k):
        a = ancestors[c]
        while a:
            low = a & -a
            descendants[low.bit_length() - 1] |= 1 << c
            a ^= low
    remaining = (1 << k) - 1
    merged: list[list[int]] = []
    for a in range(k):
        if not remaining >> a & 1:
            continue
        remaining &= ~(1 << a)
        held = 1 << a
        related = ancestors[a] | descendants[a]
        members = list(groups[a])
        free = remaining & ~related
        while free:
            low = free & -free
            free ^= low
            b = low.bit_length() - 1
            if (ancestors[b] | descendants[b]) & held or related & low:
                continue
            held |= low
            related |= ancestors[b] | descendants[b]
            remaining &= ~low
            members.extend(groups[b])
            free &= ~related
        merged.append(sorted(members))
    return merged


# --------------------------------------------------------------------------------------------
# transfers and boundary checks
# --------------------------------------------------------------------------------------------


def _bytes(view: GraphView, tensor: str, dtype: str, cache: dict[str, int | None]) -> int | None:
    if tensor in cache:
        return cache[tensor]
    shape = view.shape(tensor)
    size = _DTYPE_BYTES.get(dtype)
    out = None
    if shape is not None and size is not None:
        out = size
        for d in shape:
            out *= d
    cache[tensor] = out
    return out


def _replicated(view: GraphView, cluster_of: list[str | None], s: PlanSettings, part: Partition) -> set[int]:
    """Mixed computing: variables and consts feeding several GeOps are copied into each one."""
    if not s.mix_compile_mode or len(part.clusters) < 2:
        return set()
    cons = view.consumers()
    out: set[int] = set()
    for n in view.order:
        i = n.index
        if cluster_of[i] is None or (n.op not in VARIABLE_OPS and n.op != "Const"):
            continue
        if n.op in VARIABLE_OPS and s.variable_placement == "Host":
            continue
        targets = sorted({cluster_of[j] for j, _ in cons[i] if cluster_of[j] is not None})
        if len(targets) > 1:
            out.add(i)
            kind = "constant" if n.op == "Const" else "variable"
            part.notes.append(f"{kind} {n.name} is replicated into each GeOp that uses it: {', '.join(targets)}")
        if n.op in VARIABLE_OPS:
            for j, pos in cons[i]:
                d = view.order[j]
                reads_ref = (d.input_refs is not None and d.input_refs[pos]) or d.input_dtypes[pos] == "resource"
                if cluster_of[j] is None and reads_ref:
                    part.errors.append(f"Ref Tensors (e.g., Variables) output: {n.name} is not in white list")
                    break
    return out


def _transfers(view: GraphView, cluster_of: list[str | None], replicated: set[int], part: Partition) -> None:
    """One Transfer per tensor leaving a GeOp (d2h) and per (tensor, GeOp) it enters (h2d).

    Keyed like the adapter's ``_Retval``/``_Arg`` so that a tensor read by several ops is moved, and
    counted in ``transfer_bytes``, once; later readers are appended to ``consumers``.
    """
    order = view.order
    cache: dict[str, int | None] = {}
    seen: dict[tuple[str, str | None], Transfer] = {}
    for n in order:
        dst_c = cluster_of[n.index]
        # producer indices, not names: most edges stay inside one cluster and are skipped cheaply
        for pos, j in enumerate(n.in_idx):
            if j < 0:  # producer not in the (pruned) graph
                continue
            src_c = cluster_of[j]
            if src_c == dst_c or j in replicated:
                continue
            p = order[j]
            src, slot = n.inputs[pos]
            tensor = f"{src}:{slot}"
            dtype = n.input_dtypes[pos]
            is_ref = p.output_refs is not None and slot < len(p.output_refs) and p.output_refs[slot]
            if src_c is not None:
                _record(seen, part, (tensor, None), view, n.name, tensor, src, dtype, "d2h", cache)
                if is_ref:
                    part.errors.append(f"Ref Tensors (e.g., Variables) are not supported as results: "
                                       f"{tensor} of {src_c} read by {n.name}")
            if dst_c is not None:
                _record(seen, part, (tensor, dst_c), view, n.name, tensor, src, dtype, "h2d", cache)
                if is_ref:
                    part.errors.append(f"Ref Tensors (e.g., Variables) are not supported as args: "
                                       f"{tensor} read by {n.name} in {dst_c}")


def _record(seen: dict[tuple[str, str | None], Transfer], part: Partition, key: tuple[str, str | None],
            view: GraphView, consumer: str, tensor: str, src: str, dtype: str, direction: str,
            cache: dict[str, int | None]) -> None:
    """Add ``consumer`` to the transfer of ``key``, creating it (and sizing it) on first sight."""
    t = seen.get(key)
    if t is not None:
        if t.consumers[-1] != consumer:  # one op reading the tensor twice is still one consumer
            t.consumers.append(consumer)
        return
    t = Transfer(src, consumer, tensor, dtype, direction, _bytes(view, tensor, dtype, cache), [consumer])
    seen[key] = t
    part.transfers.append(t)


def _is_checkpoint_plumbing(view: GraphView, group: list[int], preds: list[list[int]],
                            succs: list[list[int]]) -> bool:
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
        touches = touches or n.op in _CHECKPOINT_OPS or any(
            order[j].op in _CHECKPOINT_OPS for j in (*preds[i], *succs[i]))
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
    return (f"{len(names)} checkpoint path/control ops of a Saver (SaveV2/RestoreV2 run on the host) are "
            f"kept on the host with their checkpoint ops, outside the GeOp: {shown}. No compute is lost.")


def _cut_off_warning(view: GraphView, cut: list[int], device: list[bool], preds: list[list[int]],
                     succs: list[list[int]]) -> str:
    """Name the ops cut off and the host ops that separate them from the GeOp."""
    cut_set = set(cut)
    blockers: list[str] = []
    seen: set[int] = set()
    for i in cut:
        for j in preds[i] + succs[i]:
            if j not in cut_set and not device[j] and j not in seen and view.order[j].op != "Const":
                seen.add(j)
                blockers.append(view.order[j].name)
    names = [view.order[i].name for i in cut]
    shown = ", ".join(names[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")
    why = f" (separated from it by host ops such as {', '.join(blockers[:5])})" if blockers else ""
    return (f"Full offload keeps only the largest device cluster: {len(names)} supported ops are cut off "
            f"from it{why} and silently run on the host CPU: {shown}. Enable mixed computing "
            "(mix_compile_mode=True) to offload them as further GeOps, or wrap the unsupported ops in "
            "without_npu_compile_scope.")


def _getnexts_kept_apart(view: GraphView, device: list[bool], s: PlanSettings) -> frozenset[int]:
    """Device GetNexts whose out-edges the adapter does not contract (lazy_recompile + enable_dp)."""
    if not (s.lazy_recompile and s.enable_data_pre_proc):
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
    groups = _group(device, preds, succs, s.mix_compile_mode or s.lazy_recompile, kept_apart)
    if groups and len(groups[0]) == 1:  # §3.5-3: lone NoOp/Identity are not worth a GeOp
        for g in groups:
            if view.order[g[0]].op in ("NoOp", "Identity"):
                device[g[0]] = False
                placed.engine[g[0]] = "HOST"
                placed.reason[g[0]] = "a lone NoOp/Identity is not offloaded when no larger cluster exists"
        groups = [g for g in groups if device[g[0]]]
    # lazy_recompile merges GeOps "in the new way" of mixed computing: several GeOps, none cut off
    full_offload = not (s.mix_compile_mode or s.lazy_recompile)
    merged, cut = _merge_unreachable(groups, preds, succs, full_offload)
    part = Partition(clusters=merged, cluster_of=[None] * len(device), subgraphs=[])
    if s.lazy_recompile and not s.mix_compile_mode and len(merged) > 1:
        part.notes.append(f"dynamic_input with dynamic_graph_execute_mode='lazy_recompile': the adapter keeps "
                          f"{len(merged)} GeOps apart, as in mixed computing, instead of keeping only the "
                          "largest one; no supported op is cut off to the host.")
    for i in kept_apart:
        if device[i]:
            placed.reason[i] += ("; lazy_recompile with enable_data_pre_proc: the adapter never merges a GetNext "
                                 "with its consumers, so it gets a GeOp of its own")
    if cut:
        cut_nodes = sorted(i for g in cut for i in g)
        for i in cut_nodes:
            device[i] = False
            placed.engine[i] = "HOST"
            placed.reason[i] = CUT_OFF_REASON
        plumbing = [g for g in cut if _is_checkpoint_plumbing(view, g, preds, succs)]
        worth_warning = sorted(i for g in cut if g not in plumbing for i in g)
        if worth_warning:
            part.warnings.append(_cut_off_warning(view, worth_warning, device, preds, succs))
        if plumbing:
            part.notes.append(_checkpoint_note(view, plumbing))
    for k, members in enumerate(merged):
        name = f"GeOp{GRAPH_COUNTER}_{k}"
        for i in members:
            part.cluster_of[i] = name
        part.subgraphs.append(Subgraph(name, [view.order[i].name for i in members]))
    replicated = _replicated(view, part.cluster_of, s, part)
    _transfers(view, part.cluster_of, replicated, part)
    return part

