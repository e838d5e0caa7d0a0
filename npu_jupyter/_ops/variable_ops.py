"""The op types that hold a TensorFlow variable: the one source every stage reads.

The planner (variable placement, replication into GeOps), the emulator (state kept between runs)
and the report (initialiser runs) all ask "is this op a variable?"; they import the answer from here
so that a new variable op type is added once.
"""

from __future__ import annotations

# Ref variables: their output is a ref tensor (cannot cross a GeOp boundary).
REF_VARIABLE_OPS = frozenset({"VariableV2", "Variable"})
# Resource variables: their output is a resource handle read by ReadVariableOp & co.
RESOURCE_VARIABLE_OPS = frozenset({"VarHandleOp"})
VARIABLE_OPS = REF_VARIABLE_OPS | RESOURCE_VARIABLE_OPS
