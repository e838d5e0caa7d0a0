"""Findings an emulated run must put in its report without being asked.

* A plan that lowers precision but a run that rounds no tensor: the numbers are float32 numbers, so the
  report says which ops the plan lowers and why none of their tensors was rounded.
* A fetch that came back inf/NaN from a run whose plan lowers precision: the report names the first op
  (topological order) whose output became non-finite, from the all-finite flags the run computed
  (:mod:`.observe_nodes`), and whether that op's output was rounded to half precision. When that op
  reads a variable, the inf/NaN was already in the variable when the step began: an earlier step's
  update wrote it, and the finding names the ops that write the variable instead of blaming the read.
* A step that wrote inf/NaN into a variable, its fetches finite (float16 Adam's ``0/0`` on the embedding
  rows a batch did not touch): the same flags say so in that step, naming the variable, its write and
  the first op that went non-finite on the way to it. Values the float32 program makes non-finite too
  are no finding (:mod:`.by_design`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from npu_jupyter._ops.library import SATURATION_SOCS
from npu_jupyter._ops.variable_ops import VARIABLE_OPS
from npu_jupyter._plan.functional_flow import FUNCTIONAL_FLOW
from npu_jupyter._runtime.observe.by_design import design_outputs
from npu_jupyter._runtime.observe.fetch_map import leaves
from npu_jupyter._runtime.observe.step_record import is_non_finite
from npu_jupyter._runtime.report_records import NonFiniteFinding
from npu_jupyter._runtime.value_ops import LOOP_EXITS

if TYPE_CHECKING:
    from npu_jupyter._plan.model import Plan
    from npu_jupyter._runtime.observe.by_design import Provenance
    from npu_jupyter._runtime.report import RunReport
    from npu_jupyter._runtime.session.run_graph import RunGraph
    from npu_jupyter._tf_types import Graph

_HALF = frozenset({"float16", "bfloat16"})
# Ops that read a variable's value without writing it (Identity is a ref variable's ``v/read``).
_VARIABLE_READS = frozenset({"ReadVariableOp", "Identity", "ResourceGather"})
_NOT_WRITES = _VARIABLE_READS | {"VarIsInitializedOp", "IsVariableInitialized", "VariableShape", "DestroyResourceOp"}


def lowered_ops(plan: Plan) -> list[str]:
    """Ops the plan computes in half precision where the graph says float32."""
    return [
        name
        for name, d in plan.ops.items()
        if (d.dtype_after in _HALF and d.dtype_before == "float32")
        or any(x in _HALF for x in (d.output_dtypes or []) + (d.input_dtypes or []))
    ]


def lowered_but_unrounded(plan: Plan, emulation: dict[str, str], graph: Graph) -> str | None:
    """The note for a run that rounds nothing although its plan lowers ops; None when consistent."""
    if emulation:
        return None
    lowered = lowered_ops(plan)
    if not lowered:
        return None
    why = _why_unrounded(lowered, graph)
    shown = ", ".join(lowered[:5]) + (f" and {len(lowered) - 5} more" if len(lowered) > 5 else "")
    return (
        f"The plan lowers {len(lowered)} op(s) to half precision ({shown}) but this emulated run rounds no "
        f"tensor: {why}. The numbers of this run are float32 numbers (measured on this CPU)."
    )


def soft_placement_note(plan: Plan, graph: Graph) -> str | None:
    """The note for ops pinned to a GPU: they run because the adapter turns on soft placement."""
    pinned = []
    for name in plan.ops:
        try:
            device = graph.get_operation_by_name(name).device
        except (KeyError, ValueError):
            continue
        if "GPU" in device.upper():
            pinned.append(name)
    if not pinned:
        return None
    shown = ", ".join(pinned[:3]) + (f" and {len(pinned) - 3} more" if len(pinned) > 3 else "")
    return (
        f"{len(pinned)} op(s) are pinned to a GPU ({shown}): they run because the adapter sets "
        f"allow_soft_placement=True on every session it configures, as the emulator does; on an Ascend "
        f"server the plan's placement applies."
    )


def _why_unrounded(lowered: list[str], graph: Graph) -> str:
    """The reason none of ``lowered``'s tensors was rounded, read from the graph."""
    reasons = set()
    for name in lowered:
        try:
            op = graph.get_operation_by_name(name)
        except (KeyError, ValueError):
            reasons.add("the lowered ops are not in the session's graph")
            continue
        tensors = list(op.inputs) + list(op.outputs)
        if not any(t.dtype.base_dtype.name in ("float32", "float64") for t in tensors):
            reasons.add("their tensors are not float32 (nothing to round)")
        elif all(t.dtype._is_ref_dtype or t.dtype.base_dtype.name not in ("float32", "float64") for t in tensors):
            reasons.add("their float tensors are variable references (state stays float32)")
        else:
            reasons.add(
                "their float32 tensors are slots the device keeps in float32 (statistics, variables, "
                "casts) or the ops are not executed by this run"
            )
    return "; ".join(sorted(reasons))


