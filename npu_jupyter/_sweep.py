"""``npu_jupyter.sweep``: the same step under several precision modes, one table of cost and drift.

The question after "which ops change precision?" is "what does each mode cost and what does it do to
my numbers?". A sweep runs the step in an emulator session per mode, each with a float32 reference
alongside (same weights, same random draws), and reports per mode:

* the **estimated NPU step time and memory**, each vs float32 (``npu_jupyter.cost``: a roofline over
  the SoC's published peak rates; an estimate, never a measurement) -- the main columns;
* the number of ops whose precision changed, the fetches' drift from float32 and the op that drifted
  most, both by relative RMSE and picked as the report's "Largest drift" line picks them
  (:mod:`npu_jupyter._runtime.observe.drift_ranking`: each op's worst step, copies and ops with no
  drift left out, so a mode where nothing drifted has no worst op);
* the **wall-clock time of the emulation on this CPU** per step: each mode is warmed up first (``warmup`` runs, untimed),
  then the median of ``steps`` timed runs. It includes the emulator's rounding casts, so it says
  nothing about NPU speed; it is shown last and labelled so.

A mode whose plan has errors (``Plan.errors``: e.g. ``allow_fp32_to_bf16`` on an Ascend910, or
``must_keep_origin_dtype`` with an op that has no float32 kernel) is one the adapter would refuse to
compile. The emulator still runs it, so its drift is shown (it says what the precision would do), but
the row carries the plan's errors in ``plan_errors``, has no estimate, and the table shows "refused"
in place of every time and memory figure.

The estimate of each mode uses the shapes its run fed (a batch of 64 is 64), as its report does.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Callable, cast

from npu_jupyter._renderers import render_html
from npu_jupyter._tensorflow_import import require_tensorflow

if TYPE_CHECKING:
    from npu_jupyter._options.config import NpuConfig
    from npu_jupyter._runtime.observe.fetch_map import FeedDict
    from npu_jupyter._runtime.report import RunReport
    from npu_jupyter._runtime.session.emulator import EmulatorSession
    from npu_jupyter._tf_types import Graph

    #: ``sweep(feeds=...)``: one feed dict for every step, or a function giving each step's.
    Feeds = FeedDict | Callable[[], FeedDict] | None

CPU_LABEL = "wall-clock time of the emulation on this CPU (not NPU time)"
DRIFT_LABEL = (
    "rel. RMSE = root mean square of a − b over that of the float32 value b (the fetches: the worst fetch's); "
    'the worst op is ranked by it over the steps, as the report\'s "Largest drift" line ranks (copies of a '
    "drifting op and ops with no drift left out; none: no op drifted)"
)
EST_LABEL = "estimated by the cost model (not measured)"

DEFAULT_MODES = ("force_fp32", "must_keep_origin_dtype", "allow_fp32_to_fp16", "allow_mix_precision", "force_fp16")


@dataclass
class SweepRow:
    """One precision mode's outcome."""

    mode: str
    wall_ms: float  # median wall-clock ms per step of the emulation on this CPU, after warm-up (CPU_LABEL)
    ops_changed: int
    max_abs: float
    max_rel: float  # the fetches' largest element-wise relative error (kept in the records; noisy near 0)
    cosine: float
    worst_op: str  # the op that drifted most by relative RMSE, as the report ranks; "" when none drifted
    first_overflow: str | None
    error: str | None = None  # the emulator could not run this mode at all
    plan_errors: list[str] = field(default_factory=list)  # why the adapter would refuse this graph
    est_step_ms: float | None = None  # estimated NPU ms per step (cost model)
    est_step_vs_fp32: float | None = None  # est_step_ms / the same step all in float32
    est_memory_bytes: int | None = None  # estimated activation + weight memory in the decided dtypes
    est_memory_vs_fp32: float | None = None
    approximate_ops: int = 0  # decisions resting on approximate op data
    timed_steps: int = 0  # runs the CPU median is taken over (after warm-up)
    rel_rmse: float | None = None  # the fetches' drift by the figure ops are ranked by (the worst fetch's)
    worst_op_rel_rmse: float | None = None  # worst_op's relative RMSE; worst_op is "" when no op drifted
    worst_op_cancelled: bool = False  # worst_op's reference cancels: its figure is against its inputs' scale

    @property
    def refused(self) -> bool:
        """Whether the adapter would refuse this graph under this mode (the numbers are emulated only)."""
        return bool(self.plan_errors)


