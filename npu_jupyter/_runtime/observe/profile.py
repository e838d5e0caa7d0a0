"""Profiling: per-op timings of an emulated step as a Chrome trace and an Ascend-style op summary.

TensorFlow's ``RunMetadata.step_stats`` (``FULL_TRACE``) gives each executed node's start and
duration. We name every event by the user's op (the rewrite's rounding casts are folded out and their
time reported separately), tag it with the engine the plan chose (AI_CORE / AI_CPU / HOST), and write:

* ``trace_step_<n>.json`` — Chrome trace event format (``traceEvents`` with ``ph: "X"``, ``ts``/``dur``
  in microseconds, ``pid``/``tid``), which Perfetto and ``chrome://tracing`` open. One track per engine.
* ``op_summary_step_<n>.csv`` — the op_summary columns Ascend users know that a CPU run can fill
  (op, type, engine, shapes, the dtypes each op reads and writes on the device as the plan decided,
  times labelled as CPU emulation); the device-only columns (task, stream and model ids, wait time,
  block dim, formats) are left out rather than filled with constants.

Which runs are profiled (:func:`profiles_run`): the steps a user asked about, not every ``session.run``.
A run that only initialises variables is never traced (an init run plus 3 training steps gives 3
traces); when ``fp_point``/``bp_point`` name ops, only runs whose plan holds one of them are traced, as
those points mark the training iteration the adapter's training trace measures.

``profiling_options`` follows the adapter's JSON (tests/data/reference/ADAPTER-FACTS.md §2.2). ``output`` picks the
folder; ``training_trace`` with ``fp_point``/``bp_point`` adds markers at those ops; the remaining keys (``task_trace``,
``aicpu``, ``aic_metrics``, ...) are recorded in the trace metadata, since a CPU has no AI Core pipeline counters to
sample.
"""

from __future__ import annotations

import csv
import io
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from npu_jupyter._options import catalogue
from npu_jupyter._options.profiling import ProfilingOptionsError, adapter_profiling_fields
from npu_jupyter._runtime.report_records import EMULATED_TIME
from npu_jupyter._tensorflow_import import require_tensorflow

if TYPE_CHECKING:  # pragma: no cover
    from concurrent.futures import Future

    from npu_jupyter._plan.model import Plan
    from npu_jupyter._tf_types import Graph

    #: Per op: (op type, [(producer op, output index, static shape, dtype) per input]).
    GraphFacts = dict[str, tuple[str, list[tuple[str, int, list[int], str]]]]

# The JSON the adapter profiles with when profiling_options is empty (the option catalogue's).
DEFAULT_OPTIONS = catalogue.profiling_default()
# The op_summary columns the emulator can fill with something it measured or knows. Ascend's Model ID,
# Task ID, Stream ID, Task Wait Time, Block Dim and Input/Output Formats are left out: a CPU run has no
# streams, tasks, blocks or device formats, and constants under those names read as measurements.
#: What every measured time of the emulator is (the report's label; never an NPU time).
CPU_TIME = EMULATED_TIME  # "wall-clock time of the emulation on this CPU"

# The times are CPU times of the emulated step and the column names say so.
CSV_COLUMNS = [
    "Op Name",
    "OP Type",
    "Task Type",
    "Task Start Time(us, CPU emulation)",
    "Task Duration(us, CPU emulation)",
    "Input Shapes",
    "Input Data Types",
    "Output Shapes",
    "Output Data Types",
]
_TIDS = {"AI_CORE": 1, "AI_CPU": 2, "HOST": 3}


def parse_profiling_options(raw: str | dict[Any, Any] | None) -> dict[str, Any]:
    """The adapter's profiling_options JSON; empty means its documented default JSON."""
    try:
        return adapter_profiling_fields(raw)
    except ProfilingOptionsError as exc:
        if exc.json_msg is not None:
            raise ValueError(f"profiling_options is not valid JSON ({exc.json_msg}): {raw!r}") from None
        raise ValueError(
            f'profiling_options must be a JSON object such as {{"output": "./prof"}}, got {raw!r}'
        ) from None


