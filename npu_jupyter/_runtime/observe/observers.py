"""What the emulator does after a step: dump, overflow detection, drift, profile.

Each observer reads the step's :class:`~npu_jupyter._runtime.observe.step_record.StepRecord` (its watched
values, :mod:`.watch`) and writes into the step's :class:`~npu_jupyter._runtime.report.RunReport`. The
session owns the run; this module owns what is made of it, and the state that outlives a step (the
dump sink, the profile writer). The parts a traced function's calls share with session steps live
here too: :func:`note_overflow`, :func:`note_checked`, :func:`debug_covers`, :class:`ProfileSink` and :func:`add_profile`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np

from npu_jupyter._runtime.observe import profile as _profile
from npu_jupyter._runtime.observe.by_design import Provenance, design_outputs
from npu_jupyter._runtime.observe.dump import writer as _writer
from npu_jupyter._runtime.observe.dump.format import DumpGraph, step_selected
from npu_jupyter._runtime.observe.dump.sink import DumpSink
from npu_jupyter._runtime.observe.step_record import StepRecord, StepValues, has_inf_nan
from npu_jupyter._runtime.report_records import OverflowCheck
from npu_jupyter._runtime.value_ops import FLOW_VALUES, LOOP_EXITS
from npu_jupyter._units import DTYPE_BYTES

if TYPE_CHECKING:
    from npu_jupyter._plan.model import OpDecision, Plan
    from npu_jupyter._runtime.observe.run_settings import RunSettings
    from npu_jupyter._runtime.report import RunReport
    from npu_jupyter._runtime.session.watch import Watch
    from npu_jupyter._tf_types import Graph, RunMetadata

#: Why a variable-initialisation run's dump holds statistics only (its manifest says so).
INITIALIZER_DUMP_NOTE = (
    "variable initialisation run: dumped as statistics only (no tensor files), so it spends none of the "
    "dump budget the training steps need; the first training step's dump holds the initial weights it reads"
)


class StepObservers:
    """The observers of one emulator session (dump and profile writers live as long as it does)."""

    def __init__(self, graph: Graph, dump_budget: int | None) -> None:
        self.graph = graph
        self.dump = DumpSink(None, dump_budget, stats_only=False)
        self.profiles = ProfileSink()
        self._provenances: dict[int, tuple[Plan, Provenance]] = {}  # id(plan) -> (plan, its by-design facts)

    def reset_dump(self) -> None:
        """The dump options changed: the next dump starts a new writer."""
        self.dump.reset()

    def close(self) -> None:
        """Finish the profile writer's pending work and release it."""
        self.profiles.close()

    # ------------------------------------------------------------------ the budget, decided up front

    def dump_fits(
        self, report_warnings: list[str], settings: RunSettings, watch: list[Watch], graph: DumpGraph, step: int
    ) -> bool:
        """Whether this step's dump fits the budget, decided before the step runs.

        The estimate is the graph's last dumped step, else the static shapes of the watched tensors
        (unknown dimensions count as 1, so the estimate is a floor). A step that does not fit is
        skipped, named in the report, recorded in ``graphs.json``, and ends dumping for the session.
        """
        sink = self._sink(settings)

        def estimate() -> int:
            last = sink.last_bytes(graph)
            return last if last is not None else sum(_static_bytes(self.graph, w) for w in watch)

        return sink.admit(report_warnings, graph, step, f"graph {graph.id}", estimate)

    def _sink(self, settings: RunSettings) -> DumpSink:
        """The session's dump sink under the current dump options."""
        self.dump.use(settings.dump_path, stats_only=settings.dump_data == "stats")
        return self.dump

    # ------------------------------------------------------------------ after the step

    def after_step(self, report: RunReport, settings: RunSettings, record: StepRecord) -> None:
        """Dump, overflow checks, drift and profiles of one step, all by the graph's own step number."""
        watched = record.watched or StepValues()
        plan, graph = record.plan, record.graph or DumpGraph()
        overflow_now: list[str] = []
        if settings.enable_dump_debug and plan is not None:
            overflow_now = self._check_overflow(report, settings, record, plan, graph)
            covered = [w for w in watched.watch if w.kind == "output" and w.is_float and w.op in plan.ops]
            outputs = [(w.decided_dtype, plan.ops[w.op]) for w in covered]
            note_checked(report, settings.dump_debug_mode, outputs, plan.soc)
        if record.dump_now and plan is not None:
            entries = [
                entry
                for w in watched.watch
                if (settings.dump_mode in ("all", w.kind)) and (not settings.dump_layer or w.op in settings.dump_layer)
                for entry in _entries(plan, w, watched.values.get(w.key, ()), w.op in overflow_now)
            ]
            self._write_dump(report, settings, record.index, entries, overflow_now, graph=graph)
        if watched.reference is not None:
            _record_drift(report, watched, record.index)
        if record.profile is not None:
            options = settings.profile_options()
            out_dir = str(graph.folder(str(options.get("output") or "./")))  # graph_<k> after the first graph
            self.profiles.add(report, record.profile, options, out_dir, graph=self.graph)
        missed = [w.op for w in watched.watch if w.mode != "fetch" and not watched.values.get(w.key)]
        if missed:
            report.not_live = sorted(set(missed))  # dead branches / loops that did not iterate

    def _check_overflow(
        self, report: RunReport, settings: RunSettings, record: StepRecord, plan: Plan, graph: DumpGraph
    ) -> list[str]:
        """Flag ops whose outputs hold inf/NaN in their decided precision (any iteration); dump them.

        Values the float32 program makes non-finite by design (a NaN constant a ``Select`` masks, a
        ``-inf`` mask) are no overflow (:mod:`.by_design`).
        """
        watched = record.watched or StepValues()
        bad: list[tuple[str, int]] = []
        when: dict[str, tuple[tuple[str, ...], int]] = {}  # op -> (loop frames, first iteration holding inf/NaN)
        for w in watched.watch:
            if w.kind != "output" or not w.is_float or (w.op, w.slot) in bad:
                continue
            iteration = next(
                (k for k, v in enumerate(watched.values.get(w.key, ())) if has_inf_nan(np.asarray(v))), None
            )
            if iteration is not None:
                bad.append((w.op, w.slot))
                if w.op not in when or iteration < when[w.op][1]:
                    when[w.op] = (w.frame, iteration)
        design = design_outputs(bad, self._provenance(plan)) if bad else set()
        flagged: list[str] = []
        for op, slot in bad:
            if (
                (op, slot) in design
                or op in flagged
                or not debug_covers(settings.dump_debug_mode, plan.ops[op], plan.soc)
            ):
                continue
            flagged.append(op)
        if not flagged:
            return flagged
        note_overflow(report, record.index, flagged, first_in_execution(flagged, when, plan))
        if not settings.enable_dump or not step_selected(settings.dump_steps, record.index):
            entries = [
                e
                for w in watched.watch
                if w.kind == "output" and w.op in flagged
                for e in _entries(plan, w, watched.values.get(w.key, ()), True)
            ]
            self._write_dump(report, settings, record.index, entries, flagged, overflow_only=True, graph=graph)
        return flagged

    def _provenance(self, plan: Plan) -> Provenance:
        """The by-design facts of this session's graph under ``plan`` (read once per plan)."""
        from npu_jupyter._runtime.rewrite import roundings

        found = self._provenances.get(id(plan))
        if found is None or found[0] is not plan:
            keys = [(r.op, r.kind, r.slot) for r in roundings(plan, self.graph)]
            found = self._provenances[id(plan)] = (plan, Provenance(self.graph, plan, keys))
        return found[1]

    def _write_dump(
        self,
        report: RunReport,
        settings: RunSettings,
        step: int,
        entries: list[_writer.DumpEntry],
        overflow_now: list[str],
        overflow_only: bool = False,
        graph: DumpGraph | None = None,
    ) -> None:
        graph = graph or DumpGraph()
        meta: dict[str, object] = {
            "dump_mode": "overflow" if overflow_only else settings.dump_mode,
            "overflow_ops": list(overflow_now),
            "first_overflow": report.first_overflow_by_step.get(step),
            "backend": "emulator",
        }
        initializer = graph.role == "initializer"
        if initializer:  # its values are the initial weights the first training step reads: the budget is theirs
            meta["dump_data"] = "stats"
            meta["note"] = INITIALIZER_DUMP_NOTE
        sink = self._sink(settings)
        sink.write(
            report, graph, step, entries, meta, overflow_only=overflow_only, stats_only=True if initializer else None
        )


