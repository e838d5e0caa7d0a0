"""Storage rounding inside a traced ``tf.function``: the plan's precisions applied to a FunctionDef.

TF2 code (Keras ``fit``, GradientTape loops) runs graphs that live as ``FunctionDef`` protos in the
eager context's function library, called by name. The emulator changes no TensorFlow code: it
plans the function's graph, inserts the same ``Cast`` round trips the session emulator inserts
(``rewrite.roundings`` / ``rewrite.insert_casts``, one rule for both), and hands back a FunctionDef of
the *same name*, which the caller then registers in place of the original for the duration of a cell.

FunctionDef inputs spell tensors as ``node:output_arg:index``; TensorFlow's own converter gives a
GraphDef spelling (``node:index``) plus the map between the two, so the rewrite works on the GraphDef
and maps every reference back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from npu_jupyter.runtime.rewrite import Rounding, emulation_of, insert_casts, roundings


@dataclass
class RewrittenFunction:
    """A FunctionDef with the plan's roundings, and what was rounded (empty: nothing to change)."""

    definition: Any  # function_pb2.FunctionDef, same signature and name as the original
    roundings: list[Rounding] = field(default_factory=list)

    def emulation(self) -> dict[str, str]:
        """Op -> how its precision is emulated (for the report)."""
        return emulation_of(self.roundings)


def rewrite_function(fdef: Any, graph: Any, plan: Any) -> RewrittenFunction:
    """``fdef`` with every float32 tensor the plan lowers rounded through its half dtype.

    ``graph`` is the traced FuncGraph the plan was made from (op names are the FunctionDef's node
    names). A plan that lowers nothing returns the original definition untouched.
    """
    from tensorflow.core.framework import function_pb2
    from tensorflow.python.framework import function_def_to_graph

    rounded = roundings(plan, graph)
    if not rounded:
        return RewrittenFunction(fdef)
    graph_def, nested_to_flat = function_def_to_graph.function_def_to_graph_def(fdef)
    tensor_map = insert_casts(graph_def, rounded)
    flat_to_nested = _invert(nested_to_flat)
    args = {arg.name for arg in fdef.signature.input_arg}
    new = function_pb2.FunctionDef()
    new.CopyFrom(fdef)
    del new.node_def[:]
    for node in graph_def.node:
        if node.name in args and node.op == "Placeholder":
            continue  # the function's own arguments, not nodes of its body
        copy = new.node_def.add()
        copy.CopyFrom(node)
        for i, ref in enumerate(node.input):
            copy.input[i] = _nested(ref, flat_to_nested)
    for key, ref in list(new.ret.items()):
        flat = nested_to_flat.get(ref, ref)
        if flat in tensor_map:  # the function returns what the device stored (the rounded tensor)
            new.ret[key] = _nested(tensor_map[flat], flat_to_nested)
    return RewrittenFunction(new, rounded)


def _invert(nested_to_flat: dict[str, str]) -> dict[str, str]:
    """Flat (``node:0``) -> nested (``node:output_arg:0``) spelling of the original tensors."""
    inverse: dict[str, str] = {}
    for nested, flat in nested_to_flat.items():
        if flat.startswith("^"):
            continue
        inverse.setdefault(flat, nested)
    return inverse


def _nested(ref: str, flat_to_nested: dict[str, str]) -> str:
    """A GraphDef input reference in FunctionDef spelling; added Casts output their ``y``."""
    if ref.startswith("^"):
        return ref
    name, _, slot = ref.partition(":")
    flat = f"{name}:{slot or '0'}"
    if flat in flat_to_nested:
        return flat_to_nested[flat]
    return f"{name}:y:{slot or '0'}"  # a Cast this rewrite added