@dataclass
class OpTiming:
    """One executed user op in one step (cast time of its rounding folded into ``cast_us``)."""

    name: str
    op_type: str
    engine: str
    start_us: float  # relative to the step start
    duration_us: float
    output_shapes: list[list[int]] = field(default_factory=list)
    output_dtypes: list[str] = field(default_factory=list)
    # each data input's dtype as the device reads it (the plan's, after the adapter's casts); empty: the graph's
    input_dtypes: list[str] = field(default_factory=list)


@dataclass
class StepProfile:
    """Timings of one step, in execution order."""

    step: int
    ops: list[OpTiming]
    cast_us: float = 0.0  # time spent in the emulator's rounding casts (not a device cost)
    trace_file: str | None = None
    op_summary_csv: str | None = None

    def op_times_us(self) -> dict[str, float]:
        """Op name -> total microseconds in this step."""
        out: dict[str, float] = {}
        for t in self.ops:
            out[t.name] = out.get(t.name, 0.0) + t.duration_us
        return out


def profiles_run(plan: Plan, fetches: list[str], options: dict[str, Any]) -> bool:
    """Whether this run is a step the user asked to profile (see the module doc for the rule)."""
    from npu_jupyter._runtime.observe.initializers import is_initializer_plan

    if is_initializer_plan(plan, list(fetches)):
        return False
    points = [str(options.get(key) or "") for key in ("fp_point", "bp_point")]
    points = [p for p in points if p]
    return not points or any(p in plan.ops for p in points)


def graph_facts(graph: Graph) -> GraphFacts:
    """Op name -> (op type, [(producer op, output index, static shape, dtype) per input]).

    Built once per graph version and reused every profiled step: looking ops up in the graph for each
    node of each step cost more than TensorFlow's own tracing.
    """
    cached = getattr(graph, "_npu_emu_facts", None)
    if cached is not None and cached[0] == graph.version:
        return cast("GraphFacts", cached[1])
    facts: GraphFacts = {}
    for op in graph.get_operations():
        inputs = []
        for t in op.inputs:
            dims = t.shape.as_list() if t.shape.rank is not None else []
            shape = [-1 if d is None else d for d in dims]
            inputs.append((t.op.name, t.value_index, shape, t.dtype.base_dtype.name))
        facts[op.name] = (op.type, inputs)
    graph._npu_emu_facts = (graph.version, facts)  # type: ignore[attr-defined]  # cached on the graph
    return facts


def collect(
    step_stats: Any,  # noqa: ANN401 - TensorFlow's StepStats proto (dev_stats -> node_stats)
    graph: Graph,
    plan: Plan | None,
    step: int,
    *,
    marker: str,
) -> StepProfile:
    """Turn ``RunMetadata.step_stats`` into user-op timings (nodes not in the user's graph dropped)."""
    require_tensorflow("profiling")
    from tensorflow.python.framework import dtypes

    facts = graph_facts(graph)
    rows: list[OpTiming] = []
    cast_us = 0.0
    seen: set[tuple[str, int]] = set()
    nodes = [ns for dev in step_stats.dev_stats for ns in dev.node_stats]
    origin = min((ns.all_start_micros for ns in nodes), default=0)
    names: dict[int, str] = {}
    for ns in nodes:
        name = ns.node_name.split(":")[0]
        duration = float(max(ns.all_end_rel_micros, ns.op_end_rel_micros, 1))
        if marker in name:
            cast_us += duration
            continue
        fact = facts.get(name)
        if fact is None:
            continue  # _SOURCE, _SINK, send/recv and helpers: not the user's
        key = (name, ns.all_start_micros)
        if key in seen:
            continue  # the same node reported by two collectors
        seen.add(key)
        decision = plan.ops.get(name) if plan is not None else None
        shapes = [[int(d.size) for d in o.tensor_description.shape.dim] for o in ns.output]
        types = []
        for o in ns.output:
            enum = o.tensor_description.dtype
            if enum:
                if enum not in names:
                    names[enum] = dtypes.as_dtype(enum).name
                types.append(names[enum])
        if decision is not None and decision.output_dtypes:
            types = list(decision.output_dtypes[: len(types)] or types)
        rows.append(
            OpTiming(
                name=name,
                op_type=fact[0],
                engine=decision.engine if decision is not None else "HOST",
                start_us=float(ns.all_start_micros - origin),
                duration_us=duration,
                output_shapes=shapes,
                output_dtypes=types,
                input_dtypes=list(decision.input_dtypes) if decision is not None else [],
            )
        )
    rows.sort(key=lambda r: r.start_us)
    return StepProfile(step=step, ops=rows, cast_us=cast_us)


