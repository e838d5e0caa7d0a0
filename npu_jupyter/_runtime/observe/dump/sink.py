"""Where the dumped steps and calls of one session or emulation go: the budget, the writes, the stop.

Both stacks dump the same way (:mod:`.observers` for session steps, :mod:`.npu_jupyter._runtime.functions.findings` for
traced-function calls): whether a step fits the byte budget is decided before it runs, from the last
dumped step of its graph (or an estimate); a step that does not fit is skipped, named in the report
and in ``graphs.json``, and ends dumping for the session; a written step puts its folder in the
report. This module holds that state and those rules once.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from npu_jupyter._runtime.observe.dump import writer as _writer
from npu_jupyter._units import format_bytes

if TYPE_CHECKING:
    from npu_jupyter._runtime.observe.dump.format import DumpGraph
    from npu_jupyter._runtime.observe.step_record import StepKind
    from npu_jupyter._runtime.report import RunReport

#: How far up the stack a dump warning points: past this module and the observer, at the step's caller.
_STACKLEVEL = 5


class DumpSink:
    """The dump writer of one session or emulation (made on first use) and whether dumping stopped."""

    def __init__(self, dump_path: str | None, budget_bytes: int | None, *, stats_only: bool) -> None:
        self.dump_path = dump_path
        self.budget_bytes = budget_bytes
        self.stats_only = stats_only  # dump_data="stats": statistics only, no bytes spent
        self.stopped: str | None = None  # why dumping stopped (the budget, a full disk)
        self._writer: _writer.DumpWriter | None = None
        self._step_bytes: dict[int, int] = {}  # graph id -> bytes of its last dumped step

    @property
    def writer(self) -> _writer.DumpWriter:
        """The dump writer (its folder is checked when it is made)."""
        if self._writer is None:
            self._writer = _writer.DumpWriter(
                str(self.dump_path), budget_bytes=self.budget_bytes, stats_only=self.stats_only
            )
        return self._writer

    def use(self, dump_path: str | None, *, stats_only: bool) -> None:
        """Dump under these options from the next writer on (a session's options may change)."""
        self.stats_only = stats_only
        if self._writer is None:
            self.dump_path = dump_path

    def reset(self) -> None:
        """The dump options changed: the next dump makes a new writer (a stop and the sizes stay)."""
        self._writer = None

    def last_bytes(self, graph: DumpGraph) -> int | None:
        """Bytes of ``graph``'s last dumped step (None before its first)."""
        return self._step_bytes.get(graph.id)

    def admit(
        self,
        notes: list[str],
        graph: DumpGraph,
        step: int,
        what: str,
        estimate: Callable[[], int],
        unit: StepKind = "step",
    ) -> bool:
        """Whether ``step`` of ``graph`` (named ``what`` in messages) is dumped, decided before it runs.

        ``estimate`` gives its size in bytes (asked only when the budget matters). A step that does not
        fit stops dumping: its reason goes to ``notes`` (the report's warnings) and ``graphs.json``.
        """
        if self.stopped:
            reason = f"{unit} {step} of {what} not dumped: dumping stopped earlier ({self.stopped})"
            self.writer.record_skipped(graph, step, reason)
            notes.append(reason)
            return False
        writer = self.writer
        if self.stats_only or graph.role == "initializer":  # statistics only: no bytes
            return True
        size = estimate()
        if writer.written_bytes + size <= writer.budget_bytes:
            return True
        self.stop(notes, graph, step, self._over_budget(unit, step, what, size, about=True))
        return False

    def _over_budget(self, unit: StepKind, step: int, what: str, size: int, *, about: bool) -> str:
        """Why ``step`` of ``what`` is not dumped: it needs ``size`` bytes the budget has not got.

        It names the graph or function, as the report of another function that quotes it (after
        dumping stopped) must not read as its own step; ``about`` marks an estimated size.
        """
        writer = self.writer
        return (
            f"dump budget exceeded: {unit} {step} of {what} needs {'about ' if about else ''}{format_bytes(size)}, "
            f"{format_bytes(writer.written_bytes)} already written of {format_bytes(writer.budget_bytes)} "
            f"(dump_path {writer.root}); {unit} {step} and later {unit}s are not dumped, earlier {unit}s are "
            f"complete. Narrow dump_step, dump_mode or dump_layer, or raise the budget with "
            f"{_writer.BUDGET_ENV}=<size>."
        )

    def stop(self, notes: list[str], graph: DumpGraph, step: int, reason: str) -> None:
        """Dumping ends here: say why in ``notes``, in ``graphs.json`` and as a RuntimeWarning."""
        self.stopped = reason
        self.writer.record_skipped(graph, step, reason)
        notes.append(reason)
        warnings.warn(reason, RuntimeWarning, stacklevel=_STACKLEVEL)

    def write(
        self,
        report: RunReport,
        graph: DumpGraph,
        step: int,
        entries: list[_writer.DumpEntry],
        meta: dict[str, object],
        *,
        overflow_only: bool = False,
        stats_only: bool | None = None,
        what: str | None = None,
        unit: StepKind = "step",
    ) -> None:
        """Write one step's ``entries`` and put its folder in ``report`` (nothing once dumping stopped).

        ``what`` names the graph or function in messages (default ``graph <id>``), as :meth:`admit` does.
        """
        if self.stopped:
            return
        writer = self.writer
        try:
            before = writer.written_bytes
            folder = writer.write_step(step, entries, meta, graph=graph, stats_only=stats_only)
        except _writer.DumpBudgetExceeded as exc:  # no estimate let it through (a first step): its real size
            reason = self._over_budget(unit, step, what or f"graph {graph.id}", exc.needed, about=False)
            self.stop(report.warnings, graph, step, reason)
            return
        if not overflow_only:
            self._step_bytes[graph.id] = writer.written_bytes - before
        report.dump_dir = writer.root  # the dump_path the user set; load_dump(dump_dir) reads it
        report.dump = report.dump.dumped(step, str(Path(folder).parent))  # dump_path for graph 0, graph_<k> after


__all__ = ["DumpSink"]