def non_finite_finding(
    plan: Plan, run: RunGraph, flags: object, names: list[str], results: object, step: int
) -> NonFiniteFinding | None:
    """What went inf/NaN and where first, when a fetched value is non-finite; None otherwise.

    ``flags`` are the run's all-finite flags, one per tensor of ``run.flags`` (topological order).
    """
    bad_fetches = [n for n, v in zip(names, leaves(results)) if is_non_finite(v)]
    if not bad_fetches or run.flags is None:
        return None
    tensors = run.flags[1]
    first = next((tensors[i] for i, ok in enumerate(np.asarray(flags).reshape(-1)) if not ok), None)
    if first is None:
        detail = (
            f"fetch {', '.join(bad_fetches)} is non-finite (inf/NaN) in the emulated run, "
            f"but every float output checked outside loops stayed finite: the first non-finite value "
            f"arises inside a while loop (turn on enable_dump_debug to capture loop iterations)."
        )
        return _finding(step, None, "inside a while loop", detail, fetches=tuple(bad_fetches))
    op, slot = _split(first)
    op_type, dtype, rounded = _first_op(plan, run, op, slot)
    loop = loop_of_result(op, op_type)
    if loop is not None:
        detail = (
            f"fetch {', '.join(bad_fetches)} is non-finite (inf/NaN) in the emulated run. The first non-finite "
            f"value checked (topological order) is {first}, {inside_loop(loop, op_type)}."
        )
        return _loop_finding(step, loop, detail, first, op_type, fetches=tuple(bad_fetches))
    variable = _variable_read(plan, op)
    writers = _writers(plan, variable) if variable is not None else []
    if variable is not None:
        cause = (
            f"it reads the variable {variable}, which already held inf/NaN when step {step} began: an "
            f"update in an earlier run wrote them ({', '.join(writers[:4]) or 'no writing op in this plan'}"
            f"{f' and {len(writers) - 4} more' if len(writers) > 4 else ''}). The report of that run names "
            f"the op that went non-finite first on the way to the write when the run was checked (its plan "
            f"lowers a precision; a value written from Python or a checkpoint is not checked): "
            f"enable_dump_debug names the ops that went inf/NaN in every run, the one that wrote them included"
        )
    else:
        cause = non_finite_cause(rounded, dtype, op_type, plan.soc)
    detail = (
        f"fetch {', '.join(bad_fetches)} is non-finite (inf/NaN) in the emulated run. The "
        f"first op whose output became non-finite (topological order) is {op} ({op_type}, output "
        f"{first}): {cause}. Whether float32 stays finite was not checked: run with reference=True to "
        f"compare."
    )
    return _finding(
        step,
        op,
        op,
        detail,
        fetches=tuple(bad_fetches),
        first_tensor=first,
        op_type=op_type,
        decided_dtype=dtype,
        rounded=rounded,
        variable=variable,
        variable_writers=tuple(writers),
    )


# Ops whose output is a while loop's result: the Exit of a TF 1.x loop frame, TF 2's functional While.
_V2_LOOPS = frozenset(op for op, call in FUNCTIONAL_FLOW.items() if call == "tf.while_loop")


def loop_of_result(op: str, op_type: str) -> str | None:
    """The while loop whose result ``op`` hands on (its name), None for any other op.

    Such an op computes nothing: a non-finite value it outputs arose in the loop, whose iterations
    the always-on flags do not look at (:func:`~.finite_flag_tensors`: loop frames are left out, and
    a functional loop's body is a function). Blaming it, with the cause of an op that computes, was
    a wrong finding: a ``tf.while_loop`` overflowing in float16 named ``while/Exit_1``, "it computes
    in float32 here". A TF 1.x loop's ops are named under the loop's name (``rnn/while/Exit_2``).
    """
    if op_type in LOOP_EXITS:
        return op.rpartition("/")[0] or op
    if op_type in _V2_LOOPS:
        return op
    return None


def inside_loop(loop: str, op_type: str) -> str:
    """Where a loop's non-finite result arose, and how to have its op named (see :func:`loop_of_result`)."""
    if op_type in _V2_LOOPS:
        return (
            f"the result of the while loop {loop} (a {op_type} op: TensorFlow 2's control flow, whose body is "
            f"a function): the value went non-finite inside that body, whose ops the emulation of a session "
            f"neither rounds nor checks. TF 1.15, the TF1 adapter's TensorFlow, builds the loop op by op: call "
            f"tf.compat.v1.disable_v2_behavior() (or disable_control_flow_v2()) before building the graph to "
            f"plan, round and check them"
        )
    return (
        f"the result of the while loop {loop} ({op_type}): the value went non-finite inside that loop, whose "
        f"iterations these always-on checks do not look at. enable_dump_debug checks every iteration: its "
        f"first overflow names the op that went non-finite first"
    )


