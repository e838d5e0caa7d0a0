"""One light, normalised view of a TensorFlow graph for the planner.

The planner accepts a ``tf.Graph``, a ``GraphDef`` or a ``tf.function`` ConcreteFunction. All three
become a :class:`GraphView`: plain Python nodes (name, op type, data inputs with slot and dtype,
control inputs, output dtypes, the few attributes the adapter's rules read) in topological order.

Why a separate view: the adapter's rules walk every edge several times (seeding, propagation,
clustering, precision). Protobuf and TF Python objects are slow to touch, so the GraphDef is iterated
exactly once and everything later works on ``__slots__`` objects and ints. Output dtypes come from
each op type's ``OpDef`` (looked up once per type, not per node). Static shapes are not converted up
front (``as_graph_def(add_shapes=True)`` alone costs more than the whole plan); they are looked up
lazily, only for the tensors that cross the host/device boundary.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence
from npu_jupyter.tensorflow_import import require_tensorflow

# Attribute names the adapter's scopes and helpers set (ADAPTER-FACTS §3.2, §3.3, §4.5).
WITHOUT_NPU_COMPILE = "_without_npu_compile"
KEEP_DTYPE = "_keep_dtype"
OP_MAX_SIZE = "_op_max_size"
NO_NEED_OPTIMIZE = "_NoNeedOptimize"

# V1 while-loop back edges: ignored by topological sort and by the adapter's cycle check.
_BACK_EDGE_OPS = frozenset({"NextIteration", "RefNextIteration"})


class Node:
    """One op of the graph, reduced to what the rules need."""

    __slots__ = (
        "name",
        "op",
        "index",
        "inputs",
        "input_names",
        "input_dtypes",
        "input_refs",
        "control_inputs",
        "output_dtypes",
        "output_refs",
        "without_npu_compile",
        "keep_dtype",
        "op_max_size",
        "no_need_optimize",
        "functions",
        "body",
        "frame_name",
        "in_idx",
        "ctrl_idx",
    )

    def __init__(self, name: str, op: str) -> None:
        self.name = name
        self.op = op
        self.index = -1  # position in GraphView.order (topological)
        # Fields that are empty for many nodes start as the shared empty tuple and are replaced, never
        # mutated: a view of a large graph then holds far fewer objects for the garbage collector to
        # scan (a cold plan's collector passes cost about as much as building the view itself).
        self.inputs: Sequence[tuple[str, int]] = ()  # (producer name, output slot)
        self.input_names: Sequence[str] = ()  # producer name of each data input
        self.input_dtypes: Sequence[str] = ()  # dtype of each data input as produced ("" if unknown)
        self.input_refs: list[bool] | None = None  # input arg is a ref type (None: no ref args)
        self.control_inputs: Sequence[str] = ()
        self.output_dtypes: list[str] = []
        self.output_refs: list[bool] | None = None
        self.without_npu_compile = False
        self.keep_dtype = False
        self.op_max_size = False
        self.no_need_optimize = False
        self.functions: Sequence[str] = ()  # library functions this node calls (attrs or op type)
        self.body: Sequence[str] = ()  # op types inside the called functions (for display)
        self.frame_name = ""  # V1 while-loop frame an Enter node opens
        self.in_idx: Sequence[int] = ()  # producer index of each data input (-1: not in the view)
        self.ctrl_idx: Sequence[int] = ()  # index of each control input in the view

    def __repr__(self) -> str:
        return f"Node({self.name!r}, {self.op!r})"


@dataclass
class FunctionInfo:
    """A library function, as the adapter's recursive support test sees it."""

    name: str
    op_types: list[str]
    calls: list[str]  # nested functions referenced by its nodes' attrs or op types
    output_dtypes: list[str]