class SweepTable:
    """Rows per mode; ``to_records()`` for pandas; in a notebook the display layer's table (escaped).

    ``row.refused`` is the field the table marks: the adapter would refuse to compile the graph under
    that mode (the emulated numbers are shown anyway); ``row.error`` is set only when the emulator
    could not run the mode at all.
    """

    def __init__(self, rows: list[SweepRow], fetches: list[str]) -> None:
        self.rows = rows
        self.fetches = fetches

    def to_records(self) -> list[dict[str, Any]]:
        """The rows as plain dicts (for pandas or JSON)."""
        return [asdict(r) for r in self.rows]

    def __getitem__(self, mode: str) -> SweepRow:
        for row in self.rows:
            if row.mode == mode:
                return row
        raise KeyError(f"mode {mode!r} was not swept; swept: {[r.mode for r in self.rows]}")

    def __repr__(self) -> str:
        lines = [
            (
                f"{'mode':28} {'est ms/step':>11} {'vs fp32':>7} {'est memory':>11} {'vs fp32':>7} "
                f"{'changed':>7} {'rel. RMSE':>10} {'cos':>9} {'CPU ms':>8}  worst op (rel. RMSE)"
            )
        ]
        for r in self.rows:
            if r.error:
                lines.append(f"{r.mode:28} error: {r.error}")
                continue
            step, step_ratio, memory, memory_ratio, cpu = _times(r)
            lines.append(
                f"{r.mode:28} {step:>11} {step_ratio:>7} {memory:>11} {memory_ratio:>7} {r.ops_changed:7d} "
                f"{_num(r.rel_rmse, '.3g'):>10} {r.cosine:9.6f} {cpu:>8}  {worst_op_text(r)}"
            )
            if r.plan_errors:
                lines.append(
                    f"{'':28} the adapter would refuse this graph, so it has no step time: {'; '.join(r.plan_errors)}"
                )
        lines.append(self.legend())
        return "\n".join(lines)

    def legend(self) -> str:
        """What each number is: the labels every view of the table carries."""
        timed = max((r.timed_steps for r in self.rows), default=0)
        approx = max((r.approximate_ops for r in self.rows), default=0)
        text = (
            f"est ms/step, est memory: {EST_LABEL}, from the plan and published peak rates "
            f"(docs/cost-model.md); vs fp32: the same estimate with every float tensor in float32. "
            f"CPU ms: {CPU_LABEL}, median of {timed} step(s) after warm-up, including the emulator's "
            f"rounding casts. Drift vs the float32 reference: {DRIFT_LABEL}."
        )
        if approx:
            text += f" Up to {approx} op decision(s) per mode rest on approximate op data."
        return text

    def _repr_html_(self) -> str | None:
        return render_html(self)


def worst_op_text(row: SweepRow) -> str:
    """``"dense/MatMul (rel. RMSE 0.00123)"``, or ``"none"`` when the reference found no op that drifted."""
    if not row.worst_op:
        return "none"
    if row.worst_op_rel_rmse is None:
        return row.worst_op
    from npu_jupyter._runtime.observe.drift_ranking import AGAINST_INPUTS, figure_text

    against = f" {AGAINST_INPUTS}" if row.worst_op_cancelled else ""
    return f"{row.worst_op} (rel. RMSE {figure_text(row.worst_op_rel_rmse)}{against})"