def _loop_finding(step: int, loop: str, detail: str, tensor: str, op_type: str, **fields: Any) -> NonFiniteFinding:
    """A finding whose first checked non-finite value is ``loop``'s result: no op is named (see :func:`loop_of_result`)."""
    return _finding(step, None, f"inside the while loop {loop}", detail, first_tensor=tensor, op_type=op_type, **fields)


def _finding(step: int, first_op: str | None, where: str, detail: str, **fields: Any) -> NonFiniteFinding:
    """A session run's finding: its warning is the detail behind the step ("Step 3: fetch loss is ...")."""
    return NonFiniteFinding(step, first_op, where, detail, f"Step {step}: {detail}", **fields)


def _variable_read(plan: Plan, op: str) -> str | None:
    """The variable ``op`` reads directly (ReadVariableOp, a ref variable's Identity), else None."""
    decision = plan.ops.get(op)
    if decision is None or decision.op_type not in _VARIABLE_READS or not decision.inputs:
        return None
    source = plan.ops.get(decision.inputs[0])
    return source.name if source is not None and source.op_type in VARIABLE_OPS else None


def _writers(plan: Plan, variable: str) -> list[str]:
    """Ops that write ``variable`` (optimizer applies, assigns), its own initializer left out."""
    return [
        name
        for name, d in plan.ops.items()
        if d.inputs and d.inputs[0] == variable and d.op_type not in _NOT_WRITES and name != f"{variable}/Assign"
    ]


#: Ops that go inf/NaN when an input is 0 (x/0, 0/0, log(0), 1/sqrt(0)); DivNoNan and Xdivy answer 0 instead.
_ZERO_SENSITIVE = frozenset({"RealDiv", "Div", "Reciprocal", "Inv", "Rsqrt", "Log"})


def non_finite_cause(rounded: bool, dtype: str, op_type: str = "", soc: str = "") -> str:
    """Why an op's output went inf/NaN: the plan's half-precision storage, or the float32 computation.

    Overflow is the usual float16 cause, but not the only one: an op that divides (or takes a log or a
    reciprocal) also goes inf/NaN when a small input rounds to 0 in float16 (below 6e-8: the 1e-8
    epsilon of Adam's update, whose 0/0 a trial met in sparse Adam under force_fp16). Which of the two
    it was is not known from the flags, so both are named for such an op.

    The emulator overflows as IEEE arithmetic does, to inf, on every SoC. An AI Core in saturation mode
    (:data:`~npu_jupyter._ops.library.SATURATION_SOCS`, the Ascend 910) gives ±MAX instead, so for a
    value the plan stores in half precision (a device op's) on a plan for ``soc`` the cause says what
    the device would hold: a user reading "inf" would otherwise look for inf/NaN on the NPU, where the
    values are clamped and finite.
    """
    if rounded and dtype in _HALF:
        cause = (
            f"its output is stored in {dtype} by the plan; values beyond the {dtype} range "
            f"({'65504' if dtype == 'float16' else '3.4e38'}) become inf"
        )
        if dtype == "float16" and op_type in _ZERO_SENSITIVE:
            cause += (
                f", and an input below float16's smallest value (6e-8; a 1e-8 epsilon among them) rounds to 0, "
                f"which {op_type} turns into inf or NaN (x/0, 0/0, log(0))"
            )
        if soc in SATURATION_SOCS:
            largest = "65504" if dtype == "float16" else "MAX"
            cause += (
                f". That inf is the emulation's (IEEE arithmetic): an {soc} (saturation mode, its only one) "
                f"clamps an overflow to ±{largest} instead and records it in its float-status register"
            )
        return cause
    return "it computes in float32 here, so an input or the op itself (log(0), 0/0, ...) made it non-finite"


def written_non_finite(
    plan: Plan, run: RunGraph, flags: object, step: int, *, fetched: bool = True
) -> NonFiniteFinding | None:
    """The first variable write of the step that read an inf/NaN value no by-design rule excuses; None otherwise.

    The flags of the values variable writes read are always computed (:mod:`.observe_nodes`). The op
    named is the first (topological order) non-finite one among the written value's float ancestors.
    A write reading a dead value (the ``Switch`` output of a branch not taken) writes nothing, and a
    dead value's flag counts as finite: no finding. Values inside ``tf.cond``/loop bodies are unfetchable,
    so not flagged: writes there are not checked (silent, never a false finding).
    """
    provenance = run.provenance
    if run.flags is None or provenance is None:
        return None
    names = run.flags[1]
    bad = [
        _split(names[i]) for i in np.flatnonzero(~np.asarray(flags, bool).reshape(-1))
    ]  # per step: no loop in Python
    if not bad:
        return None
    design = design_outputs(bad, provenance)
    alarms = [key for key in bad if key not in design]
    alarmed = set(alarms)
    for writer, inputs in provenance.writes.items():
        read = [src for src in inputs if src in alarmed]
        if read and writer in run.copied:
            upstream = _upstream(provenance, {op for op, _ in read})
            first = next(key for key in alarms if key[0] in upstream)
            return _write_finding(plan, run, writer, first, step, fetched)
    return None


