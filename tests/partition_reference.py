"""The partition stage as it was before it was made faster: the reference the fast one must agree with.

Kept as written then (commit b98c960), one function per replaced one, so that
``tests/plan/test_partition_equivalence.py`` can run :func:`npu_jupyter._plan.partition.partition` with these
swapped in and compare every field of the result on random graphs: the same clusters and cluster
names, transfers (bytes and consumer order), errors, warnings and notes. Not product code: it is slow
on purpose (plain passes over every node and edge, a bitset pass for every rejoin question, a
whole-graph reachability walk in full offload).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from npu_jupyter._ops.variable_ops import VARIABLE_OPS
from npu_jupyter._plan.clustering import _MAX_BITSET_CLUSTERS, _REJOIN_PASSES, _Reach
from npu_jupyter._plan.model import Transfer
from npu_jupyter._units import DTYPE_BYTES

if TYPE_CHECKING:
    from typing import Literal

    from npu_jupyter._plan.graph.graph import GraphView
    from npu_jupyter._plan.partition import Partition
    from npu_jupyter._plan.settings import PlanSettings

_DTYPE_BYTES = DTYPE_BYTES


def _find(parent: list[int], i: int) -> int:
    while parent[i] != i:
        parent[i] = parent[parent[i]]
        i = parent[i]
    return i


def group_candidates(
    device: list[bool],
    preds: Sequence[Sequence[int]],
    succs: Sequence[Sequence[int]],
    mix: bool,
    kept_apart: frozenset[int] = frozenset(),
) -> list[list[int]]:
    """Cycle-free clusters: connected candidates with equal host-crossing level (one linear pass)."""
    count = len(device)
    level = [0] * count
    tainted = [False] * count  # host node with a device ancestor: a path may come back from it
    parent = list(range(count))
    # Without a host node fed by a device node nothing is tainted and every level stays 0: the
    # level bookkeeping is then skipped (the usual case in full offload).
    levels = any(device[p] for i in range(count) if not device[i] for p in preds[i])
    for i in range(count):
        ps = preds[i]
        if not ps:
            continue  # level 0, untainted, its own root
        lv = 0
        if device[i]:
            if levels:
                for p in ps:
                    if device[p]:
                        lv = max(lv, level[p])
                    elif tainted[p] and level[p] >= lv:
                        lv = level[p] + 1
                level[i] = lv
            # i is still its own root here (unions only happen at a node's own step), so its root
            # is tracked instead of searched for: the same roots, half the _find calls.
            root = i
            for p in ps:
                if device[p] and level[p] == lv and (not kept_apart or p not in kept_apart):
                    a = parent[p]
                    if parent[a] != a:  # most producers are one step from their root
                        a = _find(parent, a)
                    if a != root:
                        parent[root] = a
                        root = a
        elif levels:
            t = False
            for p in ps:
                if device[p] or tainted[p]:
                    t = True
                    lv = max(lv, level[p])
            level[i] = lv
            tainted[i] = t
    # one compression pass: every device node then points at its root, found once for the sizes
    for i in range(count):
        if device[i] and parent[i] != i:
            parent[i] = _find(parent, i)
    size = [0] * count
    for i in range(count):
        if device[i] and preds[i]:
            size[parent[i]] += 1
    for i in range(count):
        if device[i] and not preds[i] and i not in kept_apart:
            roots = {_find(parent, j) for j in succs[i] if device[j] and preds[j]}
            if len(roots) == 1 or (mix and roots):
                target = max(roots, key=lambda r: (size[r], -r))
                parent[_find(parent, i)] = target
    groups: dict[int, list[int]] = {}
    for i in range(count):
        if device[i]:
            r = parent[i]
            if parent[r] != r:  # only below a source that joined another cluster
                r = _find(parent, r)
            members = groups.get(r)
            if members is None:
                groups[r] = [i]
            else:
                members.append(i)
    return _rejoin(list(groups.values()), device, preds, succs, kept_apart)


def _rejoin(
    groups: list[list[int]],
    device: list[bool],
    preds: Sequence[Sequence[int]],
    succs: Sequence[Sequence[int]],
    kept_apart: frozenset[int] = frozenset(),
) -> list[list[int]]:
    """Merge groups the level rule split although no path joins them through anything else."""
    count = len(device)
    for _ in range(_REJOIN_PASSES):
        k = len(groups)
        if k < 2 or k > _MAX_BITSET_CLUSTERS:
            break
        gid = [-1] * count
        for c, g in enumerate(groups):
            for i in g:
                gid[i] = c
        cross = [
            (gid[p], gid[i])
            for i in _crossing_candidates(groups, succs, count)
            if gid[i] >= 0
            for p in preds[i]
            if gid[p] >= 0 and gid[p] != gid[i] and p not in kept_apart
        ]
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


def _crossing_candidates(groups: list[list[int]], succs: Sequence[Sequence[int]], count: int) -> Sequence[int]:
    """The consumers an edge between two groups can end at, in ascending order."""
    largest = max(range(len(groups)), key=lambda c: len(groups[c]))
    rest = count - len(groups[largest])
    if rest * 8 > count:
        return range(count)
    found: set[int] = set()
    for c, g in enumerate(groups):
        if c != largest:
            found.update(g)
            for i in g:
                found.update(succs[i])
    return sorted(found)


def merge_unreachable(
    groups: list[list[int]], preds: Sequence[Sequence[int]], succs: Sequence[Sequence[int]], full_offload: bool
) -> tuple[list[list[int]], list[list[int]]]:
    """Merge mutually unreachable clusters; full offload returns the rest as cut off."""
    if not groups:
        return [], []
    if full_offload:
        return _merge_into_largest(groups, preds, succs)
    return _merge_all(groups, preds), []


def _merge_into_largest(
    groups: list[list[int]], preds: Sequence[Sequence[int]], succs: Sequence[Sequence[int]]
) -> tuple[list[list[int]], list[list[int]]]:
    """Full offload: the largest cluster absorbs every cluster unrelated to all it holds (§3.5-4)."""
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
        targets = sorted({c for c in (cluster_of[j] for j, _ in cons[i]) if c is not None})
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
    """One Transfer per tensor leaving a GeOp (d2h) and per (tensor, GeOp) it enters (h2d)."""
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
            src, slot = n.input_names[pos], n.input_slots[pos]
            tensor = f"{src}:{slot}"
            dtype = n.input_dtypes[pos]
            # OMSplitter looks at the *destination's* input type: a ref output read through a plain
            # input (SaveV2 reading a VariableV2) is cast to a value and crosses without complaint
            is_ref = n.input_refs is not None and n.input_refs[pos]
            if src_c is not None:
                _record(seen, part, (tensor, None), view, n.name, tensor, src, dtype, "d2h", cache)
                if is_ref:
                    part.errors.append(
                        f"Ref Tensors (e.g., Variables) are not supported as results: "
                        f"{tensor} of {src_c} read by {n.name}"
                    )
            if dst_c is not None:
                _record(seen, part, (tensor, dst_c), view, n.name, tensor, src, dtype, "h2d", cache)
                if is_ref:
                    part.errors.append(
                        f"Ref Tensors (e.g., Variables) are not supported as args: {tensor} read by {n.name} in {dst_c}"
                    )


def _record(
    seen: dict[tuple[str, str | None], Transfer],
    part: Partition,
    key: tuple[str, str | None],
    view: GraphView,
    consumer: str,
    tensor: str,
    src: str,
    dtype: str,
    direction: Literal["h2d", "d2h"],  # novermin (a string annotation)
    cache: dict[str, int | None],
) -> None:
    """Add ``consumer`` to the transfer of ``key``, creating it (and sizing it) on first sight."""
    t = seen.get(key)
    if t is not None:
        if t.consumers[-1] != consumer:  # one op reading the tensor twice is still one consumer
            t.consumers.append(consumer)
        return
    t = Transfer(src, consumer, tensor, dtype, direction, _bytes(view, tensor, dtype, cache), [consumer])
    seen[key] = t
    part.transfers.append(t)


# As written before this round's speed-up (commit d4a7ca4), so the reference does not run the new one.
def _merge_all(groups: list[list[int]], preds: Sequence[Sequence[int]]) -> list[list[int]]:
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