@dataclass
class GraphView:
    """Nodes in topological order plus the function library and a lazy shape source."""

    nodes: dict[str, Node]
    order: list[Node]
    functions: dict[str, FunctionInfo] = field(default_factory=dict)
    tf_graph: Any = None  # the tf.Graph the view came from, for lazy static shapes
    _consumers: list[list[tuple[int, int]]] | None = None
    _preds: list[list[int]] | None = None
    _succs: list[list[int]] | None = None

    # Edge lists depend on the graph only, so they are built once per view: a view is cached
    # across re-plans under other configs. Callers must not mutate them.

    def preds(self) -> list[list[int]]:
        """Per node: indices of data and control producers that come earlier in topological order."""
        if self._preds is None:
            self._preds = [[j for j in (*n.in_idx, *n.ctrl_idx) if 0 <= j < n.index] for n in self.order]
        return self._preds

    def succs(self) -> list[list[int]]:
        """Per node: indices of the consumers in :meth:`preds` (the same edges reversed)."""
        if self._succs is None:
            succ: list[list[int]] = [[] for _ in self.order]
            for i, ps in enumerate(self.preds()):
                for p in ps:
                    succ[p].append(i)
            self._succs = succ
        return self._succs

    def consumers(self) -> list[list[tuple[int, int]]]:
        """Per node index: (consumer index, input position) of every data out-edge."""
        if self._consumers is None:
            cons: list[list[tuple[int, int]]] = [[] for _ in self.order]
            for n in self.order:
                ci = n.index
                for pos, j in enumerate(n.in_idx):
                    if j >= 0:
                        cons[j].append((ci, pos))
            self._consumers = cons
        return self._consumers

    def shape(self, tensor: str) -> tuple[int, ...] | None:
        """Fully known static shape of ``"op:slot"``, else None (only from a tf.Graph)."""
        if self.tf_graph is None:
            return None
        try:
            dims = self.tf_graph.get_tensor_by_name(tensor).shape
            if dims.rank is None:
                return None
            out = tuple(dims.as_list())
        except (KeyError, ValueError):
            return None
        if any(d is None or d < 0 for d in out):
            return None
        return out


# --------------------------------------------------------------------------------------------
# dtype names and per-op-type recipes (computed once per type, cached per process)
# --------------------------------------------------------------------------------------------

_DTYPE_NAMES: dict[int, tuple[str, bool]] = {}
_RECIPES: dict[str, Any] = {}


def _dtype(enum: int) -> tuple[str, bool]:
    """(base dtype name, is_ref) of a DataType enum value."""
    hit = _DTYPE_NAMES.get(enum)
    if hit is None:
        tf = require_tensorflow("the planner")

        try:
            d = tf.dtypes.as_dtype(enum)
            hit = (d.base_dtype.name, d._is_ref_dtype)  # noqa: SLF001 - no public accessor
        except TypeError:
            hit = ("", False)
        _DTYPE_NAMES[enum] = hit
    return hit


class _Recipe:
    """How to read output dtypes, ref inputs and function attrs of one op type from its NodeDef."""

    __slots__ = ("outputs", "inputs", "func_attrs", "defaults", "has_ref_input", "known", "single")

    def __init__(self, op_def: Any) -> None:
        self.known = op_def is not None
        self.outputs: list[tuple[int, str, str, str, bool]] = []
        self.inputs: list[tuple[bool, str, str]] = []
        self.func_attrs: list[str] = []
        self.defaults: dict[str, Any] = {}
        self.has_ref_input = False
        if op_def is None:
            return
        for arg in op_def.output_arg:
            self.outputs.append((arg.type, arg.type_attr, arg.number_attr, arg.type_list_attr, arg.is_ref))
        for arg in op_def.input_arg:
            self.inputs.append((arg.is_ref, arg.number_attr, arg.type_list_attr))
            self.has_ref_input |= arg.is_ref
        for attr in op_def.attr:
            if attr.type in ("func", "list(func)"):
                self.func_attrs.append(attr.name)
            if attr.HasField("default_value"):
                self.defaults[attr.name] = attr.default_value
        # Most ops have one output typed by one attr (T) or a fixed type: read it without the loop.
        self.single: tuple[int, str] | None = None
        if len(self.outputs) == 1:
            fixed, type_attr, number_attr, list_attr, is_ref = self.outputs[0]
            if not (number_attr or list_attr or is_ref) and (fixed or type_attr):
                self.single = (fixed, type_attr)