def _times(row: SweepRow) -> tuple[str, str, str, str, str]:
    """The row's estimated step, memory (each with its float32 ratio) and CPU ms cells.

    A mode the adapter refuses to compile has no step on the device to time or estimate: every time
    cell reads "refused" (the emulator's run still gives its drift).
    """
    if row.refused:
        return ("refused",) * 5
    return (
        _num(row.est_step_ms, ".4g"),
        _ratio(row.est_step_vs_fp32),
        _bytes(row.est_memory_bytes),
        _ratio(row.est_memory_vs_fp32),
        f"{row.wall_ms:.3f}",
    )


def _num(x: float | None, spec: str) -> str:
    return "n/a" if x is None else format(x, spec)


def _ratio(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}×"


def _bytes(x: int | None) -> str:
    if x is None:
        return "n/a"
    from npu_jupyter._units import format_bytes

    return format_bytes(int(x))


def sweep(
    graph_or_build_fn: Graph | Callable[[], object],
    fetches: object = None,
    feeds: Feeds = None,
    modes: list[str] | tuple[str, ...] = DEFAULT_MODES,
    config: NpuConfig | None = None,
    steps: int = 3,
    init: object = None,
    warmup: int = 1,
    progress: bool | None = None,
) -> SweepTable:
    """Run ``fetches`` under each precision mode and tabulate estimated cost, drift and CPU time.

    Parameters
    ----------
    graph_or_build_fn : tf.Graph or callable
        A graph, or a function that builds the model into the (fresh, default) graph for each mode and
        may return the fetches.
    fetches : names, tensors or ops
        What to run (names work for both forms; tensors only with a graph). Default: what the build
        function returned.
    feeds : dict or callable
        ``{placeholder or name: value}``, or a function returning one per step.
    modes : precision_mode values
        The modes to run, one table row each, in this order.
    config : NpuConfig, optional
        Base options; ``precision_mode`` is replaced per mode (``precision_mode_v2`` is cleared).
    steps : int
        Timed runs per mode; the CPU column is their median.
    init : op or name, optional
        Run once before the steps; default: the initializers of the graph's global and local variables.
    warmup : int
        Untimed runs per mode before the timed ones (the first run of a session builds its kernels).
    progress : bool, optional
        A progress bar over the modes; default: only in a notebook frontend (``npu_jupyter._progress``).

    """
    from npu_jupyter._options.config import NpuConfig
    from npu_jupyter._progress import progress_bar
    from npu_jupyter._runtime.session.emulator import EmulatorSession

    if steps < 1 or warmup < 0:
        raise ValueError(f"sweep(): steps must be >= 1 and warmup >= 0, got steps={steps}, warmup={warmup}")
    base = config.copy() if config is not None else NpuConfig()
    rows: list[SweepRow] = []
    fetch_names: list[str] = []
    with progress_bar(len(modes), "precision sweep", enabled=progress) as bar:
        for mode in modes:
            bar.describe(mode)
            graph, mode_fetches = _graph_for(graph_or_build_fn, fetches)
            cfg = base.copy(precision_mode=mode, precision_mode_v2=None)
            with EmulatorSession(cfg, graph, reference=True) as sess:
                try:
                    _initialize(sess, graph, init)
                    for _ in range(warmup):
                        sess.run(mode_fetches, feeds() if callable(feeds) else feeds)
                    times = [_timed_run(sess, mode_fetches, feeds) for _ in range(steps)]
                except Exception as exc:  # noqa: BLE001 - one failing mode must not hide the others
                    rows.append(
                        SweepRow(
                            mode,
                            math.nan,
                            0,
                            math.nan,
                            math.nan,
                            math.nan,
                            "",
                            None,
                            error=f"{type(exc).__name__}: {exc}",
                        )
                    )
                    bar.advance()
                    continue
                # set: this thread created the session and just ran it
                report = cast("RunReport", sess.last_report)
                fetch_names = report.fetches
                rows.append(_row(mode, report, statistics.median(times), graph, len(times)))
            bar.advance()
    return SweepTable(rows, fetch_names)


