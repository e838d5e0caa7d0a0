"""Structural types for the TensorFlow objects npu_jupyter reads, so signatures say what they take.

TensorFlow ships no type information, and the product must not import it at module level (``import
npu_jupyter`` stays light). These Protocols name the attributes the code actually uses; a real
``tf.Graph`` / ``tf.Operation`` / ``tf.Tensor`` / ``NodeDef`` / ``GraphDef`` / ``ConfigProto``
satisfies them structurally. Add an attribute here when code starts to use it (keep each class's
members in alphabetical order), rather than widening a signature to ``Any``.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Generic, Iterable, Iterator, MutableMapping, MutableSequence, Sequence, TypeVar

if TYPE_CHECKING:
    from typing import Protocol  # novermin (never imported at run time)
else:
    Protocol = object  # Python 3.7 has no typing.Protocol; only mypy reads these classes

_Message_co = TypeVar("_Message_co", covariant=True)


class RepeatedMessages(Generic[_Message_co], Protocol):  # noqa: PYI059 - Protocol is `object` at run time, which must come last
    """A protobuf repeated message field (``GraphDef.node``, ``FunctionDef.node_def`` ...)."""

    def __delitem__(self, index: slice) -> None: ...
    def __getitem__(self, index: int) -> _Message_co: ...
    def __iter__(self) -> Iterator[_Message_co]: ...
    def __len__(self) -> int: ...
    def add(self, **fields: object) -> _Message_co: ...


class DType(Protocol):
    """``tf.DType``: a tensor's element type."""

    @property
    def _is_ref_dtype(self) -> bool: ...  # a TF1 ref variable's dtype (float32_ref)
    @property
    def as_datatype_enum(self) -> int: ...
    @property
    def as_numpy_dtype(self) -> type: ...
    @property
    def base_dtype(self) -> DType: ...
    @property
    def is_floating(self) -> bool: ...
    @property
    def name(self) -> str: ...


class TensorShape(Protocol):
    """``tf.TensorShape``: a static shape, possibly partly unknown."""

    def as_list(self) -> list[int | None]: ...
    def is_compatible_with(self, other: Sequence[int | None]) -> bool: ...
    def is_fully_defined(self) -> bool: ...
    def num_elements(self) -> int | None: ...
    @property
    def rank(self) -> int | None: ...


class Tensor(Protocol):
    """``tf.Tensor`` in a graph: one output of an operation."""

    def __ge__(self, other: object) -> Tensor: ...
    def __mul__(self, other: object) -> Tensor: ...
    def consumers(self) -> list[Operation]: ...
    @property
    def dtype(self) -> DType: ...
    @property
    def graph(self) -> Graph: ...
    @property
    def name(self) -> str: ...
    @property
    def op(self) -> Operation: ...
    def set_shape(self, shape: Sequence[int | None]) -> None: ...
    @property
    def shape(self) -> TensorShape: ...
    @property
    def value_index(self) -> int: ...


class NameAttrList(Protocol):
    """``NameAttrList`` proto: a function an attribute names (``If`` branches, ``While`` bodies)."""

    @property
    def name(self) -> str: ...


class TensorProto(Protocol):
    """``TensorProto``: a constant's value inside an attribute."""

    def CopyFrom(self, other: TensorProto) -> None: ...  # noqa: N802 - the protobuf method's name


class AttrListValue(Protocol):
    """``AttrValue.ListValue`` proto: the list kinds of an attribute."""

    @property
    def func(self) -> Sequence[NameAttrList]: ...
    @property
    def s(self) -> Sequence[bytes]: ...
    @property
    def type(self) -> MutableSequence[int]: ...


class AttrValue(Protocol):
    """``AttrValue`` proto: one attribute of a NodeDef (which field is set depends on its kind)."""

    b: bool
    i: int
    s: bytes
    type: int  # a DataType enum value

    def CopyFrom(self, other: AttrValue) -> None: ...  # noqa: N802 - the protobuf method's name
    @property
    def func(self) -> NameAttrList: ...
    def HasField(self, name: str) -> bool: ...  # noqa: N802 - the protobuf method's name
    @property
    def list(self) -> AttrListValue: ...
    @property
    def tensor(self) -> TensorProto: ...
    def WhichOneof(self, name: str) -> str | None: ...  # noqa: N802 - the protobuf method's name


class AttrMap(Protocol):
    """A protobuf map str -> AttrValue (``NodeDef.attr``): reading a missing key adds it, like protobuf's."""

    def __contains__(self, key: object) -> bool: ...
    def __delitem__(self, key: str) -> None: ...
    def __getitem__(self, key: str) -> AttrValue: ...
    def __iter__(self) -> Iterator[str]: ...
    def __len__(self) -> int: ...
    def get(self, key: str) -> AttrValue | None: ...
    def values(self) -> Iterator[AttrValue]: ...