def _record_drift(report: RunReport, watched: StepValues, step: int) -> None:
    """Per op, the worst drift of any output, loop iteration and step against the float32 reference.

    Worst by :func:`~npu_jupyter._runtime.observe.compare.drift_rank` (relative RMSE, inf/NaN first);
    the row keeps the step it came from, so a report of many steps says where its figure was measured.
    A ref variable's read (``<var>/read``, ``Watch.aliases_state``) is not compared: the reference starts
    each step from the emulated session's variables, so the value it reads is the same on both sides by
    construction. (Before reads were copied ahead of the step's writes, ``observe_nodes._Builder.snapshot``,
    it was looked at after an assign on one side and before it on the other: Adam's ``beta1_power``
    inside NPULossScaleOptimizer's tf.cond read 0.9**(k+1) emulated against 0.9**k in float32, and
    subpixel_ID2093's report named ``cond/beta1_power/read`` (rel. RMSE 0.1) its largest drift.)
    """
    from npu_jupyter._runtime.observe.compare import metrics
    from npu_jupyter._runtime.observe.drift_ranking import overflowed

    reference = watched.reference or {}
    overflow = False  # an op went inf/NaN in this step where float32 stayed finite
    for w in watched.watch:
        if w.kind != "output" or not w.is_float or w.aliases_state:
            continue
        for got, ref in zip(watched.values.get(w.key, ()), reference.get(w.key, ())):
            if np.shape(got) != np.shape(ref):
                continue
            m = metrics(got, ref)
            overflow = overflow or overflowed(m)
            row = {
                "max_abs": m["max_abs"],
                "max_rel": m["max_rel"],
                "cos": m["cosine"],
                "rmse": m["rmse"],
                "accumulated_rel": m["accumulated_rel"],
                "rel_rmse": m["rel_rmse"],
                "ref_rms": m["ref_rms"],
                "size": m["size"],
                "step": step,
            }
            keep_worse(report.drift, w.op, row)
    report.overflow_steps += overflow
    if watched.reference_ms is not None:  # a mean per step, as the schema says, not the last step's
        report.reference_steps += 1
        previous = report.reference_wall_ms or 0.0
        report.reference_wall_ms = previous + (watched.reference_ms - previous) / report.reference_steps


