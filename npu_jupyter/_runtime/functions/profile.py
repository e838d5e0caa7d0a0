"""Profiling inside traced ``tf.function`` calls: per-op CPU times of each call, as for session steps.

A session step is traced with ``RunOptions.FULL_TRACE``; an eager call of a traced function has no such
option (TensorFlow's eager run metadata comes back empty for function bodies). TensorFlow's profiler
does see them: around a profiled call, :class:`CallProfiler` runs a profiler session (its default levels: host tracer,
no Python tracer) and reads the host plane of the XSpace it exports, whose ``tf_Compute`` events are
named ``<node>:<kernel>`` with a start and a duration. Each node of the function (or of a function it
calls) becomes one :class:`~npu_jupyter._runtime.observe.profile.OpTiming`; the rounding casts the emulator
inserted are summed apart, as for sessions. The files written are the same Chrome trace and op summary
(:func:`npu_jupyter._runtime.observe.profile.write`), one folder per function under the profiling ``output``.

All times are CPU times of the emulated call on this machine, never NPU times. Only one profiler
session can run in a process: when another is active (the user's own ``tf.profiler``), the call runs
unprofiled and the report says why.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import tempfile
from types import ModuleType
from typing import TYPE_CHECKING

from npu_jupyter._plan.functional_flow import FUNCTION_CALLS
from npu_jupyter._runtime.observe.profile import OpTiming, StepProfile
from npu_jupyter._runtime.rewrite import ROUND_MARKER

if TYPE_CHECKING:
    from npu_jupyter._plan.model import OpDecision
    from npu_jupyter._runtime.observe.profile import GraphFacts
    from npu_jupyter._tf_types import Graph, Tensor

#: Threads of the host plane that run TensorFlow kernels (inter-op pool threads carry this prefix).
_COMPUTE_LINE = "tf_Compute"


def xplane_module() -> ModuleType | None:
    """TensorFlow's XSpace protobuf module, wherever this version keeps it (None when it has none)."""
    import importlib

    for name in ("tensorflow.tsl.profiler.protobuf.xplane_pb2", "tensorflow.core.profiler.protobuf.xplane_pb2"):
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    return None


class CallProfiler:
    """Profile one call: ``with CallProfiler() as p: call()``; then ``p.events`` or ``p.error``.

    ``events`` are ``(node name, start µs, duration µs)`` of the kernels that ran, start relative to the
    first one; ``error`` says why nothing was recorded (another profiler active, no XSpace module).
    """

    def __init__(self) -> None:
        self.events: list[tuple[str, float, float]] = []
        self.error: str | None = None
        self._folder: str | None = None

    def __enter__(self) -> CallProfiler:
        # TF2-only module (tf.function emulation needs TF >= 2.14): the TF 2 profiler, not tf.compat.v1's
        from tensorflow.python.profiler import profiler_v2

        if xplane_module() is None:
            self.error = "this TensorFlow has no XSpace protobuf module to read profiles from"
            return self
        self._folder = tempfile.mkdtemp(prefix="npu_jupyter_fn_profile_")
        try:
            # no ProfilerOptions: TensorFlow's defaults are the levels wanted (host tracer 2, Python tracer
            # off), and TF 2.21 drops options passed from Python with four C++ warnings per profiled call
            profiler_v2.start(self._folder)
        except Exception as exc:  # noqa: BLE001 - TF raises AlreadyExistsError/UnavailableError variants
            self.error = (
                f"TensorFlow's profiler could not start ({type(exc).__name__}: another profiling session is active?)"
            )
            self._cleanup()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._folder is None:
            return
        from tensorflow.python.profiler import profiler_v2

        try:
            profiler_v2.stop()
            self.events = _read_events(self._folder)
        except Exception as error:  # noqa: BLE001 - a profile we cannot read must not fail the user's call
            self.error = f"the profile of this call could not be read ({type(error).__name__}: {error})"
        finally:
            self._cleanup()

    def _cleanup(self) -> None:
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None


