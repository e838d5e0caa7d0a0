"""Reading NodeDefs into view nodes: inputs, output dtypes, scope attributes, library functions.

Each NodeDef is touched exactly once (protobuf access is the slow part of planning a large graph);
everything later reads the :class:`~npu_jupyter._plan.graph.graph.Node` it becomes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Iterable, Sequence, cast

from npu_jupyter._plan.graph.graph import (
    KEEP_DTYPE,
    NO_NEED_OPTIMIZE,
    OP_MAX_SIZE,
    WITHOUT_NPU_COMPILE,
    FunctionInfo,
    Node,
)
from npu_jupyter._plan.graph.op_recipes import (
    RECIPES,
    SINGLE_OUTPUT,
    called_functions,
    dtype_of,
    input_refs,
    output_dtypes,
    recipe_of,
    single_output_of,
)
from npu_jupyter._plan.graph.topology import number_edges
from npu_jupyter._plan.readonly import DTYPE_LISTS, NO_STRINGS, ONE_DTYPE, ReadOnlyList, dtype_list
from npu_jupyter._plan.rewrites import UNARY_COMPOSITION, composed_ops

if TYPE_CHECKING:
    from npu_jupyter._tf_types import AttrMap, GraphDef, NodeDef


def _flag(attrs: AttrMap, key: str) -> bool:
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
# the serialized graph (a key absent from the bytes cannot be on any node; export.keys_in).
SCOPE_ATTRS = (WITHOUT_NPU_COMPILE, KEEP_DTYPE, OP_MAX_SIZE, NO_NEED_OPTIMIZE)


# Op types whose NodeDef holds more than dtypes for the rules: a while frame, a fused op chain.
_READ_IN_FULL = frozenset({"Enter", "RefEnter", UNARY_COMPOSITION})

# How read_nodes reads the output dtype of an op type's nodes inline, filled from the recipes as op
# types are first met: (fixed DataType enum or 0, type attr, position of the input the attr also
# types or None, the attr's default enum) for an op type of one output of a fixed or attr-given dtype
# that takes no ref input and calls no function (``Recipe.plain``) and is not read in full; None for
# every other op type, whose nodes take the full rule (:func:`_read_rest`). One lookup per node
# answers what the recipe's fields, tested one by one, did.
_INLINE: dict[str, tuple[int, str, int | None, int] | None] = {}


def _inline_rule(op: str) -> tuple[int, str, int | None, int] | None:
    """The entry of :data:`_INLINE` for ``op``."""
    recipe = RECIPES.get(op) or recipe_of(op)
    if recipe.plain is None or op in _READ_IN_FULL:
        return None
    fixed, type_attr = recipe.plain
    return fixed, type_attr, recipe.typed_input, recipe.default_type


def read_nodes(
    node_defs: Iterable[NodeDef], library: dict[str, FunctionInfo], scoped: frozenset[str]
) -> tuple[list[Node], tuple[int, list[int]] | None]:
    """Convert every NodeDef and number its edges; ``scoped`` lists the scope attribute keys worth testing for.

    Returns the nodes as listed and what :func:`~npu_jupyter._plan.graph.topology.link` needs to
    order them (:func:`~npu_jupyter._plan.graph.topology.number_edges`' answer; None when names repeat
    and the listing must be numbered afresh).

    One loop with the common case inline, each field of a node set once: each input is resolved to
    the position of its producer among the nodes read so far, and its dtype read from that
    producer's outputs, so a graph listed producers first needs no second pass over its nodes. A
    node with one or two inputs that each read output 0, and no control input (most nodes), is
    resolved in the loop; others by :func:`_resolve`. A node whose op type has one output of a
    fixed or attr-given dtype, and which calls no function (:data:`_INLINE`), needs no other
    attribute read (every other node takes the full rule, :func:`_read_rest`), and none at all when
    the attr also types an input whose producer is read (``Recipe.typed_input``): in a valid graph
    the two dtypes are one. Inputs naming a node listed later (a while loop's back edge, an
    unsorted GraphDef) are resolved after the loop
    (:func:`~npu_jupyter._plan.graph.topology.number_edges`).
    """
    out: list[Node] = []
    append = out.append
    simple = not (library or scoped)
    inline = _INLINE if simple else {}  # nothing inline: every node takes the full rule
    single_output = SINGLE_OUTPUT
    pos: dict[str, int] = {}
    producer_at = pos.get
    outs: list[list[str]] = []  # output dtypes per position, for inputs reading another slot
    add_outs = outs.append
    first: list[str] = []  # output 0's dtype per position: what most inputs read
    add_first = first.append
    late: list[int] = []
    derived: list[int] = []  # positions whose output dtype was read from an input (see below)
    new = object.__new__
    ones = ONE_DTYPE  # shared dtype lists (readonly.py): what most nodes' input dtypes are
    lists = DTYPE_LISTS
    for k, nd in enumerate(node_defs):
        op = nd.op
        name = nd.name
        n = new(Node)  # every slot is set below, without the call of Node.__init__
        n.name = name
        n.op = op
        n.index = k
        raw = nd.input[:]  # a slice is a plain list, copied in C (iterating the field is slower)
        count = len(raw)
        if not count:
            n.input_names = n.input_dtypes = n.control_inputs = NO_STRINGS
            n.input_slots = n.in_idx = n.ctrl_idx = ()
        else:
            # Most input lists name output 0 of each producer and hold no control input: one join
            # and two substring tests find that case, which then needs no per-edge parsing at all.
            joined = "".join(raw)
            plain = ":" not in joined and "^" not in joined
            if plain:
                n.input_names = ReadOnlyList(raw)
                n.input_slots = _ZERO_SLOTS.get(count) or _shared_slots((0,) * count)
                n.control_inputs = NO_STRINGS
            else:
                _read_inputs(n, raw)
            # one or two inputs reading output 0 (most nodes): resolved without building iterators
            if plain and count == 1:
                n.ctrl_idx = ()
                j = producer_at(raw[0])
                if j is None:
                    late.append(k)
                    n.in_idx = ()
                    n.input_dtypes = NO_STRINGS
                else:
                    n.in_idx = [j]
                    d = first[j]
                    n.input_dtypes = ones.get(d) or dtype_list((d,))
            elif plain and count == 2:
                n.ctrl_idx = ()
                j = producer_at(raw[0])
                j2 = producer_at(raw[1])
                if j is None or j2 is None:
                    late.append(k)
                    n.in_idx = ()
                    n.input_dtypes = NO_STRINGS
                else:
                    n.in_idx = [j, j2]
                    pair = (first[j], first[j2])
                    n.input_dtypes = lists.get(pair) or dtype_list(pair)
            elif not _resolve(n, producer_at, outs, first):
                late.append(k)
        rule = inline.get(op)
        if rule is None:
            n.output_dtypes = NO_STRINGS
            _read_rest(n, nd, library, scoped)
            if simple and op not in _INLINE:
                _INLINE[op] = _inline_rule(op)
        else:
            fixed, type_attr, typed, default = rule  # typed is None for a fixed dtype
            dtypes = n.input_dtypes
            if typed is not None and typed < len(dtypes) and dtypes[typed]:
                # typed by the same attr as an input whose producer is read: no attr read (most ops)
                d = dtypes[typed]
                n.output_dtypes = ones.get(d) or dtype_list((d,))
                derived.append(k)
            else:
                if not fixed:
                    v = nd.attr.get(type_attr)
                    fixed = v.type if v is not None else default
                hit = single_output.get(fixed) or single_output_of(fixed)
                n.output_dtypes = hit[0]
                if hit[1] is not None:  # a ref dtype (float32_ref): the output is a ref
                    n.output_refs = hit[1]
        o = n.output_dtypes
        add_outs(o)
        add_first(o[0] if o else "")
        pos[name] = k
        append(n)
    if len(pos) != len(out):  # duplicate names: let the ordering read the listing afresh
        _output_dtypes_from_attrs(out, list(node_defs), derived)
        return out, None
    return out, number_edges(out, late, pos, outs)


def _resolve(n: Node, producer_at: Callable[[str], int | None], outs: list[list[str]], first: list[str]) -> bool:
    """Resolve a node's inputs among the nodes read so far: the rule for a node with more than two
    inputs, an output slot other than 0 or a control input.

    False when a producer is not read yet: the node's edges are then numbered after the loop.
    """
    resolved = True
    n.in_idx = n.ctrl_idx = ()
    n.input_dtypes = NO_STRINGS
    names = n.input_names
    if names:
        found = list(map(producer_at, names))  # map() runs in C; None: not read (yet)
        if None in found:
            resolved = False
        else:
            idx = cast("list[int]", found)  # no None, as just tested
            n.in_idx = idx
            slots = n.input_slots
            if any(slots):
                n.input_dtypes = dtype_list(
                    tuple(outs[j][slot] if slot < len(outs[j]) else "" for slot, j in zip(slots, idx))
                )
            else:
                n.input_dtypes = dtype_list(tuple(map(first.__getitem__, idx)))
    control = n.control_inputs
    if control:
        ctrl = list(map(producer_at, control))
        if None in ctrl:
            resolved = False
        else:
            n.ctrl_idx = ctrl  # type: ignore[assignment]  # no None, as just tested
    return resolved


def _output_dtypes_from_attrs(nodes: list[Node], node_defs: Sequence[NodeDef], which: list[int]) -> None:
    """Read the output dtypes of the nodes at ``which`` from their attrs after all.

    :func:`read_nodes` takes a node's output dtype from the input typed by the same attr, found by
    name among the nodes read so far. When names repeat, the ordering resolves a name to another
    node than that (the last one listed): the attrs, which a valid graph keeps consistent with the
    inputs, are then the only source that cannot disagree with it.
    """
    for k in which:
        n, nd = nodes[k], node_defs[k]
        _, type_attr, _, default = cast("tuple[int, str, int, int]", _INLINE[n.op])  # only inline types are derived
        v = nd.attr.get(type_attr)
        hit = single_output_of(v.type if v is not None else default)
        n.output_dtypes = hit[0]
        if hit[1] is not None:
            n.output_refs = hit[1]


def _read_rest(n: Node, nd: NodeDef, library: dict[str, FunctionInfo], scoped: frozenset[str]) -> None:
    """Output dtypes, ref inputs, called functions and scope attributes: the full rule for one node."""
    op = n.op
    attrs = nd.attr
    fn = library.get(op)
    if fn is not None:  # a direct call of a library function
        n.output_dtypes = dtype_list(tuple(fn.output_dtypes))
        n.functions = [op]
    else:
        recipe = RECIPES.get(op) or recipe_of(op)
        if recipe.known:
            n.output_dtypes, refs = output_dtypes(attrs, recipe)
            if refs is not None:
                n.output_refs = refs
            if recipe.has_ref_input:
                n.input_refs = input_refs(attrs, recipe, len(n.input_names))
            if recipe.func_attrs:
                n.functions = called_functions(attrs, recipe)
    if scoped:
        _read_scope_attrs(n, attrs, scoped)
    if op == UNARY_COMPOSITION:  # the adapter splits it back into these ops (_plan.rewrites)
        n.body = ReadOnlyList(composed_ops(attrs))
    if op in {"Enter", "RefEnter"}:
        v = attrs.get("frame_name")
        n.frame_name = v.s.decode(errors="replace") if v is not None else ""


# Slot tuples shared by every node with the same slots: most nodes read output 0 of each producer.
_SLOTS: dict[tuple[int, ...], tuple[int, ...]] = {}


def _shared_slots(slots: tuple[int, ...]) -> tuple[int, ...]:
    """One tuple object per distinct slot sequence, so a large view holds few of them."""
    return _SLOTS.setdefault(slots, slots)


_ZERO_SLOTS = {k: _shared_slots((0,) * k) for k in range(1, 9)}  # output 0 of each of k producers


def _read_inputs(n: Node, raw: Sequence[str]) -> None:
    """Data inputs as producer names and slots; "^name" entries are control inputs."""
    n.input_names = n.control_inputs = NO_STRINGS
    n.input_slots = ()
    slots: list[int] = []
    names: list[str] = []
    control: list[str] = []
    for text in raw:
        if text.startswith("^"):
            control.append(text[1:])
            continue
        # inlined fetches.split_tensor_name: this loop runs once per edge of the graph
        name, sep, slot = text.rpartition(":")
        if sep and slot.isdigit():
            names.append(name)
            slots.append(int(slot))
        else:
            names.append(text)
            slots.append(0)
    if names:
        n.input_names, n.input_slots = ReadOnlyList(names), _shared_slots(tuple(slots))
    if control:
        n.control_inputs = control


def _read_scope_attrs(n: Node, attrs: AttrMap, scoped: frozenset[str]) -> None:
    """Set the scope flags; membership is tested first because decoding is the rare case."""
    if WITHOUT_NPU_COMPILE in scoped and WITHOUT_NPU_COMPILE in attrs:
        n.without_npu_compile = _flag(attrs, WITHOUT_NPU_COMPILE)
    if KEEP_DTYPE in scoped and KEEP_DTYPE in attrs:
        n.keep_dtype = _flag(attrs, KEEP_DTYPE)
    if OP_MAX_SIZE in scoped and OP_MAX_SIZE in attrs:
        n.op_max_size = True
    if NO_NEED_OPTIMIZE in scoped and NO_NEED_OPTIMIZE in attrs:
        n.no_need_optimize = _flag(attrs, NO_NEED_OPTIMIZE)


def read_library(graph_def: GraphDef) -> dict[str, FunctionInfo]:
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
                recipe = recipe_of(nd.op)
                if recipe.func_attrs:
                    calls.extend(called_functions(nd.attr, recipe))
        outs = [dtype_of(a.type)[0] if a.type else "" for a in f.signature.output_arg]
        out[f.signature.name] = FunctionInfo(f.signature.name, op_types, calls, outs)
    return out
