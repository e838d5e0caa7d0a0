"""Which decisions of a plan rest on approximate data, so every report can say so per op.

Two parts of the bundled op tables are approximations because the real lists ship only inside a CANN
install (``npu_jupyter/_ops/library.py``): which op types the device declares, and which of those are
kept on the host in mixed computing (isGray). A decision resting on either, on an AI CPU engine
inferred for a declared type with no listed kernel, or on the assumed AI CPU dtypes, is marked
``approximate``; a library read from a real CANN install marks nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from npu_jupyter._ops.library import OpCaps, OpLibrary
    from npu_jupyter._plan.model import OpDecision


def approximate_reason(decision: OpDecision, caps: OpCaps | None, mix_compile_mode: bool) -> str:
    """Why this decision rests on approximate data ("" when it does not); the library is approximate."""
    if decision.engine == "HOST":
        if caps is None:
            return "op type not in the bundled approximation of npu_supported_ops.json"
        if mix_compile_mode and caps.gray_in_mix:
            return "kept on the host by the bundled approximation of the host-kept (isGray) list"
        return ""
    if caps is None:
        return ""
    if caps.kernel == "aicpu_inferred":
        return "AI CPU engine inferred: the public lists name no kernel for this declared type"
    if decision.engine == "AI_CPU" and decision.dtype_after in ("float16", "float32", "bfloat16"):
        return "AI CPU dtypes assumed (the public AI CPU lists carry no dtypes)"
    return ""


def mark_approximate(ops: dict[str, OpDecision], library: OpLibrary, mix_compile_mode: bool) -> int:
    """Set ``approximate`` on every decision resting on approximate data; returns how many."""
    if not getattr(library, "approximate", False):
        return 0
    count = 0
    # the reason depends on the op type, engine and decided dtype only: one answer per distinct triple
    seen: dict[tuple[str, str, str], bool] = {}
    for decision in ops.values():
        key = (decision.op_type, decision.engine, decision.dtype_after)
        flagged = seen.get(key)
        if flagged is None:
            caps = library.caps(decision.op_type)
            flagged = seen[key] = bool(approximate_reason(decision, caps, mix_compile_mode))
        decision.approximate = flagged
        count += flagged
    return count