def _recipe(op: str) -> _Recipe:
    r = _RECIPES.get(op)
    if r is None:
        require_tensorflow("the planner")
        from tensorflow.python.framework import op_def_registry

        if hasattr(op_def_registry, "get"):
            r = _Recipe(op_def_registry.get(op))
        else:  # TF 1.15 has only the whole registry as a dict
            r = _Recipe(op_def_registry.get_registered_ops().get(op))
        _RECIPES[op] = r
    return r


def _attr(attrs: Any, recipe: _Recipe, key: str) -> Any:
    """An attr value from the node, else the OpDef default (GraphDefs may strip defaults)."""
    v = attrs.get(key)
    return v if v is not None else recipe.defaults.get(key)


def _output_dtypes(attrs: Any, recipe: _Recipe) -> tuple[list[str], list[bool] | None]:
    single = recipe.single
    if single is not None:
        fixed, type_attr = single
        if fixed:
            return [_dtype(fixed)[0]], None
        v = attrs.get(type_attr)
        if v is None:
            v = recipe.defaults.get(type_attr)
        name, ref = _dtype(v.type if v is not None else 0)
        return [name], ([True] if ref else None)
    dtypes: list[str] = []
    refs: list[bool] = []
    any_ref = False
    for fixed, type_attr, number_attr, list_attr, is_ref in recipe.outputs:
        if list_attr:
            v = _attr(attrs, recipe, list_attr)
            enums = list(v.list.type) if v is not None else []
        else:
            if fixed:
                enum = fixed
            else:
                v = _attr(attrs, recipe, type_attr)
                enum = v.type if v is not None else 0
            count = 1
            if number_attr:
                v = _attr(attrs, recipe, number_attr)
                count = v.i if v is not None else 0
            enums = [enum] * count
        for e in enums:
            name, ref = _dtype(e)
            ref = ref or is_ref
            any_ref |= ref
            dtypes.append(name)
            refs.append(ref)
    return dtypes, (refs if any_ref else None)


def _input_refs(attrs: Any, recipe: _Recipe, n_inputs: int) -> list[bool] | None:
    if not recipe.has_ref_input:
        return None
    refs: list[bool] = []
    for is_ref, number_attr, list_attr in recipe.inputs:
        count = 1
        if number_attr:
            v = _attr(attrs, recipe, number_attr)
            count = v.i if v is not None else 0
        elif list_attr:
            v = _attr(attrs, recipe, list_attr)
            count = len(v.list.type) if v is not None else 0
        refs.extend([is_ref] * count)
    refs.extend([False] * (n_inputs - len(refs)))
    return refs[:n_inputs]


def _called_functions(attrs: Any, recipe: _Recipe) -> list[str]:
    names: list[str] = []
    for key in recipe.func_attrs:
        v = attrs.get(key)
        if v is None:
            continue
        if v.HasField("func"):
            names.append(v.func.name)
        else:
            names.extend(f.name for f in v.list.func)
    return names


# --------------------------------------------------------------------------------------------
# conversion
# --------------------------------------------------------------------------------------------


def _split_input(text: str) -> tuple[str, int]:
    """``"op:3"`` -> ("op", 3); a name without a numeric suffix is slot 0."""
    name, sep, slot = text.rpartition(":")
    if sep and slot.isdigit():
        return name, int(slot)
    return text, 0


def _flag(attrs: Any, key: str) -> bool:
    v = attrs.get(key)
    if v is None:
        return False
    which = v.WhichOneof("value")
    if which == "b":
        return v.b
    if which == "i":
        return v.i != 0
    if which == "s":
        return v.s.lower() in (b"true", b"1")
    return which is not None