def paths(out_dir: str, step: int) -> tuple[str, str]:
    """Where step ``step``'s trace and op summary go."""
    folder = Path(out_dir)
    return str(folder / f"trace_step_{step}.json"), str(folder / f"op_summary_step_{step}.csv")


def check_output_dir(path: object) -> str:
    """Make sure ``profiling_options`` ``output`` is a folder we can write to, creating it if missing.

    Checked once, before the first run (``read_run_settings``): otherwise a bad folder would only fail
    on the profile writer thread, after steps already ran. A path under a regular file, one that cannot
    be created, or a folder without write permission is one NpuConfigError naming the option and the
    path, and nothing is created then. Returns the folder as given (traces are written under it).
    """
    from npu_jupyter._options.errors import NpuConfigError

    text = str(path or "./")
    folder = Path(os.path.expanduser(text))

    def refuse(why: str) -> NpuConfigError:
        return NpuConfigError(
            f"profiling_options output {text!r}: {why}. Give a folder that exists or can be "
            f"created, and that you can write to."
        )

    ancestor = folder
    while not os.path.lexists(ancestor) and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if os.path.lexists(ancestor) and not ancestor.is_dir():
        where = "is" if ancestor == folder else f"is under {str(ancestor)!r}, which is"
        raise refuse(f"{where} a regular file, not a folder")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        where = "" if ancestor == folder else f" (its nearest existing folder {str(ancestor)!r})"
        raise refuse(f"the folder{where} is not writable")
    if ancestor != folder:
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise refuse(f"cannot be created ({exc.strerror or exc})") from None
    return text


def write(profile: StepProfile, facts: GraphFacts, options: dict[str, Any], out_dir: str) -> StepProfile:
    """Write the step's Chrome trace and op summary CSV under ``out_dir`` (created if missing).

    ``facts`` is :func:`graph_facts` of the user's graph (not the graph itself, so a worker thread
    never reads a graph the user may be extending).
    """
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    trace_path, csv_path = paths(out_dir, profile.step)
    _atomic_write(Path(trace_path), json.dumps(chrome_trace(profile, options), separators=(",", ":")))
    _atomic_write(Path(csv_path), op_summary_csv(profile, facts))
    profile.trace_file = trace_path
    profile.op_summary_csv = csv_path
    return profile


class BackgroundWriter:
    """Writes profile files on one worker thread, so disk syncs stay off the step's critical path.

    Up to ``max_pending`` steps may wait to be written (a burst of fast steps is absorbed); beyond that
    ``submit`` waits for the oldest, so memory stays bounded and a long run is paced by the disk.
    ``wait`` (called when the session closes) returns once every file is on disk.
    """

    def __init__(self, max_pending: int = 64) -> None:
        from concurrent.futures import ThreadPoolExecutor

        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="npu_jupyter_profile")
        self._pending: list[Future[StepProfile]] = []
        self._max = max_pending

    def submit(
        self,
        profile: StepProfile,
        graph: Graph | None,
        options: dict[str, Any],
        out_dir: str,
        facts: GraphFacts | None = None,
    ) -> StepProfile:
        """Write ``profile``'s files in the background; at most a few steps are pending at once.

        ``facts`` (:func:`graph_facts` shape) are read from ``graph`` unless given (a traced function's
        call tree has several graphs).
        """
        self._pending = [f for f in self._pending if not f.done() or f.result() is None]
        while len(self._pending) >= self._max:
            self._pending.pop(0).result()
        profile.trace_file, profile.op_summary_csv = paths(out_dir, profile.step)
        if facts is None:
            if graph is None:
                raise ValueError("BackgroundWriter.submit needs the profiled graph or its facts")
            facts = graph_facts(graph)  # on the caller's thread: the graph cannot change under us here
        self._pending.append(self._pool.submit(write, profile, facts, options, out_dir))
        return profile

    def wait(self) -> None:
        """Block until every submitted step is on disk; re-raise the first write error."""
        pending, self._pending = self._pending, []
        for future in pending:
            future.result()

    def close(self) -> None:
        """Wait for pending profile files, then stop the writer thread."""
        try:
            self.wait()
        finally:
            self._pool.shutdown(wait=True)


