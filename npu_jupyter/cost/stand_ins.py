"""Ops the emulator runs in place of an adapter op the device would run: not estimated as the device's.

The emulated ``npu_ops.dropout`` builds TensorFlow's own dropout (``RandomUniform``, ``GreaterEqual``,
``SelectV2``, a ``Mul`` or ``RealDiv``) where the adapter builds the fused DropOutGenMask/DropOutDoMask
pair. The cost model estimates the ops in the graph, so those stand-ins (a ``RandomUniform`` on the AI
CPU, 30 µs) led "Estimated costliest ops" as if the device ran them. The emulation stamps each stand-in
with :data:`STAND_IN_ATTR` (what it stands in for); the estimate leaves them out of its per-op times,
and the report says what was left out and that the step estimate counts them in the pair's place.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover - typing only
    from npu_jupyter._plan.model import Plan
    from npu_jupyter._tf_types import Graph

#: Node attribute the emulation stamps on a stand-in op: the adapter op it replaces ("npu_ops.dropout").
#: A leading underscore: TensorFlow's kernels and the adapter's passes ignore such attributes.
STAND_IN_ATTR = "_npu_jupyter_stand_in_for"
#: Op types every stand-in group holds (dropout's random draw): a plan without one has no stand-in.
_MARKERS = frozenset({"RandomUniform"})
#: What the device runs for each stand-in kind.
DEVICE_OPS = {"npu_ops.dropout": "DropOutGenMask/DropOutDoMask"}


def stand_ins(plan: Plan | None, graph: Graph | None) -> dict[str, str]:
    """The plan's ops the emulation stamped as stand-ins, by name -> the adapter op they replace."""
    if plan is None or graph is None or not any(d.op_type in _MARKERS for d in plan.ops.values()):
        return {}  # no stand-in can be there: the per-op look-up below is not paid for every run's plan
    found = {}
    for name in plan.ops:
        try:
            value = graph.get_operation_by_name(name).get_attr(STAND_IN_ATTR)
        except (KeyError, ValueError):  # not in this graph (a function's op), or not stamped
            continue
        found[name] = value.decode("utf-8") if isinstance(value, bytes) else str(value)
    return found


def stand_in_note(found: dict[str, str]) -> str | None:
    """The report's note on the stand-ins of :func:`stand_ins`, or None when there are none."""
    if not found:
        return None
    kinds = sorted(set(found.values()))
    device = ", ".join(f"{kind}'s {DEVICE_OPS.get(kind, 'own op')}" for kind in kinds)
    names = sorted(found, key=lambda name: name.rsplit("/", 1)[-1].startswith(("Const", "Shape")))  # costly first
    listed = ", ".join(names[:3]) + (f" +{len(names) - 3} more" if len(names) > 3 else "")
    return (
        f"{len(names)} ops are the emulator's stand-ins for {', '.join(kinds)} ({listed}): the device runs "
        f"{device} there. They are left out of the estimated costliest ops; the estimated NPU step counts "
        "them in that op's place"
    )
