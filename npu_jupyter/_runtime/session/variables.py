"""Carry variable values from one private graph's session to another's.

The emulator runs a private copy of the user's graph. When the copy must be rebuilt (the user added
ops, the config changed precision, ``accelerate_train_mode`` switched phase) or when a float32
reference copy must start a step from the same weights, the values of every *initialized* variable are
read from the old session and assigned in the new one, matched by op name. Read and assign ops are
built once per private graph and cached on it, so a per-step sync does not grow the graph.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, TypeVar, cast

from npu_jupyter._ops.variable_ops import REF_VARIABLE_OPS as _REF_TYPES
from npu_jupyter._ops.variable_ops import RESOURCE_VARIABLE_OPS as _RESOURCE_TYPES
from npu_jupyter._tensorflow_import import require_tensorflow

if TYPE_CHECKING:
    from npu_jupyter._tf_types import Graph, Operation, Session, Tensor

_Entry = TypeVar("_Entry")


def variable_ops(graph: Graph) -> list[Operation]:
    """The graph's variable ops (ref and resource), in creation order."""
    return [op for op in graph.get_operations() if op.type in _REF_TYPES | _RESOURCE_TYPES]


def read_variables(session: Session, graph: Graph) -> dict[str, object]:
    """Values of the initialized variables of ``graph`` in ``session``, by variable op name."""
    reader = _reader(graph)
    if not reader:
        return {}
    names = list(reader)
    flags = session.run([reader[n][0] for n in names])
    ready = [n for n, ok in zip(names, flags) if ok]
    values = session.run([reader[n][1] for n in ready]) if ready else []
    return dict(zip(ready, values))


def write_variables(session: Session, graph: Graph, values: dict[str, object]) -> None:
    """Assign ``values`` (name -> array) to the same-named variables of ``graph`` in ``session``."""
    writer = _writer(graph)
    ops: list[Operation] = []
    feeds: dict[Tensor, object] = {}
    for name, value in values.items():
        if name in writer:
            placeholder, assign = writer[name]
            ops.append(assign)
            feeds[placeholder] = value
    if ops:
        session.run(ops, feed_dict=feeds)


def _cached(graph: Graph, attr: str) -> dict[str, _Entry] | None:
    """The read/assign table cached on ``graph`` if it still covers every variable, else None.

    Why the version stamp: the reference run syncs variables every step, and re-listing the graph's
    ops each time would cost O(graph) per step. An unchanged ``graph.version`` proves no variable was
    added; only after the graph grew are the variables counted again.
    """
    cached = getattr(graph, attr, None)
    if cached is None:
        return None
    version, table = cached
    if version == graph.version:
        return cast("dict[str, _Entry]", table)
    if len(table) == len(variable_ops(graph)):
        setattr(graph, attr, (graph.version, table))
        return cast("dict[str, _Entry]", table)
    return None


def _reader(graph: Graph) -> dict[str, tuple[Tensor, Tensor]]:
    """Name -> (is-initialized tensor, value tensor), built once per graph."""
    return _table(graph, "_npu_emu_var_reader", "npu_emu_read", _read_entry)


def _writer(graph: Graph) -> dict[str, tuple[Tensor, Operation]]:
    """Name -> (placeholder, assign op), built once per graph."""
    return _table(graph, "_npu_emu_var_writer", "npu_emu_write", _write_entry)


def _table(graph: Graph, attr: str, scope: str, entry: Callable[[Operation], _Entry]) -> dict[str, _Entry]:
    """The cached table ``attr`` of ``graph``, or a new one of ``entry(variable op)`` under ``scope``."""
    cached: dict[str, _Entry] | None = _cached(graph, attr)
    if cached is not None:
        return cached
    table: dict[str, _Entry] = {}
    with graph.as_default():
        for op in variable_ops(graph):
            with graph.name_scope(f"{scope}/{op.name}/"):
                table[op.name] = entry(op)
    setattr(graph, attr, (graph.version, table))
    return table


def _read_entry(op: Operation) -> tuple[Tensor, Tensor]:
    """(is-initialized flag, value) ops for one ref or resource variable."""
    tf = require_tensorflow("the emulator backend")

    if op.type in _REF_TYPES:
        var = op.outputs[0]
        return tf.raw_ops.IsVariableInitialized(ref=var), tf.identity(var)
    dtype = op.get_attr("dtype")
    return (
        tf.raw_ops.VarIsInitializedOp(resource=op.outputs[0]),
        tf.raw_ops.ReadVariableOp(resource=op.outputs[0], dtype=dtype),
    )


def _write_entry(op: Operation) -> tuple[Tensor, Operation]:
    """(value placeholder, assign op) for one ref or resource variable."""
    tf = require_tensorflow("the emulator backend")

    placeholder = tf.compat.v1.placeholder(tf.as_dtype(op.get_attr("dtype")).base_dtype, name="value")
    if op.type in _REF_TYPES:
        return placeholder, tf.raw_ops.Assign(ref=op.outputs[0], value=placeholder, validate_shape=False).op
    return placeholder, tf.raw_ops.AssignVariableOp(resource=op.outputs[0], value=placeholder)
