"""Carry variable values from one private graph's session to another's.

The emulator runs a private copy of the user's graph. When the copy must be rebuilt (the user added
ops, the config changed precision, ``accelerate_train_mode`` switched phase) or when a float32
reference copy must start a step from the same weights, the values of every *initialized* variable are
read from the old session and assigned in the new one, matched by op name. Read and assign ops are
built once per private graph and cached on it, so a per-step sync does not grow the graph.
"""

from __future__ import annotations

from typing import Any

_REF_TYPES = {"VariableV2", "Variable"}
_RESOURCE_TYPES = {"VarHandleOp"}


def variable_ops(graph: Any) -> list[Any]:
    """The graph's variable ops (ref and resource), in creation order."""
    return [op for op in graph.get_operations() if op.type in _REF_TYPES | _RESOURCE_TYPES]


def read_variables(session: Any, graph: Any) -> dict[str, Any]:
    """Values of the initialized variables of ``graph`` in ``session``, by variable op name."""
    reader = _reader(graph)
    if not reader:
        return {}
    names = list(reader)
    flags = session.run([reader[n][0] for n in names])
    ready = [n for n, ok in zip(names, flags) if ok]
    values = session.run([reader[n][1] for n in ready]) if ready else []
    return dict(zip(ready, values))


def write_variables(session: Any, graph: Any, values: dict[str, Any]) -> None:
    """Assign ``values`` (name -> array) to the same-named variables of ``graph`` in ``session``."""
    writer = _writer(graph)
    ops, feeds = [], {}
    for name, value in values.items():
        if name in writer:
            placeholder, assign = writer[name]
            ops.append(assign)
            feeds[placeholder] = value
    if ops:
        session.run(ops, feed_dict=feeds)


def _reader(graph: Any) -> dict[str, tuple[Any, Any]]:
    """name -> (is-initialized tensor, value tensor), built once per graph."""
    cached = getattr(graph, "_npu_emu_var_reader", None)
    if cached is not None and len(cached) == len(variable_ops(graph)):
        return cached
    import tensorflow as tf

    reader: dict[str, tuple[Any, Any]] = {}
    with graph.as_default():
        for op in variable_ops(graph):
            with graph.name_scope(f"npu_emu_read/{op.name}/"):
                if op.type in _REF_TYPES:
                    var = op.outputs[0]
                    flag = tf.raw_ops.IsVariableInitialized(ref=var)
                    value = tf.identity(var)
                else:
                    dtype = op.get_attr("dtype")
                    flag = tf.raw_ops.VarIsInitializedOp(resource=op.outputs[0])
                    value = tf.raw_ops.ReadVariableOp(resource=op.outputs[0], dtype=dtype)
            reader[op.name] = (flag, value)
    graph._npu_emu_var_reader = reader
    return reader


def _writer(graph: Any) -> dict[str, tuple[Any, Any]]:
    """name -> (placeholder, assign op), built once per graph."""
    cached = getattr(graph, "_npu_emu_var_writer", None)
    if cached is not None and len(cached) == len(variable_ops(graph)):
        return cached
    import tensorflow as tf

    writer: dict[str, tuple[Any, Any]] = {}
    with graph.as_default():
        for op in variable_ops(graph):
            with graph.name_scope(f"npu_emu_write/{op.name}/"):
                dtype = op.get_attr("dtype")
                base = tf.as_dtype(dtype).base_dtype
                placeholder = tf.compat.v1.placeholder(base, name="value")
                if op.type in _REF_TYPES:
                    assign = tf.raw_ops.Assign(ref=op.outputs[0], value=placeholder, validate_shape=False).op
                else:
                    assign = tf.raw_ops.AssignVariableOp(resource=op.outputs[0], value=placeholder)
            writer[op.name] = (placeholder, assign)
    graph._npu_emu_var_writer = writer
    return writer
