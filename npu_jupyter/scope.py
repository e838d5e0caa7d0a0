"""The adapter's graph scopes, setting exactly the node attributes its own scopes set.

Each scope stamps private attributes on every op created inside it through the default graph's
``_attr_scope`` — the same mechanism ``npu_bridge.estimator.npu.npu_scope`` uses — so a graph built here
is attribute-for-attribute the graph the adapter's scopes would build, and the real adapter (and our
planner) honour it. Works in ``tf.compat.v1`` graphs and while a ``tf.function`` traces (its FuncGraph
is then the default graph). TensorFlow is imported when a scope is entered, not when this module is.

Attribute types follow today's adapter (tests/data/reference/ADAPTER-FACTS.md §4.5): ``_without_npu_compile`` is bool
True, ``_keep_dtype`` is int 1 (an older adapter wrote bool True).
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Iterator, Mapping

from npu_jupyter._tensorflow_import import require_tensorflow

if TYPE_CHECKING:
    from npu_jupyter._tf_types import AttrValue

WITHOUT_NPU_COMPILE = "_without_npu_compile"
KEEP_DTYPE = "_keep_dtype"
VARIABLE_PLACEMENTS = ("all", "cube", "vector", "taishan", "dvpp", "host")


def _attr(**field: object) -> AttrValue:
    """One AttrValue (b/i/s)."""
    require_tensorflow("npu_scope")
    from tensorflow.core.framework import attr_value_pb2

    if "s" in field:
        field = {"s": str(field["s"]).encode("utf-8")}
    value: AttrValue = attr_value_pb2.AttrValue(**field)
    return value


@contextlib.contextmanager
def _attr_scope(attrs: Mapping[str, AttrValue]) -> Iterator[None]:
    """Stamp ``attrs`` on every op created in the block, on the current default graph."""
    tf = require_tensorflow("npu_scope")

    graph = tf.compat.v1.get_default_graph()
    with graph._attr_scope(dict(attrs)):  # the adapter's own mechanism; no public equivalent exists
        yield


def without_npu_compile_scope() -> contextlib.AbstractContextManager[None]:
    """Ops created inside stay on the host (``_without_npu_compile`` = True); honoured in every mode today."""
    return _attr_scope({WITHOUT_NPU_COMPILE: _attr(b=True)})


def keep_dtype_scope() -> contextlib.AbstractContextManager[None]:
    """Ops created inside keep their original dtype where supported (``_keep_dtype`` = 1)."""
    return _attr_scope({KEEP_DTYPE: _attr(i=1)})


def npu_variable_scope(placement: str = "all") -> contextlib.AbstractContextManager[None]:
    """``_variable_placement`` = placement (one of all, cube, vector, taishan, dvpp, host)."""
    value = getattr(placement, "value", placement)
    if value not in VARIABLE_PLACEMENTS:
        raise ValueError(f"npu_variable_scope: placement {placement!r} is not one of {', '.join(VARIABLE_PLACEMENTS)}")
    return _attr_scope({"_variable_placement": _attr(s=value)})


def npu_stage_scope(stage: int) -> contextlib.AbstractContextManager[None]:
    """``_stage_level`` = stage: ops inside form one pipeline stage."""
    return _attr_scope({"_stage_level": _attr(i=int(stage))})


def npu_mem_type_scope() -> contextlib.AbstractContextManager[None]:
    """``_output_memory_type`` = 1."""
    return _attr_scope({"_output_memory_type": _attr(i=1)})


def npu_weight_prefetch_scope(
    buffer_pool_id: int = 0, buffer_pool_size: int = 536870912
) -> contextlib.AbstractContextManager[None]:
    """``_buffer_pool_id`` / ``_buffer_pool_size``: PREFETCH nodes use a buffer pool."""
    return _attr_scope(
        {"_buffer_pool_id": _attr(i=int(buffer_pool_id)), "_buffer_pool_size": _attr(i=int(buffer_pool_size))}
    )


def op_specified_engine_scope(engine_name: str, kernel_lib_name: str) -> contextlib.AbstractContextManager[None]:
    """``_specified_engine_name`` / ``_specified_kernel_lib_name``: force an engine and kernel library."""
    return _attr_scope(
        {"_specified_engine_name": _attr(s=engine_name), "_specified_kernel_lib_name": _attr(s=kernel_lib_name)}
    )


def npu_qos_label_scope(label: int) -> contextlib.AbstractContextManager[None]:
    """``_qos_service_label`` = label."""
    return _attr_scope({"_qos_service_label": _attr(i=int(label))})


def subgraph_multi_dims_scope(index: int) -> contextlib.AbstractContextManager[None]:
    """``_subgraph_multi_dims_index`` = index."""
    return _attr_scope({"_subgraph_multi_dims_index": _attr(i=int(index))})


def npu_optimizer_scope() -> contextlib.AbstractContextManager[None]:
    """``_optimizer`` = True."""
    return _attr_scope({"_optimizer": _attr(b=True)})


def disable_autofuse() -> contextlib.AbstractContextManager[None]:
    """``_disable_autofuse_scope`` = True: no automatic fusion of the ops inside."""
    return _attr_scope({"_disable_autofuse_scope": _attr(b=True)})


def limit_core_num_scope(
    op_aicore_num: str = "0", op_vectorcore_num: str = "0"
) -> contextlib.AbstractContextManager[None]:
    """``_op_vectorcore_num`` = op_vectorcore_num (a string holding a positive int, as the adapter requires)."""
    if not isinstance(op_vectorcore_num, str):
        raise ValueError("limit_core_num_scope: op_vectorcore_num must be a string such as '8'")
    try:
        number = int(op_vectorcore_num)
    except ValueError:
        raise ValueError(f"limit_core_num_scope: op_vectorcore_num {op_vectorcore_num!r} is not an int") from None
    if number <= 0:
        raise ValueError(f"limit_core_num_scope: op_vectorcore_num must be > 0, got {op_vectorcore_num!r}")
    return _attr_scope({"_op_vectorcore_num": _attr(s=op_vectorcore_num)})


def npu_recompute_scope() -> contextlib.AbstractContextManager[str]:
    """A name scope 'NpuRecompute': the adapter marks ops under it (outside gradients) for recomputation."""
    tf = require_tensorflow("npu_scope")

    scope: contextlib.AbstractContextManager[str] = tf.name_scope("NpuRecompute")
    return scope


def npu_recompute_attr_scope() -> contextlib.AbstractContextManager[None]:
    """The TF2 adapter's ``npu_device.npu_recompute_scope``: ``_recompute`` (bool True) on ops in it."""
    return _attr_scope({"_recompute": _attr(b=True)})


