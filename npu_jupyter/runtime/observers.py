"""What the emulator does after a step: dump, overflow detection, drift, profile, non-finite findings.

Each observer reads the step's watched values (:mod:`.watch`) and writes into the step's
:class:`~npu_jupyter.runtime.report.RunReport`. The session owns the run; this module owns what is
made of it, and the state that outlives a step (the dump writer, the profile writer).
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from npu_jupyter.runtime import dump_writer as _writer
from npu_jupyter.runtime import profile as _profile
from npu_jupyter.runtime.by_design import Provenance, design_outputs
from npu_jupyter.runtime.dump_format import DumpGraph, step_selected
from npu_jupyter.runtime.rewrite import ROUND_MARKER
from npu_jupyter.units import DTYPE_BYTES, format_bytes

if TYPE_CHECKING:
    from npu_jupyter.plan.model import Plan
    from npu_jupyter.runtime.report import RunReport
    from npu_jupyter.runtime.run_settings import RunSettings
    from npu_jupyter.runtime.watch import Watch

#: Why a variable-initialisation run's dump holds statistics only (its manifest says so).
INITIALIZER_DUMP_NOTE = (
    "variable initialisation run: dumped as statistics only (no tensor files), so it spends none of the "
    "dump budget the training steps need; the first training step's dump holds the initial weights it reads"
)


class StepObservers:
    """The observers of one emulator session (dump and profile writers live as long as it does)."""

    def __init__(self, graph: Any, dump_budget: int | None) -> None:
        self.graph = graph
        self.dump_budget = dump_budget
        self.dump_writer: _writer.DumpWriter | None = None
        self.dump_stopped: str | None = None
        self.profile_writer: _profile.BackgroundWriter | None = None
        self.last_ref_ms: float | None = None
        self._step_bytes: dict[int, int] = {}  # graph id -> bytes of its last dumped step
        self._provenances: dict[int, tuple[Any, Provenance]] = {}  # id(plan) -> (plan, its by-design facts)

    def reset_dump(self) -> None:
        """The dump options changed: the next dump starts a new writer."""
        self.dump_writer = None

    def close(self) -> None:
        """Finish the profile writer's pending work and release it."""
        writer, self.profile_writer = self.profile_writer, None
        if writer is not None:
            writer.close()

    # ------------------------------------------------------------------ the budget, decided up front

    def dump_fits(
        self, report_warnings: list[str], settings: Any, watch: list[Any], graph: DumpGraph, step: int
    ) -> bool:
        """Whether this step's dump fits the budget, decided before the step runs.

        The estimate is the graph's last dumped step, else the static shapes of the watched tensors
        (unknown dimensions count as 1, so the estimate is a floor). A step that does not fit is
        skipped, named in the report, recorded in ``graphs.json``, and ends dumping for the session.
        """
        writer = self._writer(settings)
        if self.dump_stopped:
            reason = f"step {step} of graph {graph.id} not dumped: dumping stopped earlier ({self.dump_stopped})"
            writer.record_skipped(graph, step, reason)
            report_warnings.append(reason)
            return False
        if settings.dump_data == "stats" or graph.role == "initializer":  # statistics only: no bytes
            return True
        estimate = self._step_bytes.get(graph.id)
        if estimate is None:
            estimate = sum(_static_bytes(self.graph, w) for w in watch)
        if writer.written_bytes + estimate <= writer.budget_bytes:
            return True
        reason = (
            f"dump budget exceeded: step {step} of graph {graph.id} needs about {format_bytes(estimate)}, "
            f"{format_bytes(writer.written_bytes)} already written of {format_bytes(writer.budget_bytes)} "
            f"(dump_path {writer.root}); step {step} and later steps are not dumped, earlier steps are "
            f"complete. Narrow dump_step, dump_mode or dump_layer, or raise the budget with "
            f"{_writer.BUDGET_ENV}=<size>."
        )
        self.dump_stopped = reason
        writer.record_skipped(graph, step, reason)
        report_warnings.append(reason)
        warnings.warn(reason, RuntimeWarning, stacklevel=4)
        return False

    def _writer(self, settings: Any) -> _writer.DumpWriter:
        if self.dump_writer is None:
            self.dump_writer = _writer.DumpWriter(
                settings.dump_path, budget_bytes=self.dump_budget, stats_only=settings.dump_data == "stats"
            )
        return self.dump_writer

    # ------------------------------------------------------------------ after the step

    def after_step(
        self,
        report: Any,
        settings: Any,
        plan: Any,
        watch: list[Any],
        values: dict[Any, Any],
        ref_values: Any,
        dump_now: bool,
        meta: Any,
        graph_step: int,
        graph: DumpGraph,
    ) -> None:
        """Dump, overflow checks and profiles all go by the graph's own step (one numbering per report)."""
        overflow_now: list[str] = []
        if settings.enable_dump_debug:
            overflow_now = self._check_overflow(report, settings, plan, watch, values, graph_step, graph)
        if dump_now:
            entries = [
                entry
                for w in watch
                if (settings.dump_mode in ("all", w.kind)) and (not settings.dump_layer or w.op in settings.dump_layer)
                for entry in _entries(plan, w, values.get(w.key, ()), w.op in overflow_now)
            ]
            self._write_dump(report, settings, graph_step, entries, overflow_now, graph=graph)
        if ref_values is not None:
            self._record_drift(report, watch, values, ref_values)
        if settings.profiling and meta is not None:  # the emulator passes no trace for steps not profiled
            self._record_profile(report, settings, plan, meta, graph_step, graph)
        missed = [w.op for w in watch if w.mode != "fetch" and not values.get(w.key)]
        if missed:
            report.extra["not_live"] = sorted(set(missed))  # dead branches / loops that did not iterate

    def _check_overflow(
        self,
        report: RunReport,
        settings: RunSettings,
        plan: Plan,
        watch: list[Watch],
        values: dict[tuple[Any, ...], list[Any]],
        step: int,
        graph: DumpGraph | None,
    ) -> list[str]:
        """Flag ops whose outputs hold inf/NaN in their decided precision (any iteration); dump them.

        Values the float32 program makes non-finite by design (a NaN constant a ``Select`` masks, a
        ``-inf`` mask) are no overflow (:mod:`.by_design`).
        """
        bad: list[tuple[str, int]] = []
        for w in watch:
            if w.kind != "output" or not w.is_float or (w.op, w.slot) in bad:
                continue
            if any(np.asarray(v).size and not np.isfinite(np.asarray(v)).all() for v in values.get(w.key, ())):
                bad.append((w.op, w.slot))
        design = design_outputs(bad, self._provenance(plan)) if bad else set()
        flagged: list[str] = []
        for op, slot in bad:
            if (op, slot) in design or op in flagged or not _debug_covers(settings.dump_debug_mode, plan.ops[op]):
                continue
            flagged.append(op)
        if not flagged:
            return flagged
        for name in flagged:
            if name not in report.overflow_ops:
                report.overflow_ops.append(name)
        report.extra.setdefault("first_overflow_by_step", {})[step] = flagged[0]
        report.first_overflow = flagged[0]
        if not settings.enable_dump or not step_selected(settings.dump_steps, step):
            entries = [
                e
                for w in watch
                if w.kind == "output" and w.op in flagged
                for e in _entries(plan, w, values.get(w.key, ()), True)
            ]
            self._write_dump(report, settings, step, entries, flagged, overflow_only=True, graph=graph)
        return flagged

    def _provenance(self, plan: Plan) -> Provenance:
        """The by-design facts of this session's graph under ``plan`` (read once per plan)."""
        from npu_jupyter.runtime.rewrite import roundings

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
        entries: list[Any],
        overflow_now: list[str],
        overflow_only: bool = False,
        graph: DumpGraph | None = None,
    ) -> None:
        if self.dump_stopped:
            return
        writer = self._writer(settings)
        meta = {
            "dump_mode": "overflow" if overflow_only else settings.dump_mode,
            "overflow_ops": list(overflow_now),
            "first_overflow": report.extra.get("first_overflow_by_step", {}).get(step),
            "backend": "emulator",
        }
        initializer = graph is not None and graph.role == "initializer"
        if initializer:  # its values are the initial weights the first training step reads: the budget is theirs
            meta["dump_data"] = "stats"
            meta["note"] = INITIALIZER_DUMP_NOTE
        try:
            before = writer.written_bytes
            folder = writer.write_step(step, entries, meta, graph=graph, stats_only=True if initializer else None)
        except _writer.DumpBudgetExceeded as exc:
            self.dump_stopped = str(exc)
            writer.record_skipped(graph or DumpGraph(), step, str(exc))
            report.warnings.append(str(exc))
            warnings.warn(str(exc), RuntimeWarning, stacklevel=4)
            return
        if not overflow_only:
            self._step_bytes[(graph or DumpGraph()).id] = writer.written_bytes - before
        report.dump_dir = writer.root  # the dump_path the user set; load_dump(dump_dir) reads it
        report.extra["dump_graph_dir"] = str(Path(folder).parent)  # dump_path for graph 0, graph_<k> after
        report.extra.setdefault("dumped_steps", []).append(step)

    def _record_drift(
        self,
        report: RunReport,
        watch: list[Watch],
        values: dict[tuple[Any, ...], list[Any]],
        ref_values: dict[tuple[Any, ...], list[Any]],
    ) -> None:
        """Per op, the worst drift of any output (and any loop iteration) against the float32 reference."""
        from npu_jupyter.runtime.compare import metrics

        drift: dict[str, dict[str, float]] = {}
        for w in watch:
            if w.kind != "output" or not w.is_float:
                continue
            for got, ref in zip(values.get(w.key, ()), ref_values.get(w.key, ())):
                if np.shape(got) != np.shape(ref):
                    continue
                m = metrics(got, ref)
                row = {
                    "max_abs": m["max_abs"],
                    "max_rel": m["max_rel"],
                    "cos": m["cosine"],
                    "rmse": m["rmse"],
                    "accumulated_rel": m["accumulated_rel"],
                }
                old = drift.get(w.op)
                if old is None or not (row["max_abs"] <= old["max_abs"]):
                    drift[w.op] = row
        report.drift = drift
        report.reference_wall_ms = self.last_ref_ms

    def _record_profile(
        self, report: RunReport, settings: RunSettings, plan: Plan, meta: Any, step: int, graph: DumpGraph
    ) -> None:
        """Profile files named by the graph's own step; a graph after the first writes under ``graph_<k>``
        (as its dump does), so two graphs of one session never overwrite each other's ``trace_step_0``.
        """
        options = settings.profile_options()
        prof = _profile.collect(meta.step_stats, self.graph, plan, step, marker=ROUND_MARKER)
        out_dir = str(graph.folder(str(options.get("output") or "./")))
        if self.profile_writer is None:
            self.profile_writer = _profile.BackgroundWriter()
        self.profile_writer.submit(prof, self.graph, options, out_dir)
        add_profile(report, prof)