def _first_op(plan: Plan, run: RunGraph, op: str, slot: int) -> tuple[str, str, bool]:
    """(op type, decided dtype of output ``slot``, whether the emulation rounds it) of a finding's first op.

    "?" and "" where the plan has no decision for the op.
    """
    decision = plan.ops.get(op)
    if decision is None:
        return "?", "", op in run.emulation()
    dtype = decision.output_dtypes[slot] if slot < len(decision.output_dtypes) else decision.dtype_after
    return decision.op_type, dtype, op in run.emulation()


def _split(tensor: str) -> tuple[str, int]:
    """``"op:slot"`` as ``(op, slot)``, the by-design rule's key of a tensor."""
    op, _, slot = tensor.rpartition(":")
    return op, int(slot)


def _upstream(provenance: Provenance, ops: set[str]) -> set[str]:
    """``ops`` and every op whose float output reaches one of them."""
    seen, stack = set(ops), list(ops)
    while stack:
        for src, _ in provenance.float_inputs.get(stack.pop(), []):
            if src not in seen:
                seen.add(src)
                stack.append(src)
    return seen


def _write_finding(
    plan: Plan, run: RunGraph, writer: str, first: tuple[str, int], step: int, fetched: bool
) -> NonFiniteFinding:
    """The finding of a step whose ``writer`` wrote inf/NaN, ``first`` the first op that went non-finite.

    ``fetched``: the run fetched a tensor (a run of the train op alone fetches none, and is told so).
    """
    op, slot = first
    written = plan.ops[writer]
    target = written.inputs[0] if written.inputs else writer
    op_type, dtype, rounded = _first_op(plan, run, op, slot)
    wrote = (
        f"the run wrote non-finite values (inf/NaN) into the variable {target} (written by {writer}, "
        f"{written.op_type}); " + ("no fetched value is non-finite." if fetched else "the run fetched no value.")
    )
    after = (
        f"They stay in {target} until overwritten. Whether float32 stays finite was not checked: run with "
        f"reference=True to compare."
    )
    loop = loop_of_result(op, op_type)
    if loop is not None:
        detail = (
            f"{wrote} The first non-finite value checked (topological order) on the way to that write is "
            f"{op}:{slot}, {inside_loop(loop, op_type)}. {after}"
        )
        return _loop_finding(step, loop, detail, f"{op}:{slot}", op_type, written=target, writer=writer)
    variable = _variable_read(plan, op)
    cause = (
        f"it reads the variable {variable}, which already held inf/NaN when step {step} began"
        if variable is not None
        else non_finite_cause(rounded, dtype, op_type, plan.soc)
    )
    detail = (
        f"{wrote} The first op whose output became non-finite (topological order) on the way to that write "
        f"is {op} ({op_type}, output {op}:{slot}): {cause}. {after}"
    )
    return _finding(
        step,
        op,
        op,
        detail,
        first_tensor=f"{op}:{slot}",
        op_type=op_type,
        decided_dtype=dtype,
        rounded=rounded,
        variable=variable,
        written=target,
        writer=writer,
    )


def note_non_finite(
    report: RunReport, plan: Plan, run: RunGraph, flags: object, names: list[str], results: object, step: int
) -> None:
    """A fetch went inf/NaN, or a variable write read inf/NaN, in a run whose plan lowers precision: say so.

    The first finding of a report stays (``report.non_finite``); its sentence joins the warnings once.
    Later steps are not said again: each step's sentence names its step, so a trial's training run
    (din_tf_allenyzx under force_fp16) showed the same finding 29 times, one warning per step. A non-finite
    fetch comes first; else a write (:func:`written_non_finite`): that trial's step 0 wrote NaN into
    embedding rows and said nothing, its first finding (step 1) blamed the read of the embedding.
    """
    if report.non_finite is not None:
        return
    finding = non_finite_finding(plan, run, flags, names, results, step)
    if finding is None and not np.asarray(flags, bool).all():  # a write finding needs a false flag
        finding = written_non_finite(plan, run, flags, step, fetched=any(":" in name for name in names))
    if finding is None:
        return
    report.non_finite = finding
    report.warnings.append(finding.message)
