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
anything else connects them. Reachability between clusters for the final merge step is exact.

Where one cluster holds nearly every candidate (the usual training graph), the reachability questions
are about a few small clusters: they are answered by searches from those clusters that stop at the
first node answering them, within a budget of one visit per node of the graph; past it, whole-graph
passes (one bitset per node over clusters, or marks from everything held) give the same answers.
"""

from __future__ import annotations

from itertools import compress
from operator import not_
from typing import Sequence

# --------------------------------------------------------------------------------------------
# grouping candidates
# --------------------------------------------------------------------------------------------


def _find(parent: list[int], i: int) -> int:
    while parent[i] != i:
        parent[i] = parent[parent[i]]
        i = parent[i]
    return i


def _root(parent: list[int], i: int) -> int:
    """Root of ``i``: most nodes are one or two steps from theirs, which is answered without a call."""
    r = parent[i]
    b = parent[r]
    if b == r:
        return r
    return b if parent[b] == b else _find(parent, b)


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
    parent = list(range(count))
    size = [1] * count  # per root: candidates with inputs in its tree (sizes before sources join)
    sources = _union_by_level(device, preds, succs, parent, size, kept_apart)
    _join_sources(sources, device, preds, succs, parent, size, mix, kept_apart)
    groups: dict[int, list[int]] = {}
    for i in compress(range(count), device):
        r = parent[i]
        b = parent[r]
        if b != r:  # only below a root that joined another tree
            r = b if parent[b] == b else _find(parent, b)
        members = groups.get(r)
        if members is None:
            groups[r] = [i]
        else:
            members.append(i)
    return _rejoin(list(groups.values()), device, preds, succs, kept_apart)


def _union_by_level(
    device: list[bool],
    preds: Sequence[Sequence[int]],
    succs: Sequence[Sequence[int]],
    parent: list[int],
    size: list[int],
    kept_apart: frozenset[int],
) -> list[int]:
    """Join each candidate with its device producers of the same level; return the source candidates.

    Levels come from :func:`_levels`; see the module docstring for why equal levels cannot form a
    cycle. A candidate is still its own root at its step (unions only happen at a node's own step), so its
    root is tracked instead of searched for. The tree joined last gives the root, which decides ties
    between equal-sized clusters later (:func:`_join_sources`): the order of the producers matters.
    """
    count = len(device)
    level = _levels(device, preds, succs)
    sources: list[int] = []
    for i in compress(range(count), device):
        ps = preds[i]
        if not ps:  # level 0, its own root, counted in no size
            sources.append(i)
            size[i] = 0
            continue
        lv = level[i]
        root = i
        for p in ps:
            if device[p] and (not lv or level[p] == lv) and (not kept_apart or p not in kept_apart):
                a = parent[p]
                b = parent[a]
                if b != a:  # most producers are one step from their root
                    a = b if parent[b] == b else _find(parent, b)
                    parent[p] = a
                if a != root:
                    parent[root] = a
                    size[a] += size[root]
                    root = a
    return sources


def _levels(device: list[bool], preds: Sequence[Sequence[int]], succs: Sequence[Sequence[int]]) -> list[int]:
    """Per node: the largest number of tainted host nodes on any path reaching it.

    A host node is tainted when it has a device ancestor: a path may come back from it. A level first
    rises at a device node fed by a tainted host node, so every node before the first such node has
    level 0 and the walk starts there (:func:`_first_raised`). In full offload nothing is usually
    tainted; in mixed computing the tainted host nodes are mostly a training step's variable updates,
    which feed next to nothing: ResNet-50's training step walks 2 of its 8,475 nodes instead of all.
    """
    count = len(device)
    level = [0] * count
    tainted = [False] * count
    start = _first_raised(device, preds, succs, tainted)
    for i in range(start, count):
        lv = 0
        if device[i]:
            for p in preds[i]:
                if device[p]:
                    if level[p] > lv:  # noqa: PLR1730 - a call to max() per edge costs a tenth of the walk
                        lv = level[p]
                elif tainted[p] and level[p] >= lv:
                    lv = level[p] + 1
        else:
            t = False
            for p in preds[i]:
                if device[p] or tainted[p]:
                    t = True
                    if level[p] > lv:  # noqa: PLR1730 - as above
                        lv = level[p]
            tainted[i] = t
        level[i] = lv
    return level


def _first_raised(
    device: list[bool], preds: Sequence[Sequence[int]], succs: Sequence[Sequence[int]], tainted: list[bool]
) -> int:
    """The first device node fed by a tainted host node (the node count when there is none).

    Marks in ``tainted`` the host nodes before it that have a device ancestor: one pass over the host
    nodes in topological order, which stops at the first such device node found so far.
    """
    first = count = len(device)
    for i in compress(range(count), map(not_, device)):
        if i >= first:
            break
        for p in preds[i]:
            if device[p] or tainted[p]:
                tainted[i] = True
                for j in succs[i]:
                    if device[j] and j < first:
                        first = j
                break
    return first


def _join_sources(
    sources: list[int],
    device: list[bool],
    preds: Sequence[Sequence[int]],
    succs: Sequence[Sequence[int]],
    parent: list[int],
    size: list[int],
    mix: bool,
    kept_apart: frozenset[int],
) -> None:
    """Sources join the one cluster their consumers form (mixed computing: the largest of several).

    Ties go to the smaller root index; sizes are those before any source joined.
    """
    for i in sources:
        if kept_apart and i in kept_apart:
            continue
        ss = succs[i]
        if len(ss) == 1:  # most consts and variables feed one op
            j = ss[0]
            if not (device[j] and preds[j]):
                continue
            target = _root(parent, j)
        else:
            roots = {_root(parent, j) for j in ss if device[j] and preds[j]}
            if len(roots) == 1:
                target = roots.pop()
            elif mix and roots:
                target = max(roots, key=lambda r: (size[r], -r))
            else:
                continue
        parent[_root(parent, i)] = target


_REJOIN_PASSES = 8
# Nodes the searches of :class:`_Entering` (per rejoin pass) and :class:`_Held` may visit, per node of
# the graph, before whole-graph passes answer instead (the answers are the same either way).
SEARCH_BUDGET = 1
# Mixed computing's merge (:func:`_merge_by_search`) searches up to 1/_MERGE_SEARCH_SHARE of that budget.
_MERGE_SEARCH_SHARE = 16
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
    ancestor, even one unrelated to a. The adapter merges such edges (no cycle arises), so a→b may
    merge when no path leads from a's group into b's group through a node outside b's group
    (:class:`_Entering`). Merges in one pass form a matching (each group at most once) so the
    reachability used stays exact; passes repeat.
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
        entering = _Entering(groups, gid, preds)
        parent = list(range(k))
        touched = bytearray(k)
        merged_any = False
        for a, b in cross:
            if touched[a] or touched[b] or entering.reaches(a, b):
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


class _Entering:
    """Whether group a has a path into group b through a node outside b, for :func:`_rejoin`.

    Asked for only the few (a, b) pairs of a pass, so each is first answered by a search backwards
    from b's outside producers that stops at the first node of a. A pass whose searches together
    visit more nodes than the graph has computes, once, every group's entering set instead (one
    bitset per node, one topological pass): the same answers, never more than twice the work.
    """

    def __init__(self, groups: list[list[int]], gid: list[int], preds: Sequence[Sequence[int]]) -> None:
        self.groups, self.gid, self.preds = groups, gid, preds
        self.budget = len(gid) * SEARCH_BUDGET
        self.bitsets: list[int] | None = None

    def reaches(self, a: int, b: int) -> bool:
        """True when a path leaves a and enters b from a node outside b (and not a direct a→b edge)."""
        if self.bitsets is None:
            gid = self.gid
            starts = {p for i in self.groups[b] for p in self.preds[i] if gid[p] != b and gid[p] != a}
            found, self.budget = _meets(starts, self.preds, gid, a, self.budget)
            if found is not None:
                return found
            self.bitsets = self._all()
        return bool(self.bitsets[b] >> a & 1)

    def _all(self) -> list[int]:
        """Per group: the groups with a path into it through a node outside it (bitsets)."""
        gid, preds = self.gid, self.preds
        up: list[int] = []  # per node: groups with a path to it, itself included
        for i, ps in enumerate(preds):
            acc = (1 << gid[i]) if gid[i] >= 0 else 0
            for p in ps:
                acc |= up[p]
            up.append(acc)
        entering = [0] * len(self.groups)
        for i, ps in enumerate(preds):
            c = gid[i]
            if c < 0:
                continue
            for p in ps:
                d = gid[p]
                if d != c:
                    entering[c] |= up[p] & ~(1 << d) if d >= 0 else up[p]
        return entering


def _crossing_candidates(groups: list[list[int]], succs: Sequence[Sequence[int]], count: int) -> Sequence[int]:
    """The consumers an edge between two groups can end at, in ascending order.

    Such an edge ends in a group other than the largest, or starts in one: its consumer is a member
    or a successor of a member of the smaller groups. A graph usually has one group of nearly every
    candidate and a few tiny ones, so listing these few beats scanning every edge; when the smaller
    groups are not small, every node is listed (same edges, same order).
    """
    largest = max(range(len(groups)), key=lambda c: len(groups[c]))
    rest = sum(len(g) for g in groups) - len(groups[largest])
    if rest * 8 > count:
        return range(count)
    found = bytearray(count)
    for c, g in enumerate(groups):
        if c != largest:
            for i in g:
                found[i] = 1
                for j in succs[i]:
                    found[j] = 1
    return list(compress(range(count), found))


class _Reach:
    """Nodes reachable from / reaching a growing set of clusters; each node is visited once.

    Reachability sets only grow as clusters join, so each node is visited at most once per direction.
    """

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
    return _merge_all(groups, preds, succs), []


def _merge_into_largest(
    groups: list[list[int]], preds: Sequence[Sequence[int]], succs: Sequence[Sequence[int]]
) -> tuple[list[list[int]], list[list[int]]]:
    """Full offload: the largest cluster absorbs every cluster unrelated to all it holds (§3.5-4)."""
    held = _Held(groups[0], preds, succs)
    cut: list[list[int]] = []
    for g in groups[1:]:
        if held.related(g):
            cut.append(g)
        else:
            held.add(g)
    return [sorted(held.members)], cut


class _Held:
    """The clusters the full-offload GeOp holds, and whether another cluster is related to them.

    Nearly every candidate is usually in the largest cluster, so a small cluster is first checked by
    searching from it, both ways, until the first held node. Once those searches have visited as many
    nodes as the graph has, whole-graph reachability marks (:class:`_Reach`) answer the rest, each node
    visited at most once per direction: the same answers, never much more than twice the work.
    """

    def __init__(self, members: list[int], preds: Sequence[Sequence[int]], succs: Sequence[Sequence[int]]) -> None:
        self.preds, self.succs = preds, succs
        self.members = list(members)
        self.mark = bytearray(len(preds))
        for i in members:
            self.mark[i] = 1
        self.budget = len(preds) * SEARCH_BUDGET
        self.reach: _Reach | None = None

    def related(self, group: list[int]) -> bool:
        """True when a path leads from a held node to ``group`` or back."""
        if self.reach is None:
            found, self.budget = _meets(set(group), self.succs, self.mark, 1, self.budget)
            if found is False:
                found, self.budget = _meets(set(group), self.preds, self.mark, 1, self.budget)
            if found is not None:
                return found
            self.reach = _Reach(self.preds, self.succs)
            self.reach.add(self.members)
        return not self.reach.unrelated(group)

    def add(self, group: list[int]) -> None:
        """Hold ``group`` too."""
        self.members.extend(group)
        if self.reach is not None:
            self.reach.add(group)
        for i in group:
            self.mark[i] = 1


def _meets(
    starts: set[int], nxt: Sequence[Sequence[int]], label: Sequence[int], target: int, budget: int
) -> tuple[bool | None, int]:
    """Whether a search from ``starts`` along ``nxt`` reaches a node labelled ``target``; the budget left.

    None (and a spent budget) once it has expanded more than ``budget`` nodes. ``starts`` grows into
    the set of nodes seen.
    """
    seen = starts
    stack = list(starts)
    while stack:
        for j in nxt[stack.pop()]:
            if label[j] == target:
                return True, budget
            if j not in seen:
                seen.add(j)
                stack.append(j)
        budget -= 1
        if budget < 0:
            return None, budget
    return False, budget


def _merge_all(
    groups: list[list[int]], preds: Sequence[Sequence[int]], succs: Sequence[Sequence[int]]
) -> list[list[int]]:
    """Mixed computing: walking clusters by size, each absorbs those unrelated to it (§3.5-5).

    Above ``_MAX_BITSET_CLUSTERS`` clusters are kept as they are. Otherwise the questions are first
    answered by searches (:func:`_merge_by_search`), and by whole-graph bitsets
    (:func:`_merge_by_bitsets`) once those searches have visited as many nodes as the graph has:
    the same merges either way.
    """
    k = len(groups)
    if k == 1 or k > _MAX_BITSET_CLUSTERS:
        return [sorted(g) for g in groups]
    merged = _merge_by_search(groups, preds, succs)
    return merged if merged is not None else _merge_by_bitsets(groups, preds)


def _merge_by_search(
    groups: list[list[int]], preds: Sequence[Sequence[int]], succs: Sequence[Sequence[int]]
) -> list[list[int]] | None:
    """:func:`_merge_all` by searches from each cluster, both ways, that stop at the first held node.

    A training graph in mixed computing has one cluster of nearly every candidate and a few small
    ones (ResNet-50's training step: 6,173 nodes and twelve of two to six, mostly moving-average
    updates feeding host AssignVariableOps): the small clusters' searches end within a few nodes,
    where the bitsets cost a pass over every edge (there, 113 nodes expanded in all). None once the
    searches together have expanded a sixteenth of the graph's nodes (:data:`SEARCH_BUDGET` per
    :data:`_MERGE_SEARCH_SHARE`): where clusters relate in many ways (BERT's training step: 41
    clusters), giving up early keeps the wasted searches small next to the bitsets' pass.
    """
    count = len(preds)
    budget = count * SEARCH_BUDGET // _MERGE_SEARCH_SHARE
    taken = bytearray(len(groups))
    merged: list[list[int]] = []
    for a, group in enumerate(groups):
        if taken[a]:
            continue
        members = list(group)
        held = bytearray(count)
        for i in group:
            held[i] = 1
        for b in range(a + 1, len(groups)):
            if taken[b]:
                continue
            found, budget = _meets(set(groups[b]), succs, held, 1, budget)
            if found is False:
                found, budget = _meets(set(groups[b]), preds, held, 1, budget)
            if found is None:
                return None
            if not found:
                taken[b] = 1
                members.extend(groups[b])
                for i in groups[b]:
                    held[i] = 1
        merged.append(sorted(members))
    return merged


def _merge_by_bitsets(groups: list[list[int]], preds: Sequence[Sequence[int]]) -> list[list[int]]:
    """:func:`_merge_all` from which clusters reach which, computed once for all of them.

    One bitset per node (a Python int with one bit per cluster) in topological order, so the merge
    costs O(edges * clusters / 64) word operations instead of a graph search per cluster.
    """
    k = len(groups)
    count = len(preds)
    own = [0] * count
    for c, g in enumerate(groups):
        bit = 1 << c
        for i in g:
            own[i] = bit
    up: list[int] = []  # clusters with a path to the node (itself included); preds come earlier
    for acc, ps in zip(own, preds):
        for p in ps:
            acc |= up[p]
        up.append(acc)
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