def _read_events(folder: str) -> list[tuple[str, float, float]]:
    """Kernel events of the exported XSpace: (node, start µs from the first, duration µs)."""
    files = glob.glob(os.path.join(folder, "**", "*.xplane.pb"), recursive=True)
    module = xplane_module()
    if not files or module is None:  # CallProfiler does not start without the module
        return []
    space = module.XSpace()
    with open(files[0], "rb") as fh:
        space.ParseFromString(fh.read())
    raw: list[tuple[str, float, float]] = []
    for plane in space.planes:
        if not plane.name.startswith("/host:"):
            continue
        names = plane.event_metadata
        for line in plane.lines:
            if not line.name.startswith(_COMPUTE_LINE):
                continue
            base_ps = line.timestamp_ns * 1000
            for event in line.events:
                label = names[event.metadata_id].name
                node, sep, _kernel = label.rpartition(":")
                if not sep:
                    continue
                raw.append((node, (base_ps + event.offset_ps) / 1e6, event.duration_ps / 1e6))
    origin = min((start for _, start, _ in raw), default=0.0)
    return sorted(((node, start - origin, dur) for node, start, dur in raw), key=lambda e: e[1])


def call_profile(
    events: list[tuple[str, float, float]],
    decisions: dict[str, OpDecision],
    step: int,
    shapes: dict[str, list[list[int]]] | None = None,
) -> StepProfile:
    """The call's per-op timings: events of the function's own nodes, rounding casts summed apart.

    ``decisions`` maps node names of the function and the functions it calls to their plan decisions
    (op type, engine, decided dtypes); events of other nodes (TensorFlow's helpers) are dropped.
    ``shapes`` are the nodes' traced output shapes (:func:`tree_facts`).
    """
    rows: list[OpTiming] = []
    cast_us = 0.0
    for node, start, duration in events:
        if ROUND_MARKER in node:
            cast_us += duration
            continue
        node = _body_name(node, decisions)
        decision = decisions.get(node)
        if decision is None:
            continue
        rows.append(
            OpTiming(
                name=node,
                op_type=decision.op_type,
                engine=decision.engine,
                start_us=start,
                duration_us=max(duration, 0.001),
                output_shapes=(shapes or {}).get(node, []),
                output_dtypes=list(decision.output_dtypes or []),
                input_dtypes=list(decision.input_dtypes),
            )
        )
    return StepProfile(step=step, ops=rows, cast_us=cast_us)


# Ops that call a function (FUNCTION_CALLS): TensorFlow inlines the callee and prefixes its nodes
# with the call's name.


def _body_name(node: str, decisions: dict[str, OpDecision]) -> str:
    """An event's node in its own function's spelling: ``<call>/<op>`` of an inlined callee is ``<op>``."""
    while node not in decisions and "/" in node:
        head, _, rest = node.partition("/")
        call = decisions.get(head)
        if call is None or call.op_type not in FUNCTION_CALLS:
            break
        node = rest
    return node


def function_folder(output: str, function: str) -> str:
    """Where a function's profiles go: a folder named for it under the profiling ``output``."""
    safe = re.sub(r"[^A-Za-z0-9_-]+", "_", function) or "function"  # no dots: never ".." or a hidden name
    return os.path.join(output, safe)


def tree_facts(graphs: list[Graph]) -> tuple[GraphFacts, dict[str, list[list[int]]]]:
    """Op facts (``graph_facts`` shape, for the op summary) and static output shapes of a function tree.

    ``graphs`` are the FuncGraphs of a function and of the functions it calls; a node name that occurs
    in two of them keeps the first (the top-level function's).
    """
    from npu_jupyter._runtime.observe.profile import graph_facts

    facts: GraphFacts = {}
    shapes: dict[str, list[list[int]]] = {}
    for graph in graphs:
        for name, fact in graph_facts(graph).items():
            facts.setdefault(name, fact)
        for op in graph.get_operations():
            if op.name not in shapes:
                shapes[op.name] = [_static_shape(t) for t in op.outputs]
    return facts, shapes


def _static_shape(tensor: Tensor) -> list[int]:
    """A tensor's traced shape, -1 for an unknown dimension ([] for unknown rank)."""
    if tensor.shape.rank is None:
        return []
    return [-1 if d is None else int(d) for d in tensor.shape.as_list()]


__all__ = ["CallProfiler", "call_profile", "function_folder", "tree_facts", "xplane_module"]
