"""Per-op-type recipes read from TensorFlow's OpDefs: output dtypes, ref inputs, function attrs.

Why per type: a graph has thousands of nodes but few op types. The OpDef of each type is looked up
once per process and turned into a small recipe; reading a node then costs a few dict lookups. Only
this module touches TensorFlow's op registry (imported lazily, so importing the package stays free
of TensorFlow).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from npu_jupyter._plan.readonly import dtype_list

if TYPE_CHECKING:
    from npu_jupyter._tf_types import AttrMap, AttrValue, OpDef

_DTYPE_NAMES: dict[int, tuple[str, bool]] = {}
RECIPES: dict[str, Recipe] = {}  # op type -> Recipe (read directly on the hot path)


def dtype_of(enum: int) -> tuple[str, bool]:
    """(base dtype name, is_ref) of a DataType enum value."""
    hit = _DTYPE_NAMES.get(enum)
    if hit is None:
        from npu_jupyter._tensorflow_import import require_tensorflow

        tf = require_tensorflow("the planner")
        try:
            d = tf.dtypes.as_dtype(enum)
            hit = (d.base_dtype.name, d._is_ref_dtype)
        except TypeError:
            hit = ("", False)
        _DTYPE_NAMES[enum] = hit
    return hit


class Recipe:
    """How to read output dtypes, ref inputs and function attrs of one op type from its NodeDef."""

    __slots__ = (
        "default_type",
        "defaults",
        "func_attrs",
        "has_ref_input",
        "inputs",
        "known",
        "outputs",
        "plain",
        "single",
        "typed_input",
    )

    def __init__(self, op_def: OpDef | None) -> None:
        self.known = op_def is not None
        self.outputs: list[tuple[int, str, str, str, bool]] = []
        self.inputs: list[tuple[bool, str, str]] = []
        self.func_attrs: list[str] = []
        self.defaults: dict[str, AttrValue] = {}
        self.has_ref_input = False
        self.single: tuple[int, str] | None = None
        self.plain: tuple[int, str] | None = None
        self.typed_input: int | None = None
        self.default_type = 0
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
        if len(self.outputs) == 1:
            fixed, type_attr, number_attr, list_attr, is_ref = self.outputs[0]
            if not (number_attr or list_attr or is_ref) and (fixed or type_attr):
                self.single = (fixed, type_attr)
        # The same, for an op type that also takes no ref input and calls no function: reading such a
        # node needs its type attr at most (node_reading.read_nodes' inline case).
        self.plain = self.single if not (self.has_ref_input or self.func_attrs) else None
        if self.plain is not None and self.plain[1]:
            self.typed_input = _typed_input(op_def, self.plain[1])
        default = self.defaults.get(self.single[1]) if self.single is not None and self.single[1] else None
        self.default_type = default.type if default is not None else 0


def _typed_input(op_def: OpDef, type_attr: str) -> int | None:
    """Position of the first input typed by ``type_attr`` (Relu's, MatMul's, AddN's ``T``), else None.

    Its dtype is the output's: a node of a valid graph whose producer's dtype is known needs no attr
    read for its output dtype (:func:`~npu_jupyter._plan.graph.node_reading.read_nodes`). Only args
    of one tensor may come before it, so that the position is fixed.
    """
    for k, arg in enumerate(op_def.input_arg):
        if arg.type_attr == type_attr and not arg.type_list_attr:
            return k
        if arg.number_attr or arg.type_list_attr:
            return None
    return None


def recipe_of(op: str) -> Recipe:
    """The recipe for reading ``op``'s nodes; built from TensorFlow's OpDef for ops not in the table."""
    r = RECIPES.get(op)
    if r is None:
        from tensorflow.python.framework import op_def_registry

        if hasattr(op_def_registry, "get"):
            r = Recipe(op_def_registry.get(op))
        else:  # TF 1.15: the registry is read as a dict
            r = Recipe(op_def_registry.get_registered_ops().get(op))
        RECIPES[op] = r
    return r


def _attr(attrs: AttrMap, recipe: Recipe, key: str) -> AttrValue | None:
    """An attr value from the node, else the OpDef default (GraphDefs may strip defaults)."""
    v = attrs.get(key)
    return v if v is not None else recipe.defaults.get(key)


# (dtypes, refs) of a single output per DataType enum, one pair of lists shared by every node with
# that output: views are never mutated, and a large graph then holds a few dozen of these lists
# instead of one or two per node (fewer objects to allocate and for the garbage collector to scan).
SINGLE_OUTPUT: dict[int, tuple[list[str], list[bool] | None]] = {}


def single_output_of(enum: int) -> tuple[list[str], list[bool] | None]:
    """The shared (dtypes, refs) lists of one output of DataType ``enum``."""
    hit = SINGLE_OUTPUT.get(enum)
    if hit is None:
        name, ref = dtype_of(enum)
        hit = SINGLE_OUTPUT[enum] = (dtype_list((name,)), [True] if ref else None)
    return hit


def output_dtypes(attrs: AttrMap, recipe: Recipe) -> tuple[list[str], list[bool] | None]:
    """Output dtypes of a node from its attrs, and which outputs are refs (None: none are)."""
    single = recipe.single
    if single is not None:
        fixed, type_attr = single
        if fixed:
            return single_output_of(fixed)
        v = attrs.get(type_attr)
        if v is None:
            v = recipe.defaults.get(type_attr)
        return single_output_of(v.type if v is not None else 0)
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
            name, ref = dtype_of(e)
            ref = ref or is_ref
            any_ref |= ref
            dtypes.append(name)
            refs.append(ref)
    return dtype_list(tuple(dtypes)), (refs if any_ref else None)


def input_refs(attrs: AttrMap, recipe: Recipe, n_inputs: int) -> list[bool] | None:
    """Which of a node's inputs are refs (None when the op takes no ref input)."""
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


def called_functions(attrs: AttrMap, recipe: Recipe) -> list[str]:
    """Names of the functions a node calls through its function attrs (If/While branches, calls)."""
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
