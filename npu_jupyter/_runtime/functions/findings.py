"""What a call of a traced function put in its report: the first non-finite op, overflow, dump.

The observer nodes (:mod:`.npu_jupyter._runtime.functions.observe_nodes`) hand each body's stored values to Python while the call
runs; after the call this module turns them into the same report fields a session run fills
(``non_finite``, ``overflow_ops``, ``first_overflow``, ``dump_dir``, ``dump``),
so every view shows them as it shows a session's. Steps are the function's calls, counted from 0, as
the device counts the iterations of one compiled graph; each top-level function is its own dump graph
(``graph_<k>`` under ``dump_path``, in the order the functions were first dumped).

Op names: the ops of the called (top-level) function keep their names; ops of the functions it calls
are named ``<function>/<op>``, as the report's joined plan names them (:mod:`.npu_jupyter._runtime.functions.tree`).
Values the float32 program makes non-finite by design are no alarm (:mod:`.by_design`, :func:`by_design`).

The first non-finite op is searched in the top-level function's body in topological order; when it is
a call (or a loop, or a branch) whose body was observed going non-finite in the same call, the search
descends into that body. Drift against float32 (``reference=True``) is :mod:`.npu_jupyter._runtime.functions.reference`'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from npu_jupyter._runtime.functions.observe_nodes import FunctionObserver, Observation, Watched
from npu_jupyter._runtime.functions.reach import stayed_inside
from npu_jupyter._runtime.observe.by_design import Provenance, design_outputs
from npu_jupyter._runtime.observe.dump import writer as _writer
from npu_jupyter._runtime.observe.dump.format import DumpGraph, step_selected
from npu_jupyter._runtime.observe.dump.sink import DumpSink
from npu_jupyter._runtime.observe.observers import debug_covers, note_checked, note_overflow
from npu_jupyter._runtime.observe.run_notes import non_finite_cause
from npu_jupyter._runtime.report_records import NonFiniteFinding

if TYPE_CHECKING:
    from npu_jupyter._runtime.observe.run_settings import RunSettings
    from npu_jupyter._runtime.observe.step_record import StepRecord
    from npu_jupyter._runtime.report import RunReport


#: Ops that read a resource variable's stored values: an inf/NaN they output was there before they ran.
_RESOURCE_READS = frozenset({"ReadVariableOp", "ResourceGather", "ResourceGatherNd"})


class FunctionFindings:
    """The dump writer and per-function dump state of one emulation, and the per-call findings."""

    def __init__(self, settings: RunSettings, dump_budget: int | None = None, *, reference: bool = False) -> None:
        self.settings = settings
        self.reference = reference  # a float32 shadow runs beside each call (its drift says what float32 did)
        self.dump_budget = dump_budget
        self.dump = DumpSink(settings.dump_path, dump_budget, stats_only=settings.dump_data == "stats")
        self._graphs: dict[str, DumpGraph] = {}

    # ------------------------------------------------------------------ before a call

    def dump_now(self, report: RunReport, function: str, step: int) -> bool:
        """Whether this call is dumped: ``dump_step`` selects it and the budget still has room.

        The estimate is the function's last dumped call; a call that does not fit is skipped, named in
        the report and in ``graphs.json``, and ends dumping for the emulation, as for sessions.
        """
        settings = self.settings
        if not settings.enable_dump or not step_selected(settings.dump_steps, step):
            return False
        graph = self._graph(function, report)
        return self.dump.admit(report.warnings, graph, step, function, lambda: self.dump.last_bytes(graph) or 0, "call")

    # ------------------------------------------------------------------ after a call

    def after_call(self, report: RunReport, record: StepRecord, observers: dict[str, FunctionObserver]) -> None:
        """Fill ``report`` from one call's record: its observations and its non-finite outputs.

        Unlike a session run, whose fetches show the user what went non-finite, a Keras function may
        return its iterator's ``Optional``; so a non-finite tensor observed inside counts as well, unless
        the call's returned values and checked variable writes show it stayed inside (:mod:`.reach`).
        """
        function, step, dumped = record.name, record.index, record.dump_now
        observations, bad_outputs = list(record.observations), list(record.non_finite_outputs)
        main = report.function.plan_function if report.function is not None else function
        design = by_design(observations, observers)
        first = first_non_finite(function, observations, observers, design)
        # masked or discarded inside (a -1e9 attention mask), as a session's unfetched overflow: no finding
        inside = first is not None and not bad_outputs and stayed_inside(record.outputs, observations, observers)
        found = None if inside else first
        reached = _design_reaching(function, observations, observers, design) if first is None else None
        if (bad_outputs or found is not None or reached is not None) and report.non_finite is None:
            _note_non_finite(
                report,
                function,
                main,
                found or reached,
                step,
                bad_outputs,
                bool(observers),
                first is None,
                reference=self.reference,
            )
        elif design and not report.non_finite_by_design:  # seen, not reported: they reach nothing
            report.non_finite_by_design = sorted({op_name(fn, w.op, main) for fn, w in design})
        flagged: list[tuple[str, Watched]] = []
        if self.settings.enable_dump_debug:
            kept = [_without(obs, design) for obs in observations]
            flagged = self._overflow(report, main, observers, kept, step, first)
        if dumped:
            self._dump(report, function, main, observations, step, flagged, overflow_only=False)
        elif flagged:
            self._dump(report, function, main, observations, step, flagged, overflow_only=True)

    def count_check(self, report: RunReport, observers: dict[str, FunctionObserver]) -> None:
        """``enable_dump_debug``: count the call as checked when its observers check outputs the mode covers.

        An observer made before the option was on (the device reconfigured) checks nothing: not counted.
        """
        if self.settings.enable_dump_debug and observers:
            outputs = [
                (w.decided_dtype or w.dtype, observer.plan.ops[w.op])
                for observer in observers.values()
                if observer.checked
                for w in observer.flagged
                if w.op in observer.plan.ops
            ]
            soc = next(iter(observers.values())).plan.soc  # one emulation plans every function for one SoC
            note_checked(report, self.settings.dump_debug_mode, outputs, soc)

    def _overflow(
        self,
        report: RunReport,
        main: str,
        observers: dict[str, FunctionObserver],
        observations: list[Observation],
        step: int,
        first: tuple[str, Watched] | None,
    ) -> list[tuple[str, Watched]]:
        """``enable_dump_debug``: the ops ``dump_debug_mode`` covers whose outputs went inf/NaN."""
        flagged: list[tuple[str, Watched]] = []
        for obs in observations:
            observer = observers.get(obs.function)
            if observer is None:
                continue  # a body of another call tree (shared); its own report covers it
            plan = observer.plan
            flagged.extend(
                (obs.function, w)
                for w in obs.bad
                if w.op in plan.ops and debug_covers(self.settings.dump_debug_mode, plan.ops[w.op], plan.soc)
            )
        if not flagged:
            return flagged
        names = [op_name(fn, w.op, main) for fn, w in flagged]
        covered = first is not None and first in flagged
        note_overflow(
            report, step, names, op_name(first[0], first[1].op, main) if first is not None and covered else names[0]
        )
        return flagged

    def _dump(
        self,
        report: RunReport,
        function: str,
        main: str,
        observations: list[Observation],
        step: int,
        flagged: list[tuple[str, Watched]],
        overflow_only: bool,
    ) -> None:
        if self.dump.stopped:
            return
        entries = _entries(observations, main, {(fn, w) for fn, w in flagged}, overflow_only)
        if not entries:
            return  # nothing observed in this call: no empty step folder
        meta: dict[str, object] = {
            "dump_mode": "overflow" if overflow_only else self.settings.dump_mode,
            "overflow_ops": [op_name(fn, w.op, main) for fn, w in flagged],
            "first_overflow": report.first_overflow_by_step.get(step),
            "backend": "emulator",
            "function": function,
        }
        self.dump.write(
            report, self._graph(function), step, entries, meta, overflow_only=overflow_only, what=function, unit="call"
        )

    # ------------------------------------------------------------------ state

    def _graph(self, function: str, report: RunReport | None = None) -> DumpGraph:
        """Each top-level function is one dump graph, numbered in the order first dumped.

        A function whose plan trains (gradients, optimizer applies) is marked so: ``load_dump`` opens
        the train function's dump by default, not the evaluate function's that ran as many calls.
        """
        graph = self._graphs.get(function)
        if graph is None:
            from npu_jupyter._runtime.observe.initializers import is_training_plan

            plan = getattr(report, "plan", None)
            role = "training" if plan is not None and is_training_plan(plan) else ""
            graph = self._graphs[function] = DumpGraph(len(self._graphs), (function,), (), role)
        return graph


def op_name(function: str, op: str, main: str) -> str:
    """An op as the report names it: plain in the called function ``main``, else ``function/op``."""
    return op if function == main else f"{function}/{op}"


def first_non_finite(
    top: str,
    observations: list[Observation],
    observers: dict[str, FunctionObserver],
    design: set[tuple[str, Watched]] | None = None,
) -> tuple[str, Watched] | None:
    """(function, tensor) of the first output that went non-finite in this call, or None.

    Topological order in ``top``'s body; a call whose body went non-finite is searched inside.
    Without a finding in ``top`` (its observer did not see it), the first body that finished with one.
    Tensors in ``design`` (non-finite in the float32 program too, :func:`by_design`) are passed over.
    """
    skip = design or set()
    observations = [_without(obs, skip) for obs in observations]
    by_function: dict[str, list[Observation]] = {}
    for obs in observations:
        by_function.setdefault(obs.function, []).append(obs)

    def search(function: str, seen: frozenset[str]) -> tuple[str, Watched] | None:
        for obs in by_function.get(function, []):
            if not obs.bad:
                continue
            first = obs.bad[0]
            observer = observers.get(function)
            for callee in observer.callees.get(first.op, []) if observer is not None else []:
                if callee not in seen:
                    inner = search(callee, seen | {callee})
                    if inner is not None:
                        return inner
            return function, first
        return None

    found = search(top, frozenset({top}))
    if found is None:
        found = next(((obs.function, obs.bad[0]) for obs in observations if obs.bad), None)
    return found


_MAX_DEPTH = 8  # nesting of calls followed when a by-design value leaves a called function


def _without(obs: Observation, design: set[tuple[str, Watched]]) -> Observation:
    """The observation with its by-design non-finite tensors left out (the same object when none)."""
    bad = [w for w in obs.bad if (obs.function, w) not in design]
    if len(bad) == len(obs.bad):
        return obs
    return Observation(obs.function, bad, obs.values, obs.id)


def by_design(observations: list[Observation], observers: dict[str, FunctionObserver]) -> set[tuple[str, Watched]]:
    """The non-finite tensors of a call that the float32 program computes non-finite too, by design.

    Per body, the rule of :mod:`.by_design`; a call whose called bodies went non-finite by design only
    is by design as well.
    """
    design: set[tuple[str, Watched]] = set()
    for _ in range(_MAX_DEPTH):  # each pass sees one more level of calls whose bodies were by design only
        clean = _functions_by_design_only(observations, design)
        before = len(design)
        for obs in observations:
            observer = observers.get(obs.function)
            provenance = getattr(observer, "provenance", None)
            if observer is None or provenance is None:
                continue
            design |= {(obs.function, w) for w in _design_in(obs, provenance, observer.callees, clean)}
        if len(design) == before:
            break
    return design


def _functions_by_design_only(observations: list[Observation], design: set[tuple[str, Watched]]) -> set[str]:
    """Functions whose bodies went non-finite in this call, all of it by design."""
    bad: dict[str, bool] = {}
    for obs in observations:
        for w in obs.bad:
            bad[obs.function] = bad.get(obs.function, True) and (obs.function, w) in design
    return {function for function, only in bad.items() if only}


def _design_in(
    obs: Observation, provenance: Provenance, callees: dict[str, list[str]], clean: set[str]
) -> list[Watched]:
    """The by-design non-finite outputs of one body execution (topological order)."""
    calls = {w.op: any(callee in clean for callee in callees[w.op]) for w in obs.bad if w.op in callees}
    found = design_outputs([(w.op, w.slot) for w in obs.bad], provenance, calls)
    return [w for w in obs.bad if (w.op, w.slot) in found]


def _design_reaching(
    top: str, observations: list[Observation], observers: dict[str, FunctionObserver], design: set[tuple[str, Watched]]
) -> tuple[str, Watched] | None:
    """The first by-design non-finite tensor that reaches a result: a variable update, or ``top``'s return."""
    for obs in observations:
        provenance = getattr(observers.get(obs.function), "provenance", None)
        if provenance is None:
            continue
        results = provenance.sinks | (provenance.returns if obs.function == top else set())
        for w in obs.bad:
            if (obs.function, w) in design and (w.op, w.slot) in results:
                return obs.function, w
    return None