def _timed_run(sess: EmulatorSession, fetches: object, feeds: Feeds) -> float:
    """CPU ms of one emulated step as the emulator measured it (its own run, not the reference's)."""
    before = sess.last_report
    total = before.timing.total_ms if before is not None else 0.0
    sess.run(fetches, feeds() if callable(feeds) else feeds)
    after = cast("RunReport", sess.last_report)  # set: this thread just ran the session
    if after is before:
        return after.timing.total_ms - total
    return after.wall_ms


def _graph_for(graph_or_build_fn: Graph | Callable[[], object], fetches: object) -> tuple[Graph, object]:
    tf = require_tensorflow("a precision sweep")

    if isinstance(graph_or_build_fn, tf.Graph):
        if fetches is None:
            raise ValueError("sweep(graph, fetches): give the fetches to run when passing a graph")
        return graph_or_build_fn, fetches
    if not callable(graph_or_build_fn):
        raise TypeError("sweep() needs a tf.Graph or a function that builds the model into the default graph")
    graph = tf.Graph()
    with graph.as_default():
        built = graph_or_build_fn()
    chosen = fetches if fetches is not None else built
    if chosen is None:
        raise ValueError("sweep(build_fn): the build function returned nothing; pass fetches=")
    return graph, chosen


def _initialize(sess: EmulatorSession, graph: Graph, init: object) -> None:
    """Run ``init``, or every variable initializer the graph knows, without adding ops to it."""
    tf = require_tensorflow("a precision sweep")

    if init is not None:
        sess.run(init)
        return
    variables = graph.get_collection(tf.compat.v1.GraphKeys.GLOBAL_VARIABLES) + graph.get_collection(
        tf.compat.v1.GraphKeys.LOCAL_VARIABLES
    )
    if variables:
        sess.run([v.initializer for v in variables])


def _row(mode: str, report: RunReport, wall_ms: float, graph: Graph, timed: int) -> SweepRow:
    from npu_jupyter._runtime.observe.drift_ranking import worst_fetch_drift, worst_op_figure

    plan = report.plan
    assert plan is not None  # noqa: S101 - narrows the type: a session step always runs under its plan
    drift = report.drift
    fetch_ops = [name.split(":")[0] for name in report.fetches]
    fetch_drift = [drift[n] for n in fetch_ops if n in drift]
    max_abs = max((d["max_abs"] for d in fetch_drift), default=0.0)
    max_rel = max((d["max_rel"] for d in fetch_drift), default=0.0)
    cosine = min((d["cos"] for d in fetch_drift), default=1.0)
    worst_fetch = worst_fetch_drift(drift, report.fetches)
    worst, figure, cancelled = worst_op_figure(plan, drift) or ("", None, False)
    row = SweepRow(
        mode=mode,
        wall_ms=wall_ms,
        ops_changed=plan.summary()["precision_changed"],
        max_abs=max_abs,
        max_rel=max_rel,
        cosine=cosine,
        worst_op=worst,
        first_overflow=report.first_overflow,
        plan_errors=[str(e) for e in plan.errors],
        approximate_ops=sum(bool(getattr(d, "approximate", False)) for d in plan.ops.values()),
        timed_steps=timed,
        rel_rmse=None if worst_fetch is None else worst_fetch.get("rel_rmse"),
        worst_op_rel_rmse=figure if worst else None,
        worst_op_cancelled=cancelled,
    )
    _add_estimate(row, report, graph)
    return row


def _add_estimate(row: SweepRow, report: RunReport, graph: Graph) -> None:
    """The cost model's columns: estimated NPU step time and memory, each vs float32.

    Estimated at the shapes the mode's run fed, as the report of that run is; a mode the adapter would
    refuse to compile gets none (its row says refused).
    """
    block = report.estimate_block(graph)
    if block is not None:
        row.est_step_ms = block.step_ms
        row.est_step_vs_fp32 = block.step_ratio_fp32
        row.est_memory_bytes = block.memory_bytes
        row.est_memory_vs_fp32 = block.memory_ratio_fp32
