"""``npu_jupyter.sweep``: the same step under several precision modes, one table of time and drift.

The question after "which ops change precision?" is "what does each mode cost and what does it do to
my numbers?". A sweep runs the step in an emulator session per mode, each with a float32 reference
alongside (same weights, same random draws), and reports per mode the mean step time, the number of
ops whose precision changed, the fetches' drift from float32 and the op that drifted most.

A mode whose plan has errors (``Plan.errors``: e.g. ``allow_fp32_to_bf16`` on an Ascend910, or
``must_keep_origin_dtype`` with an op that has no float32 kernel) is one the adapter would refuse to
compile. The emulator still runs it, so its numbers are shown (they say what the precision would do),
but the row carries the plan's errors in ``plan_errors`` and the table marks it as refused.
"""

from __future__ import annotations

import html
import math
from dataclasses import asdict, dataclass, field
from typing import Any, Callable
from npu_jupyter.tensorflow_import import require_tensorflow

DEFAULT_MODES = ("force_fp32", "must_keep_origin_dtype", "allow_fp32_to_fp16", "allow_mix_precision", "force_fp16")


@dataclass
class SweepRow:
    """One precision mode's outcome."""

    mode: str
    wall_ms: float
    vs_first: float
    ops_changed: int
    max_abs: float
    max_rel: float
    cosine: float
    worst_op: str
    first_overflow: str | None
    error: str | None = None  # the emulator could not run this mode at all
    plan_errors: list[str] = field(default_factory=list)  # why the adapter would refuse this graph

    @property
    def refused(self) -> bool:
        """Whether the adapter would refuse this graph under this mode (the numbers are emulated only)."""
        return bool(self.plan_errors)


class SweepTable:
    """Rows per mode; ``to_records()`` for pandas, ``_repr_html_`` for the notebook (escaped)."""

    def __init__(self, rows: list[SweepRow], fetches: list[str]) -> None:
        self.rows = rows
        self.fetches = fetches

    def to_records(self) -> list[dict[str, Any]]:
        return [asdict(r) for r in self.rows]

    def __getitem__(self, mode: str) -> SweepRow:
        for row in self.rows:
            if row.mode == mode:
                return row
        raise KeyError(f"mode {mode!r} was not swept; swept: {[r.mode for r in self.rows]}")

    def __repr__(self) -> str:
        lines = [f"{'mode':28} {'ms/step':>9} {'vs first':>8} {'changed':>7} {'max_rel':>10} {'cos':>9}  worst op"]
        for r in self.rows:
            if r.error:
                lines.append(f"{r.mode:28} error: {r.error}")
                continue
            lines.append(f"{r.mode:28} {r.wall_ms:9.3f} {r.vs_first:8.2f} {r.ops_changed:7d} "
                         f"{r.max_rel:10.3g} {r.cosine:9.6f}  {r.worst_op}")
            if r.plan_errors:
                lines.append(f"{'':28} the adapter would refuse this graph: {'; '.join(r.plan_errors)}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        cols = ("mode", "ms/step", "vs first", "ops changed", "max abs", "max rel", "cosine", "worst op",
                "first overflow")
        head = "".join(f"<th>{c}</th>" for c in cols)
        body = []
        for r in self.rows:
            if r.error:
                body.append(f"<tr><td>{html.escape(r.mode)}</td><td colspan='8'>{html.escape(r.error)}</td></tr>")
                continue
            cells = (r.mode, f"{r.wall_ms:.3f}", f"{r.vs_first:.2f}×", str(r.ops_changed), _g(r.max_abs),
                     _g(r.max_rel), _g(r.cosine), r.worst_op, r.first_overflow or "")
            body.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
            if r.plan_errors:
                why = html.escape("; ".join(r.plan_errors))
                body.append(f"<tr class='npu-sweep-refused'><td></td><td colspan='8'>the adapter would refuse "
                            f"this graph (numbers above are emulated only): {why}</td></tr>")
        caption = html.escape(", ".join(self.fetches))
        return f"<table><caption>precision sweep of {caption}</caption><thead><tr>{head}</tr></thead>" \
               f"<tbody>{''.join(body)}</tbody></table>"


