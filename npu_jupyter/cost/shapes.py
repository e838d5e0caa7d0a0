"""Static facts of a TensorFlow graph the cost model needs: output shapes, inputs and a few attributes.

Read once per graph into plain data, so the roofline itself never touches TensorFlow. Dimensions that
are unknown before a run (a ``None`` batch) are replaced by ``unknown_dim`` and counted, so an estimate
says how much of it rests on a guessed shape.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable, cast

if TYPE_CHECKING:
    from npu_jupyter._tf_types import ConcreteFunction, DType, Graph, GraphDef, TensorShape

_ATTRS = ("transpose_a", "transpose_b", "adj_x", "adj_y")


@dataclass
class OpFacts:
    """One op's static facts: output shapes, data inputs ``(producer, slot)``, matmul flags, variable shape."""

    outputs: list[list[int]] = field(default_factory=list)
    dtypes: list[str] = field(default_factory=list)  # each output's dtype in the graph (what TF feeds and fetches)
    inputs: list[tuple[str, int]] = field(default_factory=list)
    flags: dict[str, bool] = field(default_factory=dict)
    variable_shape: list[int] | None = None
    variable_dtype: str = ""
    guessed: bool = False  # some dimension was unknown and replaced


def graph_facts(
    graph: Graph | GraphDef | ConcreteFunction, unknown_dim: int = 1, fed_shapes: dict[str, list[int]] | None = None
) -> dict[str, OpFacts]:
    """``{op name: OpFacts}`` of a tf.Graph, GraphDef or ConcreteFunction.

    ``fed_shapes`` (``{"x:0": [64, 784]}``) are the shapes a run fed: when they fill dimensions the
    graph leaves unknown, shapes are inferred again from them (:func:`_refed`), so a batch of 64 is
    counted as 64, not as ``unknown_dim``.
    """
    tf_graph = _as_graph(graph)
    fed_as: dict[str, tuple[str, int]] = {}  # a fed tensor's placeholder in the re-fed graph -> the tensor
    if fed_shapes:
        tf_graph, fed_as = _refed(tf_graph, fed_shapes)
    facts: dict[str, OpFacts] = {}
    for op in tf_graph.get_operations():
        item = OpFacts()
        for tensor in op.outputs:
            shape, guessed = _known(tensor.shape, unknown_dim)
            item.outputs.append(shape)
            item.dtypes.append(tensor.dtype.base_dtype.name)
            item.guessed = item.guessed or guessed
        item.inputs = [fed_as.get(t.op.name, (t.op.name, t.value_index)) for t in op.inputs]
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


def _refed(graph: Graph, fed_shapes: dict[str, list[int]]) -> tuple[Graph, dict[str, tuple[str, int]]]:
    """``graph`` again, with each fed tensor's shape set to what was fed and shapes inferred from there.

    The graph is imported into a new one with every fed tensor replaced (``input_map``) by a placeholder
    of the fed shape, then the fed ops' own outputs are given that shape too. Returned with each such
    placeholder's name -> the fed ``(op, slot)``, so its consumers' inputs are read as the fed tensor
    (what a run copies to the device). A graph whose fed shapes add nothing (all known already) is
    returned as it is; one TensorFlow cannot re-import is too.
    """
    import tensorflow as tf

    wanted: dict[str, tuple[DType, list[int]]] = {}
    for name, shape in fed_shapes.items():
        try:
            tensor = graph.get_tensor_by_name(name)
        except (KeyError, ValueError, TypeError):
            continue
        if tensor.shape.is_compatible_with(shape) and not tensor.shape.is_fully_defined():
            wanted[name] = (tensor.dtype.base_dtype, list(shape))
    if not wanted:
        return graph, {}
    refed: Graph = tf.Graph()
    try:
        with refed.as_default():
            feeds = {
                name: tf.compat.v1.placeholder(dtype, shape, name=f"npu_jupyter_fed_{k}")
                for k, (name, (dtype, shape)) in enumerate(wanted.items())
            }
            tf.graph_util.import_graph_def(graph.as_graph_def(), input_map=feeds, name="")
    except Exception:  # noqa: BLE001 - a graph TensorFlow cannot re-import keeps its static shapes
        return graph, {}
    for name, (_, shape) in wanted.items():  # the fed op itself (a placeholder) keeps no consumers
        with contextlib.suppress(KeyError, ValueError):
            refed.get_tensor_by_name(name).set_shape(shape)
    return refed, {tensor.op.name: _op_slot(name) for name, tensor in feeds.items()}


def _op_slot(name: str) -> tuple[str, int]:
    op, _, slot = name.rpartition(":")
    return op, int(slot)


def _as_graph(graph: object) -> Graph:
    """A tf.Graph for a graph, a GraphDef or a ConcreteFunction."""
    import tensorflow as tf

    if isinstance(graph, tf.Graph):
        return cast("Graph", graph)
    inner = getattr(graph, "graph", None)
    if isinstance(inner, tf.Graph):
        return cast("Graph", inner)
    if isinstance(graph, tf.compat.v1.GraphDef):
        imported: Graph = tf.Graph()
        with imported.as_default():
            tf.graph_util.import_graph_def(graph, name="")
        return imported
    raise TypeError(f"the cost model needs a tf.Graph, GraphDef or ConcreteFunction, got {type(graph).__name__}")


def _known(shape: TensorShape | Iterable[int | None], unknown_dim: int) -> tuple[list[int], bool]:
    """Dimensions as ints, unknown ones replaced; an unknown rank counts as a scalar (and as guessed)."""
    try:
        dims = shape.as_list() if hasattr(shape, "as_list") else list(shape)
    except ValueError:  # unknown rank
        return [], True
    guessed = any(d is None or d < 0 for d in dims)
    return [unknown_dim if (d is None or d < 0) else int(d) for d in dims], guessed
