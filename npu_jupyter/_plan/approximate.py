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


class ApproximateMarks:
    """Which decisions of one plan rest on approximate data, answered once per (op type, engine, decided dtype).

    :func:`approximate_reason` reads those three only, and a training graph repeats a few dozen
    triples thousands of times. :func:`~npu_jupyter._plan.planner._decisions` looks each decision's
    triple up in ``known`` as it builds the decision, and asks :meth:`flagged` for a new triple only:
    a pass of its own over the finished decisions cost 1 ms of a cold plan of ResNet-50's training step.
    """

    def __init__(self, library: OpLibrary, mix_compile_mode: bool) -> None:
        self.library = library
        self.mix_compile_mode = mix_compile_mode
        self.known: dict[tuple[str, str, str], bool] = {}

    def flagged(self, decision: OpDecision) -> bool:
        """Whether ``decision`` rests on approximate data (its op type, engine and ``dtype_after`` are set)."""
        key = (decision.op_type, decision.engine, decision.dtype_after)
        flag = self.known.get(key)
        if flag is None:
            caps = self.library.caps(decision.op_type)
            flag = self.known[key] = bool(approximate_reason(decision, caps, self.mix_compile_mode))
        return flag


def approximate_marks(library: OpLibrary, mix_compile_mode: bool) -> ApproximateMarks | None:
    """The marks for decisions from ``library``; None for a library read from a real CANN install, which marks nothing."""
    if not getattr(library, "approximate", False):
        return None
    return ApproximateMarks(library, mix_compile_mode)
