"""One record of a step or a call: what ran, how long it took on this CPU, and what was observed.

A TF1 session step (:mod:`.emulator`) and a call of a traced TF2 function (:mod:`.npu_jupyter._runtime.functions.emulator`) are the
same thing to the parts both stacks share: the time of the step (:func:`add_time`), the non-finite
check of what it returned (:func:`non_finite_indices`), the dump, overflow, drift and profile
observers (:mod:`.observers`). Each stack builds one :class:`StepRecord` after the step ran and hands
it to them, so those parts read one shape instead of a stack's own list of arguments.

Steps are numbered per graph, as the device counts the iterations of one compiled graph: a session's
run graph (one run signature) counts its steps, a traced function counts its calls, both from 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Mapping, Sequence

import numpy as np

from npu_jupyter._runtime.report_records import CLOCKS

if TYPE_CHECKING:
    from typing import Literal  # novermin (never imported at run time)

    from npu_jupyter._plan.model import Plan
    from npu_jupyter._runtime.functions.observe_nodes import Observation
    from npu_jupyter._runtime.observe.dump.format import DumpGraph
    from npu_jupyter._runtime.observe.profile import StepProfile
    from npu_jupyter._runtime.report import RunReport
    from npu_jupyter._runtime.report_records import Timing
    from npu_jupyter._runtime.session.watch import Watch

    #: A session step of a run graph, or a call of a traced function.
    StepKind = Literal["step", "call"]
    #: A watched tensor: (op, "output" | "input", slot).
    WatchKey = tuple[str, str, int]
    #: Watch key -> its values in one step (one per live loop iteration; empty when the tensor was dead).
    WatchValues = Mapping[WatchKey, Sequence[np.ndarray]]


@dataclass(frozen=True)
class StepValues:
    """What a session step fetched of the tensors it watched, and their float32 reference (drift)."""

    watch: tuple[Watch, ...] = ()
    values: WatchValues = field(default_factory=dict)
    reference: WatchValues | None = None  # the float32 reference's values of the same watches
    reference_ms: float | None = None  # how long the reference took (measured on this CPU)


@dataclass(frozen=True)
class StepRecord:
    """One step of a session's run graph or one call of a traced function, after it ran.

    ``wall_ms`` is this step's (or call's) wall-clock time, measured once around it; every mean, total and
    spread a report shows is derived from these records by :func:`add_time`. ``outputs`` are what the
    step returned (a session's fetched values in flattening order, a function's outputs); which of
    them hold inf/NaN is computed once, on first use (:attr:`non_finite_outputs`).
    """

    kind: StepKind
    name: str  # what ran: the function's name, or the run graph's fetches joined by ", "
    index: int  # the graph's own step, or the function's call index (from 0)
    plan: Plan | None  # the decided dtypes the step ran in
    wall_ms: float  # wall-clock ms of this step or call (the emulator: on this CPU; ascend: on the host)
    outputs: tuple[object, ...] = ()
    graph: DumpGraph | None = None  # a session step's run graph (dump and profile folders go by it)
    dump_now: bool = False  # ``dump_step`` selects this step and the dump budget had room
    watched: StepValues | None = None  # a session step's watched tensors
    observations: tuple[Observation, ...] = ()  # what a function call's observer nodes handed over
    profile: StepProfile | None = None  # per-op CPU times, when this step was profiled
    unprofiled: str | None = None  # why a step that was to be profiled was not (another profiler ran)

    @property
    def non_finite_outputs(self) -> tuple[int, ...]:
        """Indices of the outputs holding inf/NaN (float values only; computed once per record)."""
        found: tuple[int, ...] | None = self.__dict__.get("_non_finite")
        if found is None:
            found = non_finite_indices(self.outputs)
            object.__setattr__(self, "_non_finite", found)  # a cache, not a field: the record stays frozen
        return found


def has_inf_nan(array: np.ndarray) -> bool:
    """True when a non-empty array holds inf or NaN."""
    return bool(array.size) and not bool(np.isfinite(array).all())


def is_non_finite(value: object) -> bool:
    """True for a float value holding inf/NaN: a numpy array or scalar, a Python float, or a TF tensor.

    Other values (ints, strings, resources, an iterator's ``Optional``) are never non-finite.
    """
    if isinstance(value, (np.ndarray, np.generic, float)):
        array = np.asarray(value)
        return array.dtype.kind == "f" and has_inf_nan(array)
    if not getattr(getattr(value, "dtype", None), "is_floating", False):
        return False
    try:
        return has_inf_nan(np.asarray(value))  # an eager tensor (bfloat16/half included)
    except Exception:  # noqa: BLE001 - a value numpy cannot read: nothing to check
        return False


def non_finite_indices(values: Sequence[object]) -> tuple[int, ...]:
    """Indices of ``values`` that hold inf/NaN (:func:`is_non_finite`)."""
    return tuple(index for index, value in enumerate(values) if is_non_finite(value))


def add_time(report: RunReport, record: StepRecord) -> None:
    """Count one step or call in ``report`` and derive its times from the records' own ``wall_ms``.

    ``report.wall_ms`` is the mean per step (per call); the total, fastest, slowest and first are
    kept in ``report.timing``. The time label also says them: the first step of a run graph builds its
    executor (on the ascend backend the adapter builds and loads the graph), the first call of a
    function instantiates it in TensorFlow's runtime, so it is often the slowest by far and a mean
    alone would hide that. Each backend says whose clock it is (:data:`report_records.CLOCKS`).
    """
    report.steps += 1
    timing = report.timing = report.timing.add(record.wall_ms, record.index)
    report.wall_ms = timing.total_ms / report.steps
    if report.backend in CLOCKS and report.steps > 1:
        report.labels["wall_ms"] = time_label(record.kind, report.steps, timing, report.backend)


def time_label(kind: StepKind, steps: int, timing: Timing, backend: str = "emulator") -> str:
    """``"mean per step over 4 steps: min …, max …, the first … (TensorFlow's warm-up); wall-clock time …"``.

    What a report's ``wall_ms`` is, with the spread a mean would hide and whose clock it is; said
    again by a cell's report that folds several reports of one run (``_notebook.run_reports.collapse``).
    """
    what, first = CLOCKS[backend]
    why = f" ({first})" if timing.first_is_warm_up else f" ({kind} {timing.first_step} of its graph, after its warm-up)"
    return (
        f"mean per {kind} over {steps} {kind}s: min {timing.min_ms or 0.0:.2f} ms, max "
        f"{timing.max_ms or 0.0:.2f} ms, the first {timing.first_ms or 0.0:.2f} ms{why}; {what}"
    )


__all__ = [
    "StepKind",
    "StepRecord",
    "StepValues",
    "add_time",
    "has_inf_nan",
    "is_non_finite",
    "non_finite_indices",
    "time_label",
]
