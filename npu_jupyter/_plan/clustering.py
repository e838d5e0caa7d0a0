"""Clustering device candidates into cycle-free GeOps, and the adapter's merge of unrelated clusters.

The adapter contracts candidate→candidate edges one at a time with a dynamic cycle check (TF
``GraphCycles``), then, in full offload, keeps only the largest cluster plus clusters mutually
unreachable from it; in mixed computing it keeps several (tests/data/reference/ADAPTER-FACTS.md §3.5).

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

from typing import Sequence

# --------------------------------------------------------------------------------------------
# grouping candidates
# --------------------------------------------------------------------------------------------


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


_REJOIN_PASSES = 8
# Above this many groups, per-node bitsets would not fit comfortably in memory: groups stay as they
# are (possibly finer than the adapter's clusters, never cyclic).
_MAX_BITSET_CLUSTERS = 4096


def _rejoin(
    groups: list[list[int]],
    device: list[bool],
    preds: Sequence[Sequence[int]],
    succs: Sequence[Sequence[int]],
    kept_apart: frozenset[int] = frozenset(),
) -> list[list[int]]:
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
    """The consumers an edge between two groups can end at, in ascending order.

    Such an edge ends in a group other than the largest, or starts in one: its consumer is a member
    or a successor of a member of the smaller groups. A full-offload graph usually has one group of
    nearly every node and a few tiny ones, so listing these few beats scanning every edge; when the
    smaller groups are not small, every node is listed (same edges, same order).
    """
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


class _Reach:
    """Nodes reachable from / reaching a growing set of clusters; each node is visited once."""

    def __init__(self, preds: Sequence[Sequence[int]], succs: Sequence[Sequence[int]]) -> None:
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
