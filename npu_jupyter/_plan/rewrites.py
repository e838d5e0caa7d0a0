"""Ops that TensorFlow or the adapter rewrite before partitioning, placed as the adapter ends up placing them.

The partition pass (``om_partition_subgraphs_pass.cc``) first undoes two rewrites, so what it
clusters is not the op the graph shows:

* grappler's arithmetic optimizer fuses chains of unary element-wise ops on the CPU into one
  ``_UnaryOpsComposition`` (attr ``op_names``); the pass splits it back into one node per listed op
  (``SplitUnaryOpsComposition``). Each op then runs where its own kernel runs.
* TensorFlow rewrites ``AccumulateNV2`` into TemporaryVariable + AssignAdd + DestroyTemporaryVariable;
  the pass fuses a DestroyTemporaryVariable whose node name contains ``AccumulateNV2`` back into one
  ``AccumulateNV2`` (``AccumulateNFusion``). A renamed one stays as the variable ops (all executed by
  GE, so still on the device, as several ops).

The planner reads the graph the user built, so it keeps the node and gives it the decision and a
reason that names the rewrite.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from npu_jupyter._plan.graph.graph import Node

if TYPE_CHECKING:
    from npu_jupyter._ops.library import OpLibrary
    from npu_jupyter._tf_types import AttrMap

UNARY_COMPOSITION = "_UnaryOpsComposition"
ACCUMULATE = "AccumulateNV2"


def composed_ops(attrs: AttrMap) -> list[str]:
    """The ``op_names`` of a ``_UnaryOpsComposition`` NodeDef, in application order."""
    v = attrs.get("op_names")
    return [s.decode(errors="replace") for s in v.list.s] if v is not None else []


def seed_unary_composition(n: Node, declared: Callable[[str], bool]) -> tuple[bool, str]:
    """(device?, reason) for a fused unary chain: device when every op of the chain is supported."""
    chain = ", ".join(n.body) or "(no op_names)"
    missing = [op for op in n.body if not declared(op)]
    if not n.body:
        return False, f"{UNARY_COMPOSITION} without op_names: nothing for the adapter to split, runs on the host"
    if missing:
        return False, (
            f"grappler fused {chain} into {UNARY_COMPOSITION}; the adapter splits it back before "
            f"partitioning and {', '.join(missing)} has no device kernel, so that part runs on the "
            "host (the other ops of the chain may still be offloaded)"
        )
    return True, (
        f"grappler fused {chain} into {UNARY_COMPOSITION}; the adapter splits it back before "
        "partitioning and every op of the chain runs on the device"
    )


def unary_composition_engine(n: Node, lib: OpLibrary) -> str:
    """AI_CORE when every op of the chain has an AI Core kernel, else AI_CPU."""
    engines = {getattr(lib.caps(op), "engine", "AI_CPU") for op in n.body}
    return "AI_CORE" if engines <= {"AI_CORE"} else "AI_CPU"


def accumulate_note(n: Node) -> str:
    """What happens to an AccumulateNV2 between TensorFlow's rewrite and the adapter's fusion."""
    if ACCUMULATE in n.name:
        return (
            f"TensorFlow rewrites {ACCUMULATE} into TemporaryVariable/AssignAdd/DestroyTemporaryVariable "
            "and the adapter fuses them back into this one op (its name contains AccumulateNV2)"
        )
    return (
        f"TensorFlow rewrites {ACCUMULATE} into TemporaryVariable/AssignAdd/DestroyTemporaryVariable; the "
        "adapter fuses them back only when the node name contains 'AccumulateNV2', so here they run "
        "on the device as separate variable ops"
    )