# Scope attributes the rules read. They are rare, and a membership test on a protobuf map costs
# about as much as reading an input, so the view only tests for those whose key occurs anywhere in
# the serialized graph (a key absent from the bytes cannot be on any node).
_SCOPE_ATTRS = (WITHOUT_NPU_COMPILE, KEEP_DTYPE, OP_MAX_SIZE, NO_NEED_OPTIMIZE)


def scope_attrs_in(serialized: bytes | None) -> frozenset[str]:
    """Scope attribute keys that may occur in a graph (all of them when the bytes are unknown)."""
    if serialized is None:
        return frozenset(_SCOPE_ATTRS)
    return frozenset(k for k in _SCOPE_ATTRS if k.encode() in serialized)


def _node(nd: Any, library: dict[str, FunctionInfo], scoped: frozenset[str]) -> Node:
    """Convert one NodeDef; ``scoped`` lists the scope attribute keys worth testing for."""
    op = nd.op
    n = Node(nd.name, op)
    attrs = nd.attr
    raw = nd.input
    if raw:
        _read_inputs(n, raw)
    fn = library.get(op)
    if fn is not None:  # a direct call of a library function
        n.output_dtypes = list(fn.output_dtypes)
        n.functions = [op]
    else:
        recipe = _RECIPES.get(op) or _recipe(op)
        if recipe.known:
            n.output_dtypes, n.output_refs = _output_dtypes(attrs, recipe)
            if recipe.has_ref_input:
                n.input_refs = _input_refs(attrs, recipe, len(n.inputs))
            if recipe.func_attrs:
                n.functions = _called_functions(attrs, recipe)
    if scoped:
        _read_scope_attrs(n, attrs, scoped)
    if op == "Enter" or op == "RefEnter":
        v = attrs.get("frame_name")
        n.frame_name = v.s.decode(errors="replace") if v is not None else ""
    return n


def _read_inputs(n: Node, raw: Any) -> None:
    """Data inputs as (producer, slot) plus producer names; "^name" entries are control inputs."""
    inputs: list[tuple[str, int]] = []
    names: list[str] = []
    control: list[str] = []
    for text in raw:
        if text.startswith("^"):
            control.append(text[1:])
            continue
        # inlined _split_input: this loop runs once per edge of the graph
        name, sep, slot = text.rpartition(":")
        if sep and slot.isdigit():
            inputs.append((name, int(slot)))
            names.append(name)
        else:
            inputs.append((text, 0))
            names.append(text)
    if inputs:
        n.inputs, n.input_names = inputs, names
    if control:
        n.control_inputs = control


def _read_scope_attrs(n: Node, attrs: Any, scoped: frozenset[str]) -> None:
    """Set the scope flags; membership is tested first because decoding is the rare case."""
    if WITHOUT_NPU_COMPILE in scoped and WITHOUT_NPU_COMPILE in attrs:
        n.without_npu_compile = _flag(attrs, WITHOUT_NPU_COMPILE)
    if KEEP_DTYPE in scoped and KEEP_DTYPE in attrs:
        n.keep_dtype = _flag(attrs, KEEP_DTYPE)
    if OP_MAX_SIZE in scoped and OP_MAX_SIZE in attrs:
        n.op_max_size = True
    if NO_NEED_OPTIMIZE in scoped and NO_NEED_OPTIMIZE in attrs:
        n.no_need_optimize = _flag(attrs, NO_NEED_OPTIMIZE)


