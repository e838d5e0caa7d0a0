"""Topological order of the view's nodes and pruning to what the fetches need.

V1 while-loop back edges (NextIteration) are ignored, as by the adapter's cycle check. Edges are
renumbered to positions in the final order, so every later pass works on ints.
"""

from __future__ import annotations

from npu_jupyter._plan.graph.graph import Node

# V1 while-loop back edges: ignored by topological sort and by the adapter's cycle check.
_BACK_EDGE_OPS = frozenset({"NextIteration", "RefNextIteration"})


def _positions(listed: list[Node]) -> int:
    """Fill ``in_idx``/``ctrl_idx`` (listed positions) and ``input_dtypes``; return where the listing
    stops being topological: the first node listed before one of its producers (back edges aside),
    or the node count when there is none.

    One pass over the nodes: each input's dtype is read from its producer's declared outputs while
    its position is looked up (a missing producer or slot reads as "").
    """
    pos = {n.name: k for k, n in enumerate(listed)}
    get = pos.get
    outs = [n.output_dtypes for n in listed]
    first = [o[0] if o else "" for o in outs]  # what most inputs read: output 0
    first.append("")  # position -1, a producer outside the view, reads as ""
    count = len(listed)
    first_unsorted = count
    for k, n in enumerate(listed):
        names = n.input_names
        if names:
            idx = [get(s, -1) for s in names]
            slots = n.input_slots
            if any(slots):
                n.input_dtypes = [
                    outs[j][slot] if j >= 0 and slot < len(outs[j]) else "" for slot, j in zip(slots, idx)
                ]
            else:
                n.input_dtypes = [first[j] for j in idx]
            n.in_idx = idx
            # max() runs in C: cheaper than a Python loop for the common all-earlier case; a later
            # producer is fine only across a while-loop back edge
            if (
                first_unsorted == count
                and max(idx) >= k
                and not all(j < k or listed[j].op in _BACK_EDGE_OPS for j in idx)
            ):
                first_unsorted = k
        if n.control_inputs:
            ctrl = [j for j in map(get, n.control_inputs) if j is not None]
            n.ctrl_idx = ctrl
            if first_unsorted == count and ctrl and max(ctrl) >= k:
                first_unsorted = k
    return first_unsorted


def _topological_positions(listed: list[Node], start: int) -> list[int]:
    """Listed positions in an order where every producer precedes its consumers (back edges ignored).

    A depth-first repair rather than Kahn's algorithm: FuncGraph GraphDefs are almost sorted (often
    only the final output Identity waits on a later NoOp), and this keeps every node that is already
    in place where it is. Nodes on a cycle are emitted when first reached. A node whose producers
    are all emitted is emitted at once without a stack: that is nearly every node. The ``start``
    nodes listed first are known to be in place (:func:`_positions`) and are emitted as they are.
    """
    count = len(listed)
    back = bytearray(n.op in _BACK_EDGE_OPS for n in listed)
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
                if j >= 0 and state[j] == 0 and not back[j]:
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


def link(listed: list[Node]) -> list[Node]:
    """Topological order with ``index``, ``in_idx``, ``ctrl_idx`` and ``input_dtypes`` filled in.

    Edges are numbered by listed position first; when the listing is not topological, the nodes
    are reordered and the edges into moved positions renumbered.
    """
    count = len(listed)
    start = _positions(listed)
    if start == count:
        for i, n in enumerate(listed):
            n.index = i
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
    for i, n in enumerate(order):
        n.index = i
        idx = n.in_idx
        if idx and max(idx) >= first_moved:
            n.in_idx = [new[j] if j >= 0 else -1 for j in idx]
        ctrl = n.ctrl_idx
        if ctrl and max(ctrl) >= first_moved:
            n.ctrl_idx = [new[j] for j in ctrl]
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
