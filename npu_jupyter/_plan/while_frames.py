"""Mixed computing's V1 while-loop rule: a host op inside a loop frame keeps the whole frame on the host.

Split out of :mod:`placement`, which applies it after seeding. A node's frame follows its first data
producer (else its first control producer) through Enter (a child frame) and Exit (the parent);
NextIteration back edges are not followed.
"""

from __future__ import annotations

from npu_jupyter._plan.graph.graph import BACK_EDGE_OPS, GraphView


def _frames(view: GraphView) -> tuple[list[str], dict[str, str]]:
    """V1 while-loop frame of every node and each frame's parent ("" is the root)."""
    frame = [""] * len(view.order)
    parent: dict[str, str] = {}
    nodes = view.nodes
    for n in view.order:
        src = None
        for name in n.input_names:
            p = nodes.get(name)
            if p is not None and p.op not in BACK_EDGE_OPS:
                src = p
                break
        if src is None and n.control_inputs:
            src = nodes.get(n.control_inputs[0])
        f = frame[src.index] if src is not None else ""
        if n.op in ("Enter", "RefEnter"):
            child = f"{f}/{n.frame_name}"
            parent.setdefault(child, f)
            f = child
        elif n.op in ("Exit", "RefExit"):
            f = parent.get(f, "")
        frame[n.index] = f
    return frame, parent


def frame_rule(view: GraphView, device: list[bool], reason: list[str], skipped: list[bool]) -> None:
    """Mixed computing: a host node inside a V1 while frame pulls the whole frame to the host."""
    if view.op_counts().keys().isdisjoint(("Enter", "RefEnter")):
        return
    frame, parent = _frames(view)
    bad: set[str] = set()
    for n in view.order:
        f = frame[n.index]
        if f and not device[n.index] and not skipped[n.index] and n.op != "Const":
            while f:
                bad.add(f)
                f = parent.get(f, "")
    for n in view.order:
        if device[n.index] and frame[n.index] in bad:
            device[n.index] = False
            reason[n.index] = (
                "inside a while loop that also holds host ops: mixed computing keeps the whole loop frame on the host"
            )