def add_profile(report: RunReport, prof: _profile.StepProfile) -> None:
    """Put one profiled step in ``report``: its files, and per-op CPU times averaged over profiled steps.

    Step 0 of a graph or function is its warm-up (TensorFlow builds the executor, instantiates a traced
    function, allocates): one MatMul takes 20 ms there and 40 µs after. Its times are kept apart
    (``extra["warmup_op_times_us"]``) and enter the per-op times only while no later step was profiled;
    the label of the per-op times says which steps they are the mean of.
    """
    report.trace_file = prof.trace_file
    report.op_summary_csv = prof.op_summary_csv
    report.extra["emulator_cast_us"] = prof.cast_us
    labels = report.extra.setdefault("labels", {})
    report.extra["profiled_steps"] = report.extra.get("profiled_steps", 0) + 1
    if prof.step == 0:
        report.extra["warmup_op_times_us"] = prof.op_times_us()
        if not report.extra.get("_timed_steps"):
            report.op_times_us = dict(report.extra["warmup_op_times_us"])
            labels["us"] = f"step 0 only, TensorFlow's warm-up included; {_profile.CPU_TIME}"
        return
    sums = report.extra.setdefault("_op_time_sums", {})
    for name, us in prof.op_times_us().items():
        sums[name] = sums.get(name, 0.0) + us
    runs = report.extra["_timed_steps"] = report.extra.get("_timed_steps", 0) + 1
    report.op_times_us = {name: total / runs for name, total in sums.items()}
    left_out = ", step 0 (warm-up) left out" if "warmup_op_times_us" in report.extra else ""
    labels["us"] = f"over {runs} profiled step{'s' if runs != 1 else ''}{left_out}; {_profile.CPU_TIME}"


