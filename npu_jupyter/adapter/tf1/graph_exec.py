"""``util``'s graph-marking helpers: the same private node attributes the adapter's set, which the planner reads.

``set_graph_exec_config`` marks a fetch with ``_graph_dynamic_input``, ``_graph_dynamic_graph_execute_mode``,
``_graph_dynamic_inputs_shape_range``, ``_is_train_graph`` (and ``_recompute_mode`` from an
``ExperimentalConfig``). The adapter's partition pass reads them per graph, over the session options
(``OMPartitionSubgraphsPass::GetGraphConfig``), and so does :mod:`npu_jupyter._plan.graph.graph_exec`: a graph
marked dynamic + lazy_recompile is planned as that session option would plan it. The other helpers set
``_keep_dtype``, ``_op_max_shape``, ``_op_max_size`` and the multi-dims attributes as the adapter does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence, cast

if TYPE_CHECKING:
    from npu_jupyter._tf_types import AttrValue, Graph, Operation, Session, Tensor

_MODES = ("lazy_recompile", "dynamic_execute")


def _attr(**field: object) -> AttrValue:
    from tensorflow.core.framework import attr_value_pb2

    value: AttrValue = attr_value_pb2.AttrValue(**field)
    return value


def _op_of(fetch: Operation | Tensor) -> Operation:
    from tensorflow.python.framework import ops

    return cast("Operation", fetch) if isinstance(fetch, ops.Operation) else cast("Tensor", fetch).op


def _recompute(experimental_config: object) -> str | None:
    """``graph_memory_optimize_config.recompute`` of an ExperimentalConfig, as the adapter reads it."""
    if experimental_config is None:
        return None
    from npu_jupyter.adapter.tf1.run_config import ExperimentalConfig

    if not isinstance(experimental_config, ExperimentalConfig):
        raise ValueError("experimental_config type must be ExperimentalConfig")
    memory = experimental_config.as_kwargs().get("graph_memory_optimize_config") or {}
    recompute = memory.get("recompute")
    return None if recompute is None else str(recompute)


def set_graph_exec_config(
    fetch: object,
    dynamic_input: bool = False,
    dynamic_graph_execute_mode: str = "dynamic_execute",
    dynamic_inputs_shape_range: str | None = None,
    is_train_graph: bool = False,
    experimental_config: object = None,
) -> object:
    """Mark ``fetch`` (op, tensor, tensor name, or a list/tuple of them) with the graph's dynamic-execution config."""
    import tensorflow as tf
    from tensorflow.python.framework import ops

    if dynamic_graph_execute_mode not in _MODES:
        raise ValueError("dynamic_graph_execute_mode should be lazy_recompile or dynamic_execute")
    attrs = {
        "_graph_dynamic_input": _attr(b=bool(dynamic_input)),
        "_graph_dynamic_graph_execute_mode": _attr(s=dynamic_graph_execute_mode.encode()),
        "_graph_dynamic_inputs_shape_range": _attr(s=(dynamic_inputs_shape_range or "").encode()),
        "_is_train_graph": _attr(b=bool(is_train_graph)),
    }
    recompute = _recompute(experimental_config)
    if recompute is not None:
        attrs["_recompute_mode"] = _attr(s=recompute.encode())
    if isinstance(fetch, str):
        tensor: Tensor = tf.compat.v1.get_default_graph().get_tensor_by_name(fetch)
        _mark(tensor, attrs)
        return tensor
    if isinstance(fetch, (ops.Operation, tf.Tensor)):
        _mark(cast("Operation | Tensor", fetch), attrs)
    elif isinstance(fetch, (tuple, list)):
        for item in fetch:
            set_graph_exec_config(
                item, dynamic_input, dynamic_graph_execute_mode, dynamic_inputs_shape_range, is_train_graph,
                experimental_config,
            )  # fmt: skip
    else:
        raise ValueError("fetch is invalid, should be op, tensor, list, tuple or tensor name.")
    return fetch


def _mark(fetch: Operation | Tensor, attrs: dict[str, AttrValue]) -> None:
    op = _op_of(fetch)
    for key, value in attrs.items():
        op._set_attr(key, value)


def keep_tensors_dtypes(graph: Graph, input_tensors: Sequence[str]) -> None:
    """Keep the named tensors' ops in their original precision (``_keep_dtype``), as the adapter's."""
    import tensorflow as tf

    if not isinstance(graph, tf.Graph):
        raise ValueError("graph param must be ops.Graph class.")
    if not isinstance(input_tensors, (tuple, list)):
        raise ValueError("input_tensors must be list or tuple.")
    for name in input_tensors:
        graph.get_tensor_by_name(name).op._set_attr("_keep_dtype", _attr(i=1))


def set_op_tensor_max_range(tensor: Operation | Tensor, max_shape: str) -> None:
    """``_op_max_shape`` on the tensor's op."""
    _op_of(tensor)._set_attr("_op_max_shape", _attr(s=str(max_shape).encode()))


def set_op_input_tensor_multi_dims(tensor: Operation | Tensor, input_shape: str, input_dims: str) -> None:
    """``_subgraph_multi_dims_input_shape`` / ``_dims`` on the tensor's op."""
    op = _op_of(tensor)
    op._set_attr("_subgraph_multi_dims_input_shape", _attr(s=str(input_shape).encode()))
    op._set_attr("_subgraph_multi_dims_input_dims", _attr(s=str(input_dims).encode()))


def set_op_tensor_max_size(tensor: Operation | Tensor, max_size: int) -> None:
    """``_op_max_size`` on the tensor's op (the planner keeps such ops on the host, as the adapter)."""
    _op_of(tensor)._set_attr("_op_max_size", _attr(i=int(max_size)))


def npu_compile(sess: Session, *fetches: object) -> None:
    """Compiles the fetches' graph on the adapter by running it once; the same here."""
    sess.run(fetches)


def variable_initializer_in_host(var_list: Sequence[object]) -> Operation:
    """An op initialising ``var_list`` (named ``var_in_host``), as the adapter's."""
    import tensorflow as tf

    op: Operation = tf.compat.v1.initializers.variables(var_list, name="var_in_host")
    return op