def _positive_int(value: object) -> bool:
    """An int > 0, checked at run time (callers pass anything); a bool is refused, True is no count."""
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def npu_graph_slice_scope(slice_num: int) -> contextlib.AbstractContextManager[str]:
    """A name scope 'SliceNum-<n>-NpuGraphSlicing<n>' that the adapter reads as a graph slice count."""
    tf = require_tensorflow("npu_scope")

    if not _positive_int(slice_num):
        raise ValueError(f"npu_graph_slice_scope: slice_num must be a positive int, got {slice_num!r}")
    scope: contextlib.AbstractContextManager[str] = tf.name_scope(f"SliceNum-{slice_num}-NpuGraphSlicing{slice_num}")
    return scope


__all__ = [
    "KEEP_DTYPE",
    "WITHOUT_NPU_COMPILE",
    "disable_autofuse",
    "keep_dtype_scope",
    "limit_core_num_scope",
    "npu_graph_slice_scope",
    "npu_mem_type_scope",
    "npu_optimizer_scope",
    "npu_qos_label_scope",
    "npu_recompute_attr_scope",
    "npu_recompute_scope",
    "npu_stage_scope",
    "npu_variable_scope",
    "npu_weight_prefetch_scope",
    "op_specified_engine_scope",
    "subgraph_multi_dims_scope",
    "without_npu_compile_scope",
]