def _note_non_finite(
    report: RunReport,
    function: str,
    main: str,
    first: tuple[str, Watched] | None,
    step: int,
    bad_outputs: list[int],
    observed: bool,
    designed: bool = False,
    *,
    reference: bool = False,
) -> None:
    """A call returned or computed inf/NaN: name the first op, as a session report does (``report.non_finite``).

    Reported for the first such call only, as a session reports its first non-finite step. The warning
    names the call; the payload's reason does not, as every view shows it "at step <n>" already.
    """
    if bad_outputs:
        outputs = ", ".join(map(str, bad_outputs))
        said = f"returned non-finite values (inf/NaN) in output(s) {outputs} in the emulated run."
        head, lead = f"Call {step} of {function} {said}", f"The call {said}"
    else:  # Keras functions return an iterator's Optional; the values go non-finite inside
        said = "values inside the function became non-finite (inf/NaN) in the emulated run."
        head, lead = f"In call {step} of {function}, {said}", f"In this call, {said}"
    if first is None:
        message = head + (
            " No observed op inside the function went non-finite (unobserved: arguments and variable "
            "handles, and bodies of other call trees)."
            if observed
            else " The plan lowers no precision here, so the function was not observed: turn on "
            "enable_dump_debug to name the first op that went non-finite."
        )
        report.non_finite = NonFiniteFinding(
            step, None, "not located", lead + message[len(head) :], message, outputs=tuple(bad_outputs)
        )
    else:
        fn, w = first
        where = op_name(fn, w.op, main)
        in_function = "" if fn == main else f" in function {fn}"
        if designed:  # only values the float32 program makes non-finite too, and one reaches a result
            message = (
                f"{head} The non-finite values come from constants holding inf/NaN (by design, the float32 "
                f"program computes them too) and reach a result at {where} ({w.op_type}, output {w.slot}"
                f"{in_function}), which a variable update reads or the function returns: not a precision effect."
            )
        elif w.op_type in _RESOURCE_READS and not w.rounded:
            message = (
                f"{head} The first op whose output became non-finite (topological order) is {where} "
                f"({w.op_type}, output {w.slot}{in_function}): it reads a variable whose values were already "
                "inf/NaN, put there by a write (an update in an earlier call or in another function, such as a "
                "train step, or an assignment of an argument in this call; ops are checked as they compute, "
                "variable writes are not). A float32 shadow reads "
                "the same values (variable reads are sources): the report of the function that writes the "
                "variable names the op that went non-finite first."
            )
        else:
            message = (
                f"{head} The first op whose output became non-finite (topological order) is {where} "
                f"({w.op_type}, output {w.slot}{in_function}): {non_finite_cause(w.rounded, w.decided_dtype, w.op_type, _soc(report))}. "
                + (
                    "Its drift against the float32 shadow of the function is in the drift column and the "
                    "Largest drift line (report.drift)."
                    if reference
                    # A traced function gets its float32 shadow in a %%npu --reference cell only: after
                    # emulate_adapter() nothing takes reference=True (that is a TF1 session's run argument).
                    else "Whether float32 stays finite was not checked: run the code in a %%npu --reference cell "
                    "to compare each op with a float32 shadow of the function (report.drift)."
                )
            )
        report.non_finite = NonFiniteFinding(
            step,
            where,
            where,
            lead + message[len(head) :],
            message,
            outputs=tuple(bad_outputs),
            function=fn,
            first_tensor=f"{w.op}:{w.slot}",
            op_type=w.op_type,
            decided_dtype=w.decided_dtype,
            rounded=w.rounded,
            by_design=designed,
        )
    if message not in report.warnings:
        report.warnings.append(message)


def _soc(report: RunReport) -> str:
    """The SoC of the report's plan ("" without one): the device's overflow mode depends on it."""
    return report.plan.soc if report.plan is not None else ""


def _entries(
    observations: list[Observation], main: str, flagged: set[tuple[str, Watched]], overflow_only: bool
) -> list[_writer.DumpEntry]:
    """Dump entries of one call; a body that ran several times (a loop) numbers its iterations."""
    runs: dict[str, int] = {}
    for obs in observations:
        runs[obs.function] = runs.get(obs.function, 0) + 1
    seen: dict[str, int] = {}
    out: list[_writer.DumpEntry] = []
    for obs in observations:
        iteration = seen.get(obs.function, 0)
        seen[obs.function] = iteration + 1
        for w, value in obs.values.items():
            overflow = (obs.function, w) in flagged
            if overflow_only and not overflow:
                continue
            out.append(
                _writer.DumpEntry(
                    op_name(obs.function, w.op, main),
                    w.op_type,
                    w.kind,
                    w.slot,
                    value,
                    w.decided_dtype,
                    overflow=overflow,
                    iteration=iteration if runs[obs.function] > 1 else None,
                )
            )
    return out
