"""The typed records a RunReport carries: each fact a run adds has one named home.

A session run and a traced function's call fill the same records (:class:`NonFiniteFinding`,
:class:`Timing`, :class:`DumpRecord`, :class:`ProfileRecord`); what only one of the two pipelines
knows has its own record (:class:`SessionRecord` for a TF1 session's run, :class:`FunctionInfo` for a
traced function). The records are frozen: a run that adds a step replaces the record with the one its
method returns, so a report copied for display (``dataclasses.replace``) never changes under it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Iterable, Mapping

#: What an emulated run's times are (its steps' and its ops'): clocked on this CPU, never an NPU time.
EMULATED_TIME = "wall-clock time of the emulation on this CPU"
#: What the ascend backend's step time is: timed on the host around ``session.run``, whose wait includes
#: the device's work, so it is neither a CPU time of this process nor a device kernel time.
HOST_TIME = (
    "wall-clock time of session.run measured on the host while the device ran the graph (not a device kernel time)"
)
#: Per backend: what its step times are, and what its first step includes that later ones do not.
CLOCKS = {
    "emulator": (EMULATED_TIME, "TensorFlow's warm-up"),
    "ascend": (HOST_TIME, "the adapter builds and loads the graph in it"),
}


def clock(backend: str) -> str:
    """What ``backend``'s measured times are ("wall-clock time of the emulation on this CPU")."""
    return CLOCKS[backend][0] if backend in CLOCKS else f"measured by the {backend} backend"


@dataclass(frozen=True)
class NonFiniteFinding:
    """The first inf/NaN of a run: where it arose, in which step (call), and why.

    One record for a session run and a function call. ``first_op`` is None when no op was located;
    ``where`` is what every view shows in its place (the op, or why none is named). ``reason`` is the
    finding without the step (every view says "at step <n>"), ``message`` the warning naming the step.
    """

    step: int
    first_op: str | None
    where: str
    reason: str
    message: str
    fetches: tuple[str, ...] = ()  # a session run: the fetches that came back non-finite
    outputs: tuple[int, ...] = ()  # a function call: the output indices it returned non-finite
    function: str | None = None  # a function call: the function whose body holds ``first_op``
    first_tensor: str | None = None  # "op:slot"
    op_type: str | None = None
    decided_dtype: str | None = None  # the dtype the plan decided for that output
    rounded: bool = False  # the emulator rounded that output to the decided half precision
    variable: str | None = None  # a session run: the variable ``first_op`` reads, already inf/NaN
    variable_writers: tuple[str, ...] = ()  # the ops that write that variable
    written: str | None = None  # a session run: the variable this step filled with inf/NaN, fetches finite
    writer: str | None = None  # the op that wrote them into ``written``
    by_design: bool = False  # only values the float32 program computes non-finite too reach a result


@dataclass(frozen=True)
class Timing:
    """Wall-clock time of a report's steps (a function's calls), as its backend clocks them (:data:`CLOCKS`).

    ``RunReport.wall_ms`` is the mean per step; this keeps the total and the first, fastest and slowest
    step, which a mean alone would hide (the first call of a function also instantiates it).
    ``first_index`` is that first step's number in its own graph (a function's call index): only step 0
    holds the warm-up. A report that starts later (the same run graph again after another run, as a
    training loop that evaluates every few steps does) has none in its first step.
    """

    total_ms: float = 0.0
    first_ms: float | None = None
    min_ms: float | None = None
    max_ms: float | None = None
    first_index: int | None = None  # the graph's own step (call) number of the first step; None: not known

    def add(self, wall_ms: float, index: int | None = None) -> Timing:
        """The timing with one more step of ``wall_ms`` counted (``index``: that step's number in its graph)."""
        return Timing(
            total_ms=self.total_ms + wall_ms,
            first_ms=wall_ms if self.first_ms is None else self.first_ms,
            min_ms=wall_ms if self.min_ms is None else min(self.min_ms, wall_ms),
            max_ms=wall_ms if self.max_ms is None else max(self.max_ms, wall_ms),
            first_index=index if self.first_ms is None else self.first_index,
        )

    def then(self, later: Timing) -> Timing:
        """The timing of these steps followed by ``later``'s (two reports of one run folded into one)."""
        known = [t for t in (self, later) if t.first_ms is not None]
        if len(known) < 2:
            return known[0] if known else self
        return Timing(
            total_ms=self.total_ms + later.total_ms,
            first_ms=self.first_ms,
            min_ms=min(self.min_ms or 0.0, later.min_ms or 0.0),
            max_ms=max(self.max_ms or 0.0, later.max_ms or 0.0),
            first_index=self.first_index,
        )


