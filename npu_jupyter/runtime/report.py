"""RunReport: what one emulated (or real) session run decided and measured."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from npu_jupyter._renderers import render_text
from npu_jupyter.plan.model import Plan


@dataclass
class RunReport:
    """One ``session.run`` (or several runs of the same fetches, collapsed): the plan plus measurements.

    ``op_times_us`` (profiling), ``drift`` (float32 reference requested) and ``overflow_ops``
    (overflow detection) are empty when the run did not ask for them.
    """

    plan: Plan
    backend: str = "emulator"
    fetches: list[str] = field(default_factory=list)
    steps: int = 1
    wall_ms: float = 0.0
    reference_wall_ms: float | None = None
    op_times_us: dict[str, float] = field(default_factory=dict)
    drift: dict[str, dict[str, float]] = field(default_factory=dict)  # op -> {max_abs, max_rel, cos}
    overflow_ops: list[str] = field(default_factory=list)
    first_overflow: str | None = None
    dump_dir: str | None = None
    trace_file: str | None = None
    op_summary_csv: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)  # e.g. the dump size budget was exceeded
    # op -> how the emulator realised its precision, e.g. "storage rounding float16 (in 0,1; out 0)"
    emulation: dict[str, str] = field(default_factory=dict)
    # ascend backend: the plan is a prediction; where the adapter wrote; GE's actual decisions if dumped
    prediction_note: str | None = None
    adapter_outputs: list[dict[str, Any]] = field(default_factory=list)  # {"label", "path", "exists"}
    actual: dict[str, Any] | None = None  # runtime.adapter_outputs.actual_decisions

    def __str__(self) -> str:
        """``print(report)`` shows the readable text report (the renderer ``npu_jupyter.display``
        registers; this module never imports the display layer).
        """
        return render_text(self)