class NodeDef(Protocol):
    """``NodeDef`` proto: one node of a GraphDef."""

    name: str

    @property
    def attr(self) -> AttrMap: ...
    def CopyFrom(self, other: NodeDef) -> None: ...  # noqa: N802 - the protobuf method's name
    @property
    def device(self) -> str: ...
    @property
    def input(self) -> MutableSequence[str]: ...
    @property
    def op(self) -> str: ...


class ArgDef(Protocol):
    """``OpDef.ArgDef`` proto: one input or output of an op type (or of a function's signature)."""

    @property
    def is_ref(self) -> bool: ...
    @property
    def name(self) -> str: ...
    @property
    def number_attr(self) -> str: ...
    @property
    def type(self) -> int: ...
    @property
    def type_attr(self) -> str: ...
    @property
    def type_list_attr(self) -> str: ...


class OpAttrDef(Protocol):
    """``OpDef.AttrDef`` proto: one attribute an op type declares."""

    @property
    def default_value(self) -> AttrValue: ...
    def HasField(self, name: str) -> bool: ...  # noqa: N802 - the protobuf method's name
    @property
    def name(self) -> str: ...
    @property
    def type(self) -> str: ...  # "type", "list(type)", "func" ...


class OpDef(Protocol):
    """``OpDef`` proto: an op type's signature (also a FunctionDef's ``signature``)."""

    @property
    def attr(self) -> Sequence[OpAttrDef]: ...
    @property
    def input_arg(self) -> Sequence[ArgDef]: ...
    @property
    def is_stateful(self) -> bool: ...
    @property
    def name(self) -> str: ...
    @property
    def output_arg(self) -> Sequence[ArgDef]: ...


class FunctionDef(Protocol):
    """``FunctionDef`` proto: a traced function's body in the function library."""

    @property
    def attr(self) -> AttrMap: ...
    def CopyFrom(self, other: FunctionDef) -> None: ...  # noqa: N802 - the protobuf method's name
    @property
    def control_ret(self) -> MutableMapping[str, str]: ...
    @property
    def node_def(self) -> RepeatedMessages[NodeDef]: ...
    @property
    def ret(self) -> MutableMapping[str, str]: ...
    @property
    def signature(self) -> OpDef: ...


class FunctionDefLibrary(Protocol):
    """``FunctionDefLibrary`` proto: the functions a GraphDef carries."""

    @property
    def function(self) -> RepeatedMessages[FunctionDef]: ...


class GraphDef(Protocol):
    """``GraphDef`` proto: a serialized graph (nodes plus its function library)."""

    @property
    def library(self) -> FunctionDefLibrary: ...
    @property
    def node(self) -> RepeatedMessages[NodeDef]: ...
    def SerializeToString(self, deterministic: bool = ...) -> bytes: ...  # noqa: N802 - the protobuf method's name


class Operation(Protocol):
    """``tf.Operation`` in a graph."""

    def _add_control_inputs(self, ops: Sequence[Operation]) -> None: ...
    def _set_attr(self, attr_name: str, attr_value: AttrValue) -> None: ...  # TF's own, as the adapter marks nodes
    @property
    def control_inputs(self) -> Sequence[Operation]: ...
    @property
    def device(self) -> str: ...
    def get_attr(self, name: str) -> Any: ...  # noqa: ANN401 - an attribute's value has the attribute's own type
    @property
    def graph(self) -> Graph: ...
    @property
    def inputs(self) -> Sequence[Tensor]: ...
    @property
    def name(self) -> str: ...
    @property
    def node_def(self) -> NodeDef: ...
    @property
    def op_def(self) -> OpDef: ...
    @property
    def outputs(self) -> Sequence[Tensor]: ...
    @property
    def type(self) -> str: ...


class Graph(Protocol):
    """``tf.Graph`` (a TF1 graph, or a traced function's graph)."""

    def as_default(self) -> AbstractContextManager[object]: ...
    def as_graph_def(self, add_shapes: bool = ...) -> GraphDef: ...
    def as_graph_element(
        self, obj: object, allow_tensor: bool = ..., allow_operation: bool = ...
    ) -> Tensor | Operation: ...
    def get_collection(self, name: str) -> list[Any]: ...  # a collection holds whatever was added to it
    def get_operation_by_name(self, name: str) -> Operation: ...
    def get_operations(self) -> list[Operation]: ...
    def get_tensor_by_name(self, name: str) -> Tensor: ...
    def is_feedable(self, tensor: Tensor) -> bool: ...
    def is_fetchable(self, tensor_or_op: Tensor | Operation) -> bool: ...
    def name_scope(self, name: str) -> AbstractContextManager[str]: ...
    @property
    def version(self) -> int: ...