def chrome_trace(profile: StepProfile, options: dict[str, Any]) -> dict[str, Any]:
    """Chrome trace event JSON (object form) for one step; Perfetto opens it."""
    events: list[dict[str, Any]] = [
        {"name": "process_name", "ph": "M", "pid": 1, "tid": 0, "args": {"name": "npu_jupyter emulator"}},
    ]
    for engine, tid in _TIDS.items():
        events.append({"name": "thread_name", "ph": "M", "pid": 1, "tid": tid, "args": {"name": engine}})
    for t in profile.ops:
        events.append(
            {
                "name": t.name,
                "cat": t.op_type,
                "ph": "X",
                "ts": round(t.start_us, 3),
                "dur": round(t.duration_us, 3),
                "pid": 1,
                "tid": _TIDS.get(t.engine, 3),
                "args": {"op_type": t.op_type, "task_type": t.engine, "output_shapes": t.output_shapes},
            }
        )
    if str(options.get("training_trace", "off")).lower() == "on":
        events.extend(_training_trace_events(profile, options))
    return {
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": {
            "step": profile.step,
            "profiling_options": {k: str(v) for k, v in sorted(options.items())},
            "emulator_cast_us": round(profile.cast_us, 3),
            "note": "timings of TensorFlow CPU kernels under the emulated precisions, not of an NPU",
        },
    }


def _training_trace_events(profile: StepProfile, options: dict[str, Any]) -> list[dict[str, Any]]:
    """Iteration span plus FP/BP markers (first op / last op when fp_point/bp_point are empty)."""
    if not profile.ops:
        return []
    by_name = {t.name: t for t in profile.ops}
    fp = by_name.get(str(options.get("fp_point") or "")) or profile.ops[0]
    bp = by_name.get(str(options.get("bp_point") or "")) or profile.ops[-1]
    end = max(t.start_us + t.duration_us for t in profile.ops)
    return [
        {"name": "Iteration", "ph": "X", "ts": 0, "dur": round(end, 3), "pid": 1, "tid": 0, "args": {}},
        {"name": f"FP_POINT {fp.name}", "ph": "i", "s": "p", "ts": round(fp.start_us, 3), "pid": 1, "tid": 0},
        {
            "name": f"BP_POINT {bp.name}",
            "ph": "i",
            "s": "p",
            "ts": round(bp.start_us + bp.duration_us, 3),
            "pid": 1,
            "tid": 0,
        },
    ]


def op_summary_csv(profile: StepProfile, facts: GraphFacts) -> str:
    """op_summary-style CSV text, one row per executed user op."""
    shapes = {t.name: t.output_shapes for t in profile.ops}
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(CSV_COLUMNS)
    for t in profile.ops:
        in_shapes, in_types = _input_facts(facts, t.name, shapes)
        if len(t.input_dtypes) == len(in_types):  # what the op reads on the device, as its output column says
            in_types = t.input_dtypes
        writer.writerow(
            [
                t.name,
                t.op_type,
                t.engine,
                f"{t.start_us:.3f}",
                f"{t.duration_us:.3f}",
                _shape_text(in_shapes),
                ";".join(x.upper() for x in in_types),
                _shape_text(t.output_shapes),
                ";".join(x.upper() for x in t.output_dtypes),
            ]
        )
    return buffer.getvalue()


def _input_facts(facts: GraphFacts, name: str, shapes: dict[str, list[list[int]]]) -> tuple[list[list[int]], list[str]]:
    """Input shapes as the producers reported them this step, else the graph's static shapes."""
    in_shapes, in_types = [], []
    for producer, index, static, dtype in facts[name][1]:
        produced = shapes.get(producer)
        in_shapes.append(produced[index] if produced and index < len(produced) else static)
        in_types.append(dtype)
    return in_shapes, in_types


def _shape_text(shapes: list[list[int]]) -> str:
    return ";".join(",".join(str(d) for d in s) for s in shapes)


def _atomic_write(path: Path, text: str) -> None:
    """Atomic write (temp file in the same folder, fsync, os.replace; see ``write_atomic``)."""
    from npu_jupyter._options.storage import write_atomic

    write_atomic(path, text)
