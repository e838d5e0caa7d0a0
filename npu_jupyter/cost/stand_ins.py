"""Ops the emulator runs in place of an adapter op the device would run: not estimated as the device's.

Two adapter features have no CPU counterpart, so the emulation builds TensorFlow ops in their place:

* ``npu_ops.dropout``: TensorFlow's own dropout (``RandomUniform``, ``GreaterEqual``, ``SelectV2``, a
  ``Mul`` or ``RealDiv``) where the adapter builds the fused DropOutGenMask/DropOutDoMask pair. The cost
  model estimates the ops in the graph, so those stand-ins (a ``RandomUniform`` on the AI CPU, 30 µs) led
  "Estimated costliest ops" as if the device ran them.
* ``NPULossScaleOptimizer``'s overflow check: an ``IsFinite`` and a reduction per gradient, which is the
  adapter's own check in INF/NaN mode (Ascend 910B's default), but on an Ascend 910, whose only mode is
  saturation, the adapter reads the device's float-status register instead. On an Ascend910 plan those
  AI CPU ``IsFinite`` ops (30 µs each) led "Estimated costliest ops" and made up a third of a small
  model's estimated step.

The emulation stamps each stand-in with :data:`STAND_IN_ATTR` (what it stands in for). The estimate
leaves them out of its per-op times, counts what the device runs in their place in the step, and the
report says so (:func:`stand_in_note`).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from npu_jupyter._ops.library import SATURATION_SOCS

if TYPE_CHECKING:  # pragma: no cover - typing only
    from npu_jupyter._plan.model import Plan
    from npu_jupyter._tf_types import Graph

#: Node attribute the emulation stamps on a stand-in op: the adapter feature it replaces ("npu_ops.dropout").
#: A leading underscore: TensorFlow's kernels and the adapter's passes ignore such attributes.
STAND_IN_ATTR = "_npu_jupyter_stand_in_for"
DROPOUT = "npu_ops.dropout"
OVERFLOW_CHECK = "NPULossScaleOptimizer's overflow check"


@dataclass(frozen=True)
class StandInKind:
    """What the device runs where the emulation put stand-ins of one kind, and on which SoCs."""

    device: str  # what the device runs there, as the report names it
    markers: frozenset[str]  # op types every group of this kind holds: a plan without one has none
    device_ops: tuple[str, ...] = ()  # estimated in the stand-ins' place; () estimates the stand-ins as they are
    group_end: str = ""  # name of the op that ends each group of stand-ins (one group: one set of device_ops)
    socs: frozenset[str] | None = None  # SoCs whose adapter runs ``device`` (None: all); elsewhere the ops are its own


KINDS = {
    DROPOUT: StandInKind("npu_ops.dropout's DropOutGenMask/DropOutDoMask", frozenset({"RandomUniform"})),
    # npu_loss_scale_optimizer.py: NpuGetFloatStatusV2 after the gradients, NpuClearFloatStatusV2, then
    # Equal(0, status) and ReduceAll; all four are AI Core ops in the op tables, each reading a few bytes.
    OVERFLOW_CHECK: StandInKind(
        "a read of its float-status register (NpuGetFloatStatusV2, NpuClearFloatStatusV2, Equal, ReduceAll)",
        frozenset({"IsFinite"}),
        device_ops=("NpuGetFloatStatusV2", "NpuClearFloatStatusV2", "Equal", "All"),
        group_end="overflow_status_reduce_all",  # the adapter's name for its ReduceAll, and the emulation's
        socs=SATURATION_SOCS,  # saturation mode only; Ascend910B defaults to INF/NaN mode
    ),
}


def stamped(kind: str) -> contextlib.AbstractContextManager[None]:
    """Stamp every op built in the block as the emulation's stand-in for ``kind`` (a key of :data:`KINDS`).

    The attribute goes on through the graph's attribute scope, as the adapter's own scopes stamp theirs
    (:mod:`npu_jupyter.scope`); TensorFlow's kernels and the adapter's passes ignore it.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown stand-in kind {kind!r}: known are {', '.join(sorted(KINDS))}")
    from npu_jupyter.scope import _attr, _attr_scope

    return _attr_scope({STAND_IN_ATTR: _attr(s=kind)})


def stand_ins(plan: Plan | None, graph: Graph | None, prefix: str = "") -> dict[str, str]:
    """The plan's ops the emulation stamped as stand-ins on its SoC, by name -> the feature they replace.

    ``prefix``: ``graph`` is a function the plan's ops of that prefix come from (a traced function's
    callee, "<function>/"); the names returned are ``graph``'s own.
    """
    if plan is None or graph is None:
        return {}
    kinds = {name for name, kind in KINDS.items() if kind.socs is None or plan.soc in kind.socs}
    present = {d.op_type for d in plan.ops.values()}
    if not any(KINDS[k].markers & present for k in kinds):
        return {}  # no stand-in can be there: the per-op look-up below is not paid for every run's plan
    found = {}
    for name in (op[len(prefix) :] for op in plan.ops if op.startswith(prefix)):
        try:
            value = graph.get_operation_by_name(name).get_attr(STAND_IN_ATTR)
        except (KeyError, ValueError):  # not in this graph (a function's op), or not stamped
            continue
        kind = value.decode("utf-8") if isinstance(value, bytes) else str(value)
        if kind in kinds:
            found[name] = kind
    return found


def replacement(found: dict[str, str]) -> tuple[set[str], list[str]]:
    """(stand-ins the device does not run, the ops it runs in their place: one entry per op).

    Stand-ins of a kind with no ``device_ops`` are estimated as they are, so they are in neither.
    Each group of the others (one ``NPULossScaleOptimizer``: one overflow check) adds its kind's ops.
    """
    skipped: set[str] = set()
    in_place: list[str] = []
    for name, kind in found.items():
        spec = KINDS[kind]
        if not spec.device_ops:
            continue
        skipped.add(name)
        if name.rsplit("/", 1)[-1].startswith(spec.group_end):
            in_place.extend(spec.device_ops)
    return skipped, in_place


def stand_in_note(found: dict[str, str]) -> str | None:
    """The report's note on the stand-ins of :func:`stand_ins`, or None when there are none."""
    if not found:
        return None
    sentences = []
    for kind in sorted(set(found.values())):
        names = sorted((n for n, k in found.items() if k == kind), key=_cheap_last)
        listed = ", ".join(names[:3]) + (f" +{len(names) - 3} more" if len(names) > 3 else "")
        spec = KINDS[kind]
        counted = (
            f"the estimated NPU step counts the device's {len(spec.device_ops)} ops per check in their place"
            if spec.device_ops
            else "the estimated NPU step counts them in that op's place"
        )
        sentences.append(
            f"{len(names)} ops are the emulator's stand-ins for {kind} ({listed}): the device runs "
            f"{spec.device} there. They are left out of the estimated costliest ops; {counted}"
        )
    return ". ".join(sentences)


def _cheap_last(name: str) -> bool:
    """Sort key naming the costly stand-ins first (constants and shapes last)."""
    return name.rsplit("/", 1)[-1].startswith(("Const", "Shape"))
