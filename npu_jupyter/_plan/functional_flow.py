"""TF 2's functional control flow in a TF1 plan: which ops it hides, and what TF 1.15 builds instead.

``tf.cond`` and ``tf.while_loop`` build functional ``If``/``While`` ops (their branches and body are
library functions) whenever TF 2's control flow is on: on TensorFlow 2.x in graph mode unless
``tf.compat.v1.disable_v2_behavior()`` or ``disable_control_flow_v2()`` ran first. TF 1.15, the TF1
adapter's TensorFlow, builds them as ``Switch``/``Merge``/``Enter``/``Exit`` ops in the graph itself,
each of which the adapter's partition pass places and GE gives a precision. A TF1 plan holds one
decision per functional op, none for the ops in its functions, and the emulator of a session runs
those ops as written, unrounded: a user must be told, or a float16 overflow inside a loop body
reads as the overflow of the op after the loop.
"""

from __future__ import annotations

from npu_jupyter._plan.graph.graph import GraphView

#: Ops that call a library function (a nested ``tf.function``): GE compiles the callee's ops into the
#: caller's graph, and the emulator plans the callee as a function of its own.
FUNCTION_CALLS = frozenset({"PartitionedCall", "StatefulPartitionedCall"})

#: functional control-flow op -> the TensorFlow call that builds it
FUNCTIONAL_FLOW = {
    "While": "tf.while_loop",
    "StatelessWhile": "tf.while_loop",
    "If": "tf.cond",
    "StatelessIf": "tf.cond",
    "Case": "tf.switch_case",
    "StatelessCase": "tf.switch_case",
}


def functional_flow_note(view: GraphView) -> str | None:
    """The TF1 plan's note on functional If/While ops; None for a graph without them (most)."""
    if view.op_counts().keys().isdisjoint(FUNCTIONAL_FLOW):
        return None
    found = [n for n in view.order if n.op in FUNCTIONAL_FLOW]
    inside = sum(len(n.body) for n in found)
    shown = ", ".join(f"{n.name} ({n.op})" for n in found[:3]) + (
        f" and {len(found) - 3} more" if len(found) > 3 else ""
    )
    calls = " and ".join(sorted({FUNCTIONAL_FLOW[n.op] for n in found}))
    return (
        f"{len(found)} op(s) are TensorFlow 2's functional control flow ({shown}), built by {calls} with TF 2's "
        f"control flow on. Their functions hold {inside} op(s), which this plan does not place or give a "
        f"precision one by one, and which an emulated session runs as written (unrounded). TF 1.15, the TF1 "
        f"adapter's TensorFlow, builds the same code as Switch/Merge/Enter/Exit ops in the graph, planned op "
        f"by op: call tf.compat.v1.disable_v2_behavior() (or tf.compat.v1.disable_control_flow_v2()) before "
        f"building the graph to plan what the adapter sees."
    )