def keep_worse(drift: dict[str, dict[str, float]], op: str, row: dict[str, float]) -> None:
    """Put ``row`` in ``drift[op]`` unless the row there drifted more (the earlier step wins a tie)."""
    from npu_jupyter._runtime.observe.compare import drift_rank

    old = drift.get(op)
    if old is None or drift_rank(row) > drift_rank(old):
        drift[op] = row


def first_in_execution(flagged: list[str], when: dict[str, tuple[tuple[str, ...], int]], plan: Plan) -> str:
    """The op of ``flagged`` (topological order) that went inf/NaN first as the step ran.

    Topological order is execution order outside loops, not inside one: a loop's ``Merge`` comes before
    its body's ``MatMul`` in the order but hands on, one iteration later, what the ``MatMul`` made, and
    the loop's ``Exit`` hands on its result. A ``tf.while_loop`` whose ``MatMul`` overflowed in its
    third iteration named ``while/Merge_1`` first. So when the topologically first op is in a loop
    frame (``when``: the frames and first inf/NaN value of each op), or is the ``Exit`` of one, the
    first is the op of that frame whose inf/NaN value came earliest, ties in topological order, and
    one that computes (not a :data:`~npu_jupyter._runtime.value_ops.FLOW_VALUES` op) when there is one.

    A value's position is its position among the op's live iterations, which is the iteration itself
    for the loop body's ops, not for one under a ``tf.cond`` in the body (dead in some iterations), nor
    for a ``Switch`` output. Values of different frames (a nested loop's and its parent's) are not compared.
    """
    outside = ((), 0)  # an op outside loops: no frame, its one value
    first = flagged[0]
    frame = when.get(first, outside)[0]
    decision = plan.ops.get(first)
    if not frame and decision is not None and decision.op_type in LOOP_EXITS and decision.inputs:
        frame = when.get(decision.inputs[0], outside)[0]  # the loop's Switch, when it went inf/NaN too
    if not frame:
        return first
    same = [op for op in flagged if when.get(op, outside)[0] == frame]
    computing = [op for op in same if op not in plan.ops or plan.ops[op].op_type not in FLOW_VALUES]
    return min(computing or same or [first], key=lambda op: when.get(op, outside)[1])  # a tie: the earliest listed