@dataclass(frozen=True)
class SessionRecord:
    """What a TF1 session's run adds: the run signature its later runs fold by, its steps, its values.

    ``first_step`` / ``last_step`` are the session-wide run count at the report's first and last run
    (the steps a report shows count its own graph's runs instead, as the device does); ``values`` are
    the fetched values of the last run, by (fetch name, "output:0"), for ``compare()``.
    """

    fetch_key: tuple[object, ...]
    first_step: int
    last_step: int
    values: Mapping[tuple[str, str], object] = field(default_factory=dict)


@dataclass(frozen=True)
class FunctionInfo:
    """Which traced function a report is of, how the report names it and its call tree, and who called it.

    ``titled`` is where the label says the calls came from ("in Keras evaluate"), ``callers`` where each
    came from (:func:`~npu_jupyter._runtime.functions.labels.caller`): one test function runs for
    ``fit``'s validation and for ``evaluate``, and a report titled "Keras evaluate" must not pass fit's
    validation calls off as evaluate's (:meth:`calls_split`).
    """

    label: str  # what the report calls it: "Keras fit (train function)", or its Python name
    plan_function: str  # the function whose plan the report shows; its callees' ops are "function/op"
    functions: tuple[str, ...] = ()  # every function of its call tree, the called one first
    helper: str | None = None  # a TensorFlow helper's kind ("initializer" for initialize_variables)
    titled: str = "outside Keras"  # where the label says its calls came from
    callers: tuple[tuple[str, int], ...] = ()  # (where calls came from, how many), first seen first

    def called(self, where: str) -> FunctionInfo:
        """The record with one more call counted as coming from ``where``."""
        counts = dict(self.callers)
        counts[where] = counts.get(where, 0) + 1
        return replace(self, callers=tuple(counts.items()))

    def calls_split(self) -> tuple[tuple[str, int], ...]:
        """Calls per place they came from; empty when all came from where the title says (nothing to add)."""
        if all(where == self.titled for where, _ in self.callers):
            return ()
        return self.callers


@dataclass(frozen=True)
class SkippedDump:
    """A step the dump left out, and why (the budget ran out, dumping had stopped)."""

    step: int
    reason: str


@dataclass(frozen=True)
class DumpRecord:
    """The steps a run dumped or skipped, and the graph folder it dumped into last.

    ``RunReport.dump_dir`` stays the ``dump_path`` the user set (``load_dump(report.dump_dir)``);
    ``graph_dir`` is the folder of this report's graph inside it (``dump_path`` for graph 0,
    ``graph_<k>`` after).
    """

    steps: tuple[int, ...] = ()
    graph_dir: str | None = None
    skipped: tuple[SkippedDump, ...] = ()

    def dumped(self, step: int, graph_dir: str) -> DumpRecord:
        """The record with ``step`` dumped into ``graph_dir``."""
        return DumpRecord((*self.steps, step), graph_dir, self.skipped)

    def skipping(self, step: int, reason: str) -> DumpRecord:
        """The record with ``step`` skipped for ``reason``."""
        return DumpRecord(self.steps, self.graph_dir, (*self.skipped, SkippedDump(step, reason)))

    def then(self, later: DumpRecord) -> DumpRecord:
        """These steps followed by ``later``'s (two reports of one run graph folded into one)."""
        return DumpRecord(
            (*self.steps, *later.steps), later.graph_dir or self.graph_dir, (*self.skipped, *later.skipped)
        )


