"""Topological order of the view's nodes and pruning to what the fetches need.

V1 while-loop back edges (NextIteration) are ignored, as by the adapter's cycle check. Edges are
renumbered to positions in the final order, so every later pass works on ints.
"""

from __future__ import annotations

from typing import Iterable

from npu_jupyter._plan.graph.graph import BACK_EDGE_OPS, Node
from npu_jupyter._plan.readonly import dtype_list


def number_edges(
    listed: list[Node], which: Iterable[int], pos: dict[str, int], outs: list[list[str]]
) -> tuple[int, list[int]]:
    """Fill ``in_idx``/``ctrl_idx`` (listed positions) and ``input_dtypes`` of the nodes at ``which``.

    ``pos`` maps each name to its listed position and ``outs`` each position to its output dtypes;
    a producer outside the listing reads as position -1 and dtype "". Returns where the listing
    stops being topological (the first of these nodes listed before one of its producers, a while
    loop's back edge aside; else the node count) and the positions of the nodes with an edge from a
    later position (back edges included): only their edges can need renumbering (:func:`link`).
    """
    count = len(listed)
    first_unsorted = count
    forward: list[int] = []
    get = pos.get
    for k in which:
        n = listed[k]
        names = n.input_names
        later = False
        if names:
            idx = [get(s, -1) for s in names]
            n.in_idx = idx
            slots = n.input_slots
            if any(slots):
                n.input_dtypes = dtype_list(
                    tuple(outs[j][slot] if j >= 0 and slot < len(outs[j]) else "" for slot, j in zip(slots, idx))
                )
            else:
                n.input_dtypes = dtype_list(tuple(outs[j][0] if j >= 0 and outs[j] else "" for j in idx))
            if max(idx) >= k:
                later = True
                if first_unsorted == count and not all(j < k or listed[j].op in BACK_EDGE_OPS for j in idx):
                    first_unsorted = k
        if n.control_inputs:
            ctrl = [j for j in map(get, n.control_inputs) if j is not None]
            n.ctrl_idx = ctrl
            if ctrl and max(ctrl) >= k:
                later = True
                first_unsorted = min(first_unsorted, k)
        if later:
            forward.append(k)
    return first_unsorted, forward


def _positions(listed: list[Node]) -> tuple[int, list[int]]:
    """Number every node's edges by listed position (:func:`number_edges`)."""
    pos = {n.name: k for k, n in enumerate(listed)}
    return number_edges(listed, range(len(listed)), pos, [n.output_dtypes for n in listed])


def _topological_positions(listed: list[Node], start: int) -> list[int]:
    """Listed positions in an order where every producer precedes its consumers (back edges ignored).

    A depth-first repair rather than Kahn's algorithm: FuncGraph GraphDefs are almost sorted (often
    only the final output Identity waits on a later NoOp), and this keeps every node that is already
    in place where it is. Nodes on a cycle are emitted when first reached. A node whose producers
    are all emitted is emitted at once without a stack: that is nearly every node. The ``start``
    nodes listed first are known to be in place (:func:`_positions`) and are emitted as they are.
    """
    count = len(listed)
    state = bytearray(b"\x02") * start + bytearray(count - start)  # 0 new, 1 in progress, 2 emitted
    order = list(range(start))
    for k in range(start, count):
        if state[k]:
            continue
        # Every position before k is emitted by now, so producers listed earlier need no stack.
        n = listed[k]
        idx, ctrl = n.in_idx, n.ctrl_idx
        if (not idx or max(idx) < k) and (not ctrl or max(ctrl) < k):
            state[k] = 2
            order.append(k)
            continue
        stack = [k]
        state[k] = 1
        while stack:
            top = stack[-1]
            n = listed[top]
            pending = None
            for j in n.in_idx:
                if j >= 0 and state[j] == 0 and listed[j].op not in BACK_EDGE_OPS:
                    pending = j
                    break
            if pending is None:
                for j in n.ctrl_idx:
                    if state[j] == 0:
                        pending = j
                        break
            if pending is None:
                state[top] = 2
                order.append(top)
                stack.pop()
            else:
                state[pending] = 1
                stack.append(pending)
    return order


def link(listed: list[Node], numbered: tuple[int, list[int]] | None = None) -> list[Node]:
    """Topological order with ``index``, ``in_idx``, ``ctrl_idx`` and ``input_dtypes`` filled in.

    ``numbered`` is what :func:`number_edges` returned when the reader has numbered edges and indices
    by listed position already (:func:`~npu_jupyter._plan.graph.node_reading.read_nodes`); without
    it (a pruned listing) they are numbered here. When the listing is not topological, the nodes
    are reordered and the edges into moved positions renumbered.
    """
    count = len(listed)
    if numbered is None:
        numbered = _positions(listed)
        for i, n in enumerate(listed):
            n.index = i
    start, forward = numbered
    if start == count:
        return listed
    positions = _topological_positions(listed, start)
    order = [listed[k] for k in positions]
    new = list(range(count))
    first_moved = count  # edges to earlier positions keep their numbers
    for i in range(start, count):
        k = positions[i]
        new[k] = i
        if i != k and k < first_moved:
            first_moved = k
    # Nodes before ``start`` keep their place; of them, only those with an edge from a later position
    # (a back edge) can point into a moved position.
    for n in [listed[k] for k in forward if k < start] + order[start:]:
        idx = n.in_idx
        if idx and max(idx) >= first_moved:
            n.in_idx = [new[j] if j >= 0 else -1 for j in idx]
        ctrl = n.ctrl_idx
        if ctrl and max(ctrl) >= first_moved:
            n.ctrl_idx = [new[j] for j in ctrl]
    for i in range(start, count):
        order[i].index = i
    return order


def prune(nodes: dict[str, Node], listed: list[Node], fetches: list[str]) -> list[Node]:
    """Keep only the ancestors (data and control) of the fetched ops."""
    missing = [f for f in fetches if f not in nodes]
    if missing:
        raise ValueError(f"fetches name ops that are not in the graph: {', '.join(map(repr, missing))}")
    keep = set(fetches)
    stack = list(fetches)
    while stack:
        n = nodes[stack.pop()]
        for s in n.input_names:
            if s not in keep and s in nodes:
                keep.add(s)
                stack.append(s)
        for s in n.control_inputs:
            if s not in keep and s in nodes:
                keep.add(s)
                stack.append(s)
    return [n for n in listed if n.name in keep]
