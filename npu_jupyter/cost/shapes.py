"""Static facts of a TensorFlow graph the cost model needs: output shapes, inputs and a few attributes.

Read once per graph into plain data, so the roofline itself never touches TensorFlow. Dimensions that
are unknown before a run (a ``None`` batch) are replaced by ``unknown_dim`` and counted, so an estimate
says how much of it rests on a guessed shape.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

_ATTRS = ("transpose_a", "transpose_b", "adj_x", "adj_y")


@dataclass
class OpFacts:
    """One op's static facts: output shapes, data inputs ``(producer, slot)``, matmul flags, variable shape."""

    outputs: list[list[int]] = field(default_factory=list)
    inputs: list[tuple[str, int]] = field(default_factory=list)
    flags: dict[str, bool] = field(default_factory=dict)
    variable_shape: list[int] | None = None
    variable_dtype: str = ""
    guessed: bool = False  # some dimension was unknown and replaced


def graph_facts(graph: Any, unknown_dim: int = 1) -> dict[str, OpFacts]:
    """``{op name: OpFacts}`` of a tf.Graph, GraphDef or ConcreteFunction."""
    tf_graph = _as_graph(graph)
    facts: dict[str, OpFacts] = {}
    for op in tf_graph.get_operations():
        item = OpFacts()
        for tensor in op.outputs:
            shape, guessed = _known(tensor.shape, unknown_dim)
            item.outputs.append(shape)
            item.guessed = item.guessed or guessed
        item.inputs = [(t.op.name, t.value_index) for t in op.inputs]
        for attr in _ATTRS:
            with contextlib.suppress(ValueError, TypeError):
                item.flags[attr] = bool(op.get_attr(attr))
        if op.type in ("VariableV2", "Variable", "VarHandleOp"):
            try:
                item.variable_shape, _ = _known(op.get_attr("shape"), unknown_dim)
                item.variable_dtype = op.get_attr("dtype").name
            except (ValueError, TypeError):
                item.variable_shape = None
        facts[op.name] = item
    return facts


def _as_graph(graph: Any) -> Any:
    """A tf.Graph for a graph, a GraphDef or a ConcreteFunction."""
    import tensorflow as tf

    if isinstance(graph, tf.Graph):
        return graph
    inner = getattr(graph, "graph", None)
    if isinstance(inner, tf.Graph):
        return inner
    if isinstance(graph, tf.compat.v1.GraphDef):
        imported = tf.Graph()
        with imported.as_default():
            tf.graph_util.import_graph_def(graph, name="")
        return imported
    raise TypeError(f"the cost model needs a tf.Graph, GraphDef or ConcreteFunction, got {type(graph).__name__}")


def _known(shape: Any, unknown_dim: int) -> tuple[list[int], bool]:
    """Dimensions as ints, unknown ones replaced; an unknown rank counts as a scalar (and as guessed)."""
    try:
        dims = shape.as_list() if hasattr(shape, "as_list") else list(shape)
    except ValueError:  # unknown rank
        return [], True
    guessed = any(d is None or d < 0 for d in dims)
    return [unknown_dim if (d is None or d < 0) else int(d) for d in dims], guessed