def _g(x: float) -> str:
    return "nan" if isinstance(x, float) and math.isnan(x) else f"{x:.4g}"


def sweep(
    graph_or_build_fn: Any,
    fetches: Any = None,
    feeds: dict | Callable[[], dict] | None = None,
    modes: list[str] | tuple[str, ...] = DEFAULT_MODES,
    config: Any = None,
    steps: int = 1,
    init: Any = None,
) -> SweepTable:
    """Run ``fetches`` for ``steps`` steps under each precision mode and tabulate time and drift.

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
    config : NpuConfig, optional
        Base options; ``precision_mode`` is replaced per mode (``precision_mode_v2`` is cleared).
    init : op or name, optional
        Run once before the steps; default: the initializers of the graph's global and local variables.
    """
    from npu_jupyter.options.config import NpuConfig
    from npu_jupyter.runtime.emulator import EmulatorSession

    base = config.copy() if config is not None else NpuConfig()
    rows: list[SweepRow] = []
    fetch_names: list[str] = []
    for mode in modes:
        graph, mode_fetches = _graph_for(graph_or_build_fn, fetches)
        cfg = base.copy(precision_mode=mode, precision_mode_v2=None)
        with EmulatorSession(cfg, graph, reference=True) as sess:
            try:
                _initialize(sess, graph, init)
                for _ in range(steps):
                    sess.run(mode_fetches, feeds() if callable(feeds) else feeds)
            except Exception as exc:  # noqa: BLE001 - one failing mode must not hide the others
                rows.append(SweepRow(mode, math.nan, math.nan, 0, math.nan, math.nan, math.nan, "", None,
                                     error=f"{type(exc).__name__}: {exc}"))
                continue
            report = sess.last_report
            fetch_names = report.fetches
            rows.append(_row(mode, report))
    first = next((r.wall_ms for r in rows if not r.error), math.nan)
    for r in rows:
        if not r.error:
            r.vs_first = r.wall_ms / first if first else math.nan
    return SweepTable(rows, fetch_names)


def _graph_for(graph_or_build_fn: Any, fetches: Any) -> tuple[Any, Any]:
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


def _initialize(sess: Any, graph: Any, init: Any) -> None:
    """Run ``init``, or every variable initializer the graph knows, without adding ops to it."""
    tf = require_tensorflow("a precision sweep")

    if init is not None:
        sess.run(init)
        return
    variables = graph.get_collection(tf.compat.v1.GraphKeys.GLOBAL_VARIABLES) + \
        graph.get_collection(tf.compat.v1.GraphKeys.LOCAL_VARIABLES)
    if variables:
        sess.run([v.initializer for v in variables])


def _row(mode: str, report: Any) -> SweepRow:
    drift = report.drift
    fetch_ops = [name.split(":")[0] for name in report.fetches]
    fetch_drift = [drift[n] for n in fetch_ops if n in drift]
    max_abs = max((d["max_abs"] for d in fetch_drift), default=0.0)
    max_rel = max((d["max_rel"] for d in fetch_drift), default=0.0)
    cosine = min((d["cos"] for d in fetch_drift), default=1.0)
    worst = max(drift.items(), key=lambda kv: (kv[1]["max_rel"] if not math.isnan(kv[1]["max_rel"]) else math.inf),
                default=("", {}))[0]
    return SweepRow(
        mode=mode,
        wall_ms=report.wall_ms,
        vs_first=1.0,
        ops_changed=report.plan.summary()["precision_changed"],
        max_abs=max_abs,
        max_rel=max_rel,
        cosine=cosine,
        worst_op=worst,
        first_overflow=report.first_overflow,
        plan_errors=[str(e) for e in report.plan.errors],
    )