def _library(graph_def: Any) -> dict[str, FunctionInfo]:
    """Summaries of every library function: op types inside and nested calls."""
    names = {f.signature.name for f in graph_def.library.function}
    out: dict[str, FunctionInfo] = {}
    for f in graph_def.library.function:
        op_types: list[str] = []
        calls: list[str] = []
        for nd in f.node_def:
            op_types.append(nd.op)
            if nd.op in names:
                calls.append(nd.op)
            else:
                recipe = _recipe(nd.op)
                if recipe.func_attrs:
                    calls.extend(_called_functions(nd.attr, recipe))
        outs = [_dtype(a.type)[0] if a.type else "" for a in f.signature.output_arg]
        out[f.signature.name] = FunctionInfo(f.signature.name, op_types, calls, outs)
    return out


def _positions(listed: list[Node]) -> bool:
    """Fill ``in_idx``/``ctrl_idx`` with listed positions; True when already topologically sorted."""
    pos = {n.name: k for k, n in enumerate(listed)}
    get = pos.get
    ordered = True
    for k, n in enumerate(listed):
        idx = [get(s, -1) for s in n.input_names] if n.input_names else ()
        ctrl = [j for j in map(get, n.control_inputs) if j is not None] if n.control_inputs else ()
        n.in_idx = idx
        n.ctrl_idx = ctrl
        # max() runs in C: cheaper than a Python loop for the common all-earlier case
        if ordered and ((idx and max(idx) >= k) or (ctrl and max(ctrl) >= k)):
            # a later producer is fine only across a while-loop back edge
            ordered = all(j < k or listed[j].op in _BACK_EDGE_OPS for j in idx) and all(j < k for j in ctrl)
    return ordered


def _topological_positions(listed: list[Node]) -> list[int]:
    """Listed positions in an order where every producer precedes its consumers (back edges ignored).

    A depth-first repair rather than Kahn's algorithm: FuncGraph GraphDefs are almost sorted (often
    only the final output Identity waits on a later NoOp), and this keeps every node that is already
    in place where it is. Nodes on a cycle are emitted when first reached. A node whose producers
    are all emitted is emitted at once without a stack: that is nearly every node.
    """
    count = len(listed)
    back = bytearray(n.op in _BACK_EDGE_OPS for n in listed)
    state = bytearray(count)  # 0 new, 1 in progress, 2 emitted
    order: list[int] = []
    for k in range(count):
        if state[k]:
            continue
        # Every position before k is emitted by now, so producers listed earlier need no stack.
        n = listed[k]
        idx, ctrl = n.in_idx, n.ctrl_idx
        if (not idx or max(idx) < k) and (not ctrl or max(ctrl) < k):
            state[k] = 2
            order.append(k)
            continue
        stack = [k]
        state[k] = 1
        while stack:
            top = stack[-1]
            n = listed[top]
            pending = None
            for j in n.in_idx:
                if j >= 0 and state[j] == 0 and not back[j]:
                    pending = j
                    break
            if pending is None:
                for j in n.ctrl_idx:
                    if state[j] == 0:
                        pending = j
                        break
            if pending is None:
                state[top] = 2
                order.append(top)
                stack.pop()
            else:
                state[pending] = 1
                stack.append(pending)
    return order


def _link(listed: list[Node]) -> list[Node]:
    """Topological order with ``index``, ``in_idx``, ``ctrl_idx`` and ``input_dtypes`` filled in.

    One pass renumbers the edges into the final order and reads each input's dtype from its
    producer's declared outputs (a missing producer or slot reads as "").
    """
    if _positions(listed):
        positions = None
        order = listed
    else:
        positions = _topological_positions(listed)
        order = [listed[k] for k in positions]
    outs = [n.output_dtypes for n in listed]
    new: list[int] = []
    first_moved = len(listed)  # edges to earlier positions keep their numbers
    if positions is not None:
        new = [0] * len(listed)
        for i, k in enumerate(positions):
            new[k] = i
            if i != k and k < first_moved:
                first_moved = k
    for i, n in enumerate(order):
        n.index = i
        idx = n.in_idx
        if idx:
            n.input_dtypes = [
                outs[j][slot] if j >= 0 and slot < len(outs[j]) else "" for (_src, slot), j in zip(n.inputs, idx)
            ]
            if max(idx) >= first_moved:
                n.in_idx = [new[j] if j >= 0 else -1 for j in idx]
        ctrl = n.ctrl_idx
        if ctrl and max(ctrl) >= first_moved:
            n.ctrl_idx = [new[j] for j in ctrl]
    return order