@dataclass(frozen=True)
class OverflowCheck:
    """``enable_dump_debug``'s check of a report's steps (a function's calls): how many it looked at.

    A check that found nothing must say it ran, or the user cannot tell it from no check: the report's
    "Overflow check" line counts the steps (calls) whose outputs were checked, under which
    ``dump_debug_mode``, and the dtypes the emulation stored them in on this CPU. None on a report: no check ran.
    """

    checked: int = 0  # steps (calls) whose outputs the check looked at
    mode: str = ""  # dump_debug_mode: which ops it covers
    storage: tuple[str, ...] = ()  # the dtypes the checked outputs were stored in (emulated), sorted

    def add(self, mode: str, dtypes: Iterable[str]) -> OverflowCheck:
        """The record with one more step checked under ``mode``, its outputs stored in ``dtypes``."""
        return OverflowCheck(self.checked + 1, mode, tuple(sorted({*self.storage, *(d for d in dtypes if d)})))

    @staticmethod
    def folded(checks: Iterable[OverflowCheck | None]) -> OverflowCheck | None:
        """One record for several runs of the same thing (None when no check ran in any; the last mode)."""
        ran = [c for c in checks if c is not None]
        if not ran:
            return None
        storage = tuple(sorted({dtype for c in ran for dtype in c.storage}))
        return OverflowCheck(sum(c.checked for c in ran), ran[-1].mode, storage)


@dataclass(frozen=True)
class ProfileRecord:
    """The profiled steps of a run: per-op CPU times averaged over the steps after the warm-up.

    Step 0 of a graph or function is its warm-up (TensorFlow builds the executor, instantiates a traced
    function, allocates): one MatMul takes 20 ms there and 40 µs after. Its times are kept apart
    (``warmup_op_times_us``) and are the per-op times only while no later step was profiled.
    """

    steps: int = 0  # profiled steps, the warm-up included
    timed_steps: int = 0  # profiled steps after step 0
    cast_us: float = 0.0  # the emulator's own rounding casts in the last profiled step (CPU time)
    warmup_op_times_us: Mapping[str, float] | None = None
    op_time_sums: Mapping[str, float] = field(default_factory=dict)  # per op, summed over the timed steps

    def added(self, step: int, op_times_us: Mapping[str, float], cast_us: float) -> ProfileRecord:
        """The record with one more profiled step (``step`` 0 is the warm-up)."""
        if step == 0:
            return ProfileRecord(self.steps + 1, self.timed_steps, cast_us, dict(op_times_us), self.op_time_sums)
        sums = dict(self.op_time_sums)
        for name, us in op_times_us.items():
            sums[name] = sums.get(name, 0.0) + us
        return ProfileRecord(self.steps + 1, self.timed_steps + 1, cast_us, self.warmup_op_times_us, sums)

    def then(self, later: ProfileRecord) -> ProfileRecord:
        """These profiled steps followed by ``later``'s (two reports of one run graph folded into one)."""
        sums = dict(self.op_time_sums)
        for name, us in later.op_time_sums.items():
            sums[name] = sums.get(name, 0.0) + us
        warmup = self.warmup_op_times_us if self.warmup_op_times_us is not None else later.warmup_op_times_us
        cast_us = later.cast_us if later.steps else self.cast_us
        return ProfileRecord(self.steps + later.steps, self.timed_steps + later.timed_steps, cast_us, warmup, sums)

    def op_times_us(self) -> dict[str, float]:
        """Per-op CPU µs: the mean over the timed steps, else the warm-up's."""
        if self.timed_steps:
            return {name: total / self.timed_steps for name, total in self.op_time_sums.items()}
        return dict(self.warmup_op_times_us or {})

    def label(self, cpu_time: str, kind: str = "step") -> str:
        """What the per-op times are: which steps (a function's: calls) they are the mean of.

        ``cpu_time`` says whose clock; ``kind`` is what the report counts, so a function's report that
        says "6 calls" does not call the same calls "profiled steps" a line below.
        """
        if not self.timed_steps:
            return f"{kind} 0 only, TensorFlow's warm-up included; {cpu_time}"
        runs = self.timed_steps
        left_out = f", {kind} 0 (warm-up) left out" if self.warmup_op_times_us is not None else ""
        return f"over {runs} profiled {kind}{'s' if runs != 1 else ''}{left_out}; {cpu_time}"