def note_overflow(report: RunReport, step: int, names: list[str], first: str) -> None:
    """Put the ops that overflowed in ``step`` in ``report``: every one once, and the first of the step.

    The report's first overflow is the earliest step's: a later step's first op (often one reading
    weights an earlier overflow already made NaN) must not replace it.
    """
    for name in names:
        if name not in report.overflow_ops:
            report.overflow_ops.append(name)
    if report.first_overflow is None:
        report.first_overflow = first
    report.first_overflow_by_step[step] = first


def note_checked(report: RunReport, mode: str, outputs: Sequence[tuple[str, OpDecision]], soc: str) -> None:
    """Count a step (call) the overflow check looked at: some output ``mode`` covers was checked.

    ``outputs`` are the checked float outputs as (stored dtype, the op's decision); a step with none
    the mode covers is not counted, so the report never says "no inf/NaN" of a check that saw nothing.
    """
    kernel_free = _kernel_free(soc)  # once per step: every checked output of a step is asked
    dtypes = [dtype for dtype, decision in outputs if _covers(mode, decision, kernel_free)]
    if dtypes:
        report.overflow_check = (report.overflow_check or OverflowCheck()).add(mode, dtypes)


class ProfileSink:
    """Profiled steps and calls of one session or emulation: files written in the background, per-op
    CPU times put in the report (:func:`add_profile`).
    """

    def __init__(self) -> None:
        self._writer: _profile.BackgroundWriter | None = None

    def add(
        self,
        report: RunReport,
        prof: _profile.StepProfile,
        options: dict[str, object],
        out_dir: str,
        *,
        graph: Graph | None = None,
        facts: _profile.GraphFacts | None = None,
    ) -> None:
        """Write ``prof``'s trace and op summary under ``out_dir`` (facts read from ``graph`` unless given)."""
        if self._writer is None:
            self._writer = _profile.BackgroundWriter()
        self._writer.submit(prof, graph, options, out_dir, facts=facts)
        add_profile(report, prof)

    def close(self) -> None:
        """Every submitted profile is on disk; the writer thread ends."""
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.close()


