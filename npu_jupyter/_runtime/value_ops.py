"""Op types that only pass on or pick among the values they read: the one list both emulator stacks use.

These rules rest on these facts (the first three in both the TF1 session stack and the TF2 function stack):

* **No Cast pair for a rounding that cannot change a value** (:func:`npu_jupyter._runtime.rewrite.held_values`):
  an op that only passes on or picks among values already held in a half dtype outputs values of that
  dtype, so rounding them again is the identity (:data:`HALF_EXACT`).
* **Fewer finite flags, the same first non-finite op**: an op whose output can only hold inf/NaN when an
  input it reads does (:data:`SAME_VALUES`, :data:`PICKED_VALUES`) never goes non-finite first, so its
  flag can be left out once its inputs are checked (each stack states its own extra conditions).
* **Views share their input's drift** (:mod:`npu_jupyter._runtime.functions.reference`): a view of
  :data:`SAME_VALUES` holds its input's elements unchanged.
* **The first overflow of a loop is an op that computes** (:func:`npu_jupyter._runtime.observe.observers.first_in_execution`):
  a TF 1.x loop's control-flow ops hand on values unchanged (:data:`FLOW_VALUES`), so when one of them
  and an op of its frame that computes both hold inf/NaN, the op that computes made them.
"""

from __future__ import annotations

#: Ops whose output holds their first input's values unchanged, in the same order (a view).
SAME_VALUES = frozenset({"ExpandDims", "Identity", "PreventGradient", "Reshape", "Snapshot", "Squeeze", "StopGradient"})

#: A TF 1.x while loop's result: the op that hands it out of the loop's frame.
LOOP_EXITS = frozenset({"Exit", "RefExit"})

#: TF 1.x control-flow ops: each hands on the value it reads, unchanged, in another frame or branch.
FLOW_VALUES = LOOP_EXITS | {
    "Enter",
    "RefEnter",
    "Merge",
    "RefMerge",
    "NextIteration",
    "RefNextIteration",
    "Switch",
    "RefSwitch",
}

#: Ops whose every output value is one of their float inputs' values or its negation, or 0, or NaN
#: (``ReluGrad``'s ``inf * 0``), so it is inf/NaN only when an input value is. ``MaxPool`` gives
#: float32's lowest value for a window of NaNs, finite, but still never inf/NaN from finite inputs.
PICKED_VALUES = frozenset(
    {
        "ConcatV2",
        "MaxPool",
        "Maximum",
        "Minimum",
        "Neg",
        "Pack",
        "Relu",
        "Relu6",
        "Relu6Grad",
        "ReluGrad",
        "Slice",
        "StridedSlice",
        "Tile",
        "Transpose",
    }
)

#: Ops whose output is exact in a half dtype when their float inputs are: they pass on or pick values.
#: Not ``MaxPool``: a window of NaNs gives float32's lowest value, which float16 rounds to -inf.
HALF_EXACT = (SAME_VALUES | PICKED_VALUES) - {"MaxPool"}


def passes_on_values(op_type: str) -> bool:
    """True when ``op_type``'s output is inf/NaN only where a float input it reads is (see above)."""
    return op_type in SAME_VALUES or op_type in PICKED_VALUES


__all__ = ["HALF_EXACT", "PICKED_VALUES", "SAME_VALUES", "passes_on_values"]