def graph_def_of(graph: Any) -> tuple[Any, Any]:
    """(GraphDef, tf.Graph or None) for any accepted input; one clear error otherwise."""
    require_tensorflow("the planner")
    from tensorflow.core.framework import graph_pb2

    if isinstance(graph, graph_pb2.GraphDef):
        return graph, None
    inner = getattr(graph, "graph", None)  # ConcreteFunction -> FuncGraph
    if inner is not None and hasattr(inner, "as_graph_def") and not hasattr(graph, "as_graph_def"):
        graph = inner
    if hasattr(graph, "as_graph_def") and hasattr(graph, "get_tensor_by_name"):
        return graph.as_graph_def(), graph
    raise TypeError(
        f"plan() needs a tf.Graph, a GraphDef or a tf.function ConcreteFunction, got {type(graph).__name__}"
    )


def fetch_names(fetches: Any) -> list[str]:
    """Op names of fetches given as names ("op", "op:0", "^op"), tensors or operations."""
    if fetches is None:
        return []
    if isinstance(fetches, (str, bytes)) or hasattr(fetches, "name"):
        fetches = [fetches]
    out = []
    for f in fetches:
        name = getattr(f, "name", f)
        if isinstance(name, bytes):
            name = name.decode()
        if not isinstance(name, str):
            raise TypeError(f"fetches must be op or tensor names, tensors or operations, got {f!r}")
        out.append(_split_input(name.lstrip("^"))[0])
    return out


def _prune(nodes: dict[str, Node], listed: list[Node], fetches: list[str]) -> list[Node]:
    """Keep only the ancestors (data and control) of the fetched ops."""
    missing = [f for f in fetches if f not in nodes]
    if missing:
        raise ValueError(f"fetches name ops that are not in the graph: {', '.join(map(repr, missing))}")
    keep = set(fetches)
    stack = list(fetches)
    while stack:
        n = nodes[stack.pop()]
        for s, _ in n.inputs:
            if s not in keep and s in nodes:
                keep.add(s)
                stack.append(s)
        for s in n.control_inputs:
            if s not in keep and s in nodes:
                keep.add(s)
                stack.append(s)
    return [n for n in listed if n.name in keep]


def build_view(graph: Any, fetches: Iterable[Any] | None = None) -> GraphView:
    """Convert any accepted graph input into a :class:`GraphView` (pruned to ``fetches``)."""
    graph_def, tf_graph = graph_def_of(graph)
    return view_of(graph_def, tf_graph, fetches)


def view_of(graph_def: Any, tf_graph: Any = None, fetches: Iterable[Any] | None = None,
            serialized: bytes | None = None) -> GraphView:
    """The view of a GraphDef; ``tf_graph`` (when known) answers static-shape lookups.

    ``serialized`` (the GraphDef's bytes, when the caller has them) lets the conversion skip tests
    for scope attributes that occur nowhere in the graph.
    """
    library = _library(graph_def) if graph_def.library.function else {}
    scoped = scope_attrs_in(serialized)
    listed = [_node(nd, library, scoped) for nd in graph_def.node]
    nodes = {n.name: n for n in listed}
    wanted = fetch_names(fetches)
    if wanted:
        listed = _prune(nodes, listed, wanted)
        nodes = {n.name: n for n in listed}
    order = _link(listed)
    if library:
        for n in order:
            if n.functions:
                body: list[str] = []
                for fname in n.functions:
                    info = library.get(fname)
                    if info is not None:
                        body.extend(info.op_types)
                n.body = body
    return GraphView(nodes=nodes, order=order, functions=library, tf_graph=tf_graph)