def add_profile(report: RunReport, prof: _profile.StepProfile) -> None:
    """Put one profiled step in ``report``: its files, and per-op CPU times averaged over profiled steps.

    Step 0 of a graph or function is its warm-up (TensorFlow builds the executor, instantiates a traced
    function, allocates): one MatMul takes 20 ms there and 40 µs after. Its times are kept apart
    (``report.profile``, :class:`~npu_jupyter._runtime.report_records.ProfileRecord`) and enter the
    per-op times only while no later step was profiled; the label of the per-op times says which steps
    they are the mean of.
    """
    report.trace_file = prof.trace_file
    report.op_summary_csv = prof.op_summary_csv
    report.profile = report.profile.added(prof.step, prof.op_times_us(), prof.cast_us)
    report.op_times_us = report.profile.op_times_us()
    report.labels["us"] = report.profile.label(_profile.CPU_TIME, "call" if report.function is not None else "step")


def _entries(plan: Plan, w: Watch, values: Sequence[np.ndarray], overflow: bool) -> list[_writer.DumpEntry]:
    """The dump entries of one watch: one per value, numbered by iteration inside a loop frame."""
    op_type = plan.ops[w.op].op_type
    if w.mode == "capture":
        return [
            _writer.DumpEntry(w.op, op_type, w.kind, w.slot, v, w.decided_dtype, overflow=overflow, iteration=i)
            for i, v in enumerate(values)
        ]
    return [_writer.DumpEntry(w.op, op_type, w.kind, w.slot, v, w.decided_dtype, overflow=overflow) for v in values]


def debug_covers(mode: str, decision: OpDecision, soc: str) -> bool:
    """Which ops ``dump_debug_mode`` watches on ``soc``: AI Core kernels, or every device kernel.

    ``atomic_overflow`` is Atomic Add overflow "after AI Core computation" (the adapter's
    accuracy_comparison doc); which kernels accumulate with Atomic Add is not published per op type,
    so it watches every AI Core op, like ``aicore_overflow``. An op GE executes itself, with no
    compute kernel (a variable read, a constant, ExpandDims and other shape-only ops), is never
    watched: CANN compiles the overflow check into each operator (ATC ``--status_check``) and reads
    the AI Core status register after its task, and such an op has neither. Its output holds inf/NaN
    only when its input did, and the op that made the value is the one flagged.
    """
    return _covers(mode, decision, _kernel_free(soc))


def _covers(mode: str, decision: OpDecision, kernel_free: Callable[[str], bool]) -> bool:
    """:func:`debug_covers` with the SoC's "executed by GE itself" test already looked up."""
    if decision.engine == "HOST":
        return False  # host ops run on the CPU, outside the device's overflow detection
    if kernel_free(decision.op_type):
        return False
    if mode in ("aicore_overflow", "atomic_overflow"):
        return decision.engine == "AI_CORE"
    return True


def _kernel_free(soc: str) -> Callable[[str], bool]:
    """Whether GE executes an op type itself on ``soc`` (the op tables' ``kernel`` "ge"): no compute kernel."""
    from npu_jupyter._plan.planner import library_for

    library = library_for(soc)

    def kernel_free(op_type: str) -> bool:
        caps = library.caps(op_type)
        return caps is not None and caps.kernel == "ge"

    return kernel_free


def _static_bytes(graph: Graph, w: Watch) -> int:
    """Bytes of a watched tensor from its static shape (unknown dimensions count as 1)."""
    op = graph.get_operation_by_name(w.op)
    tensor = op.outputs[w.slot] if w.kind == "output" else op.inputs[w.slot]
    try:
        dims = tensor.shape.as_list()
    except ValueError:
        dims = []
    count = 1
    for d in dims or []:
        count *= d or 1
    dtype = w.decided_dtype or tensor.dtype.base_dtype.name
    return count * DTYPE_BYTES.get(dtype, 4)


def strip_variant_names(meta: RunMetadata | None, prefix: str) -> None:
    """Name a variant's nodes in ``step_stats`` by the user's op, so profiles read the same either way."""
    if not prefix or meta is None:
        return
    for dev in meta.step_stats.dev_stats:
        for ns in dev.node_stats:
            if ns.node_name.startswith(prefix):
                ns.node_name = ns.node_name[len(prefix) :]