def _entries(plan: Any, w: Any, values: Any, overflow: bool) -> list[_writer.DumpEntry]:
    """The dump entries of one watch: one per value, numbered by iteration inside a loop frame."""
    op_type = plan.ops[w.op].op_type
    if w.mode == "capture":
        return [
            _writer.DumpEntry(w.op, op_type, w.kind, w.slot, v, w.decided_dtype, overflow=overflow, iteration=i)
            for i, v in enumerate(values)
        ]
    return [_writer.DumpEntry(w.op, op_type, w.kind, w.slot, v, w.decided_dtype, overflow=overflow) for v in values]


def _debug_covers(mode: str, decision: Any) -> bool:
    """Which ops ``dump_debug_mode`` watches: AI Core ops, or all device ops.

    ``atomic_overflow`` is Atomic Add overflow "after AI Core computation" (the adapter's
    accuracy_comparison doc); which kernels accumulate with Atomic Add is not published per op type,
    so it watches every AI Core op, like ``aicore_overflow``.
    """
    if decision.engine == "HOST":
        return False  # host ops run on the CPU, outside the device's overflow detection
    if mode in ("aicore_overflow", "atomic_overflow"):
        return cast("bool", decision.engine == "AI_CORE")
    return True


def _static_bytes(graph: Any, w: Any) -> int:
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


def strip_variant_names(meta: Any, prefix: str) -> None:
    """Name a variant's nodes in ``step_stats`` by the user's op, so profiles read the same either way."""
    if not prefix or meta is None:
        return
    for dev in meta.step_stats.dev_stats:
        for ns in dev.node_stats:
            if ns.node_name.startswith(prefix):
                ns.node_name = ns.node_name[len(prefix) :]
