"""RunReport: what one emulated (or real) session run decided and measured, in typed records."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from npu_jupyter._plan.model import Plan
from npu_jupyter._renderers import render_text
from npu_jupyter._runtime.report_records import (
    DumpRecord,
    FunctionInfo,
    NonFiniteFinding,
    OverflowCheck,
    ProfileRecord,
    SessionRecord,
    Timing,
)

if TYPE_CHECKING:  # pragma: no cover - typing only; the cost model is imported when an estimate is read
    from npu_jupyter._tf_types import Graph
    from npu_jupyter.cost.attach import CostBlock, CostEstimate, PendingEstimate


@dataclass
class RunReport:
    """One ``session.run`` (or several runs of the same fetches, collapsed): the plan plus measurements.

    ``op_times_us`` (profiling), ``drift`` (float32 reference requested) and ``overflow_ops``
    (overflow detection) are empty when the run did not ask for them. Each further fact has one typed
    home (:mod:`.report_records`): ``timing``, ``non_finite``, ``dump``, ``profile``, ``session`` (a TF1
    session's run) or ``function`` (a traced function's calls), and ``estimate`` (the cost model's).
    """

    plan: Plan | None  # None: a traced function whose plan could not be made (its report still renders)
    backend: str = "emulator"
    fetches: list[str] = field(default_factory=list)
    steps: int = 1
    wall_ms: float = 0.0  # mean per step (per call), wall-clock ms on the backend's clock (report_records.CLOCKS)
    reference_wall_ms: float | None = None
    reference_steps: int = 0  # the steps whose float32 reference ran (reference_wall_ms is their mean)
    overflow_steps: int = 0  # of those, the steps where an op went inf/NaN and its float32 value stayed finite
    op_times_us: dict[str, float] = field(default_factory=dict)
    drift: dict[str, dict[str, float]] = field(default_factory=dict)  # op -> {max_abs, max_rel, cos}
    overflow_ops: list[str] = field(default_factory=list)
    first_overflow: str | None = None
    dump_dir: str | None = None
    trace_file: str | None = None
    op_summary_csv: str | None = None
    warnings: list[str] = field(default_factory=list)  # e.g. the dump size budget was exceeded
    # op -> how the emulator realised its precision, e.g. "storage rounding float16 (in 0,1; out 0)"
    emulation: dict[str, str] = field(default_factory=dict)
    # ascend backend: the plan is a prediction; where the adapter wrote; GE's actual decisions if dumped
    prediction_note: str | None = None
    adapter_outputs: list[dict[str, Any]] = field(default_factory=list)  # {"label", "path", "exists"}
    actual: dict[str, Any] | None = None  # _runtime.ascend.adapter_outputs.actual_decisions
    # -- typed records (_runtime/report_records.py) and small typed facts
    timing: Timing = field(default_factory=Timing)  # total / first / fastest / slowest step
    session: SessionRecord | None = None  # a TF1 session's run: fold key, steps, fetched values
    function: FunctionInfo | None = None  # a traced function's calls: label, plan function, call tree
    non_finite: NonFiniteFinding | None = None  # the first inf/NaN, said once
    non_finite_by_design: list[str] = field(default_factory=list)  # inf/NaN the float32 program has too
    first_overflow_by_step: dict[int, str] = field(default_factory=dict)  # enable_dump_debug, per step
    overflow_check: OverflowCheck | None = None  # enable_dump_debug: the steps it checked (None: no check ran)
    dump: DumpRecord = field(default_factory=DumpRecord)  # dumped and skipped steps
    profile: ProfileRecord = field(default_factory=ProfileRecord)  # profiled steps behind op_times_us
    labels: dict[str, str] = field(default_factory=dict)  # field -> what its number is (payload labels)
    notes: list[str] = field(default_factory=list)  # informational, beside the plan's notes
    rounded_tensors: int | None = None  # a traced function: tensors rounded to the plan's half precision
    not_live: list[str] = field(default_factory=list)  # observed ops that did not run (dead branches)
    predicted: bool = True  # placements and precisions are the planner's prediction, not read back
    fed_shapes: dict[str, list[int]] | None = None  # what the report's first run fed (the cost model's batch)
    fed_shapes_varied: bool = False  # a later run of it fed other shapes (a partial last batch): said with the estimate
    # the cost model's estimate as attached where the report was built; read it as ``estimate``
    cost: CostEstimate | PendingEstimate | None = field(default=None, repr=False, compare=False)

    @property
    def estimate(self) -> CostEstimate | None:
        """The cost model's estimate of this report's plan (estimated, never measured), or None.

        An emulated run's report computes it on first read, at the shapes its first run fed, so
        ``session().last_report.estimate`` is the estimate ``%%npu`` shows.
        """
        from npu_jupyter.cost.attach import PendingEstimate

        cost = self.cost
        return cost.result() if isinstance(cost, PendingEstimate) else cost

    def estimate_block(self, graph: Graph | None) -> CostBlock | None:
        """The cost model's figures for this report's run on ``graph``: its plan at the shapes it fed,
        with the copies of its feeds and fetches; None where no estimate can be made.

        The sweep and the zoo check take their table's figures from here (the graph they ran), so a
        row and the report of the same run agree. A traced function's report has its own graphs: its
        estimate is the one it carries, whatever ``graph`` is.
        """
        from npu_jupyter.cost.attach import estimate_of

        if self.function is not None:
            found = self.estimate
            return found.block if found is not None else None

        found = estimate_of(self.plan, graph, self.fed_shapes, fetches=self.fetches)
        return found.block if found is not None else None

    def __str__(self) -> str:
        """``print(report)`` shows the readable text report (the renderer ``npu_jupyter._display``
        registers; this module never imports the display layer).
        """
        return render_text(self)