class EagerContext(Protocol):
    """TensorFlow's eager ``Context``: the function library traced functions are called from."""

    def add_function_def(self, fdef: FunctionDef) -> None: ...
    def has_function(self, name: str) -> bool: ...
    def remove_function(self, name: str) -> None: ...


class AtomicFunction(Protocol):
    """TensorFlow's ``AtomicFunction`` (TF >= 2.14): one traced function, called by its name."""

    @property
    def _bound_context(self) -> EagerContext: ...
    @property
    def children(self) -> Sequence[AtomicFunction]: ...
    @property
    def definition(self) -> FunctionDef: ...
    @property
    def graph(self) -> Graph: ...
    @property
    def name(self) -> str | bytes: ...


class RunMetadata(Protocol):
    """``tf.compat.v1.RunMetadata``: what a traced ``Session.run`` hands back."""

    def CopyFrom(self, other: RunMetadata) -> None: ...  # noqa: N802 - the protobuf method's name
    @property
    def step_stats(self) -> Any: ...  # noqa: ANN401 - StepStats proto: dev_stats -> node_stats (name, start, duration)


class Session(Protocol):
    """``tf.compat.v1.Session``: runs a graph's fetches."""

    @property
    def graph(self) -> Graph: ...
    def close(self) -> None: ...
    def list_devices(self) -> list[object]: ...  # DeviceAttributes of TensorFlow's client
    def run(
        self, fetches: object, feed_dict: object = ..., options: object = ..., run_metadata: object = ...
    ) -> Any: ...  # noqa: ANN401 - the fetched values, in the structure of ``fetches``


class ConcreteFunction(Protocol):
    """A ``tf.function``'s ConcreteFunction: one trace, whose graph the planner reads."""

    @property
    def graph(self) -> Graph: ...


class Variable(Protocol):
    """``tf.Variable`` (graph or resource variable): the parts the adapter's wrappers read."""

    def __add__(self, other: object) -> Tensor: ...
    def __mul__(self, other: object) -> Tensor: ...
    @property
    def dtype(self) -> DType: ...
    @property
    def name(self) -> str: ...


class Optimizer(Protocol):
    """``tf.compat.v1.train.Optimizer``: what the adapter's optimizer wrappers forward to."""

    def apply_gradients(
        self,
        grads_and_vars: Iterable[tuple[Tensor | None, Variable]],
        global_step: object = ...,
        name: str | None = ...,
    ) -> Operation: ...
    def compute_gradients(self, loss: Tensor, *args: Any, **kwargs: Any) -> list[tuple[Tensor | None, Variable]]: ...
    def get_slot(self, var: Variable, name: str) -> Variable | None: ...
    def get_slot_names(self) -> list[str]: ...
    def variables(self) -> list[Variable]: ...


class CustomGraphOptimizer(Protocol):
    """``RewriterConfig.CustomGraphOptimizer`` proto: a named custom optimizer and its parameter_map."""

    name: str
    parameter_map: MutableMapping[str, AttrValue]


class ConfigProto(Protocol):
    """``tf.compat.v1.ConfigProto``: the session config the adapter reads its NpuOptimizer from."""

    allow_soft_placement: bool
    log_device_placement: bool

    def CopyFrom(self, other: ConfigProto) -> None: ...  # noqa: N802 - the protobuf method's name
    @property
    def graph_options(self) -> Any: ...  # noqa: ANN401 - GraphOptions proto (rewrite_options.custom_optimizers)
    def SerializeToString(self, deterministic: bool = ...) -> bytes: ...  # noqa: N802 - the protobuf method's name


__all__ = [
    "ArgDef",
    "AtomicFunction",
    "AttrListValue",
    "AttrMap",
    "AttrValue",
    "ConcreteFunction",
    "ConfigProto",
    "CustomGraphOptimizer",
    "DType",
    "EagerContext",
    "FunctionDef",
    "FunctionDefLibrary",
    "Graph",
    "GraphDef",
    "NameAttrList",
    "NodeDef",
    "OpAttrDef",
    "OpDef",
    "Operation",
    "Optimizer",
    "RepeatedMessages",
    "RunMetadata",
    "Session",
    "Tensor",
    "TensorProto",
    "TensorShape",
    "Variable",
]
