"""TF2 code on the emulator: every ``tf.function`` a cell runs, planned and run in the decided precisions.

Keras ``fit``/``evaluate``/``predict`` and custom GradientTape loops run traced functions: FunctionDefs
in the eager context's library, called by name. While :class:`FunctionEmulation` is active, the first
eager call of each function plans its graph and the graphs of the functions it calls
(``AtomicFunction.children``), and registers, under the same names, definitions with the plan's
storage rounding (:mod:`npu_jupyter._runtime.functions.rewrite`). Calls are timed (CPU time of the
emulation) and counted per top-level function; leaving the context puts the original definitions
back, so code after the cell runs as before.

Observation, as for sessions (:mod:`.npu_jupyter._runtime.functions.observe_nodes`, :mod:`.npu_jupyter._runtime.functions.findings`): when the plan
lowers precision, or ``enable_dump_debug`` / ``enable_dump`` is set, each rewritten body also gets an
observer node that hands the stored (rounded) values to Python during the call. A call that returns
inf/NaN then names the first op that went non-finite (topological order, descending into called
functions), with its decided dtype and whether it was rounded; ``enable_dump_debug`` fills
``overflow_ops`` / ``first_overflow`` and writes overflow dumps; ``enable_dump`` writes each call
``dump_step`` selects (step = call index) in the session dump format, readable with ``load_dump``.
With ``profiling_mode`` each call is traced by TensorFlow's profiler (:mod:`.npu_jupyter._runtime.functions.profile`): per-op
CPU times, a Chrome trace and an op summary per call. Without any of these nothing is added, and a
float32-preserving cell runs the original functions.

Each function is planned with the TF2 adapter's own placement rule (``plan(..., adapter="tf2")``,
:mod:`npu_jupyter._plan.tf2.placement`: npu_device's NodePlacer), and each report says what that
prediction models and what it approximates (:data:`TF2_RULE_NOTE`; :data:`KERAS3_NOTE` when a Keras 3
entry point traced the graph). A report shows the called function's plan joined with the plans of
the functions it calls (:mod:`.npu_jupyter._runtime.functions.tree`), so its counts cover the whole call tree; it is titled
by :func:`~npu_jupyter._runtime.functions.labels.label`. A ``jit_compile=True`` function
runs without XLA while it is emulated (XLA would simplify the float16 round trips away and cannot run
the observer node; the device compiles with GE), and its report says so. Limits: TensorFlow ≥ 2.14
(the ``AtomicFunction`` call path).

Drift (``reference=True``): a session's float32 reference reruns the step, but a function cannot be
rerun — Keras train, test and predict functions read their data from an iterator and train functions
update variables, so a second run would consume the next batch and step the model twice. Instead each
rewritten body also gets a float32 shadow of its pure ops, computed in the same call, and
``report.drift`` holds each op's worst drift over the calls (:mod:`.npu_jupyter._runtime.functions.reference`, which states
where the shadow starts again: calls, loops, branches, variable reads, iterators).
"""

from __future__ import annotations

import contextlib
import time
from typing import TYPE_CHECKING, Any, Callable

from npu_jupyter._runtime.functions.call_options import without_grappler
from npu_jupyter._runtime.functions.labels import (
    caller,
    entry_points,
    helper_kind,
    keras3_entry,
    label,
    title_entries,
)
from npu_jupyter._runtime.functions.library import call_tree, function_name, register
from npu_jupyter._runtime.functions.retraces import Trace, note_retraces, trace_of
from npu_jupyter._runtime.functions.tree import tree_plan
from npu_jupyter._runtime.functions.update_note import update_note
from npu_jupyter._runtime.observe.observers import ProfileSink
from npu_jupyter._runtime.observe.run_settings import read_run_settings
from npu_jupyter._runtime.observe.step_record import StepRecord, add_time
from npu_jupyter._runtime.report import RunReport
from npu_jupyter._runtime.report_records import FunctionInfo

if TYPE_CHECKING:
    from npu_jupyter._options.config import ConfigSource
    from npu_jupyter._plan.model import OpDecision, Plan
    from npu_jupyter._runtime.functions.observe_nodes import FunctionObserver, Observation
    from npu_jupyter._runtime.functions.profile import CallProfiler
    from npu_jupyter._runtime.functions.reference import DriftLog, FunctionReference
    from npu_jupyter._runtime.functions.rewrite import RewrittenFunction, StoredRefs
    from npu_jupyter._runtime.observe.profile import GraphFacts, StepProfile
    from npu_jupyter._runtime.rewrite import Rounding
    from npu_jupyter._tf_types import AtomicFunction, EagerContext, FunctionDef, Graph

#: Said in every TF2 report: whose rule placed the ops, and what the prediction approximates.
TF2_RULE_NOTE = (
    "TF2 code: placement predicted with the TF2 adapter's own rule (npu_device NodePlacer): a function "
    "whose ops are all in npu_supported_ops.json compiles whole on the NPU; otherwise unsupported ops, and "
    "ops joined to them by string/resource/variant tensors, run on the CPU. Approximated: op support comes "
    "from the bundled npu_supported_ops.json unless CANN is installed; captured resources read by variable "
    "ops are taken to be NPU variables (created after npu_device.open().as_default()); each function of the "
    "call tree is planned on its own; NPU_LOOP_SIZE device loops and dynamic shapes are not modelled"
)

#: Said when Keras 3 built the traced graph: the device would receive another graph.
KERAS3_NOTE = (
    "Keras 3 built this graph (TensorFlow >= 2.16): the TF2 adapter runs TensorFlow 2.6.5 with Keras 2, whose "
    "fit/evaluate/predict trace other functions (train_function and its step function, not Keras 3's "
    "multi_step_on_iterator and one_step_on_data) with other ops, so this placement is a prediction for the "
    "graph traced here, not for the one the device would receive"
)


def supported() -> bool:
    """True when this TensorFlow calls traced functions through ``AtomicFunction`` (TF ≥ 2.14)."""
    try:
        from tensorflow.python.eager.polymorphic_function import atomic_function  # noqa: F401
    except ImportError:
        return False
    return True


def setup_note(seconds: float, functions: int) -> str:
    """What a function's report says of the time spent before its first call (none of its call times hold it).

    Planning and rewriting a large Keras step (densenet, 17,859 ops in 9 functions) took 42 s that a
    user's own timer counts in the first steps and no call time of the report showed.
    """
    what = "the function" if functions == 1 else f"the function and the {functions - 1} it calls"
    took = f"{seconds:.1f} s" if seconds >= 1 else f"{seconds * 1000:.0f} ms"
    return (
        f"Emulation set-up: {took} wall-clock on this CPU before the first call, planning and rewriting "
        f"{what}; the call times above do not include it (a timer around the step does)"
    )


class FunctionEmulation:
    """Emulate the config's precisions in every traced function called eagerly inside the ``with`` block.

    ``reports`` maps each top-level function name to its :class:`RunReport`: the plan of that function
    joined with the plans of the functions it calls (:func:`~.npu_jupyter._runtime.functions.tree.tree_plan`), the roundings of
    all of them, calls and CPU time. ``reference=True``
    also fills ``RunReport.drift`` from a float32 shadow of each body (default off: nothing is added).
    """

    def __init__(
        self,
        config: ConfigSource,
        *,
        soc: str | None = None,
        plan_fn: Callable[..., Plan] | None = None,
        dump_budget_bytes: int | None = None,
        reference: bool = False,
    ) -> None:
        from npu_jupyter._options.config import as_snapshot
        from npu_jupyter._runtime.functions.findings import FunctionFindings
        from npu_jupyter._runtime.functions.observe_nodes import CallLog

        self.config = as_snapshot(config)  # npu_device has no mix_compile_mode: its own rule mixes when needed
        self.soc = soc
        self._plan_fn = plan_fn
        self.reports: dict[str, RunReport] = {}
        self._originals: dict[str, FunctionDef] = {}  # function name -> original FunctionDef
        self._handled: dict[str, tuple[RewrittenFunction | None, Plan | None]] = {}  # function name -> both
        self._context: EagerContext | None = None
        self._saved: Callable[..., Any] | None = None
        self.settings = read_run_settings(self.config)  # a bad dump_path fails here, before any call
        self._log = CallLog()
        self._findings = FunctionFindings(self.settings, dump_budget_bytes, reference=reference)
        self._observers: dict[str, FunctionObserver] = {}  # function name -> its observer (observed ones)
        self._trees: dict[str, list[str]] = {}  # top-level function -> the functions of its call tree
        self._traces: dict[str, Trace] = {}  # top-level function -> its tf.function and inputs
        self._xla_off: list[str] = []  # functions whose jit_compile mark the emulation removed
        self._graphs: dict[str, Graph] = {}  # function name -> its traced FuncGraph (profile facts)
        self._profiles = ProfileSink()
        self._facts: dict[str, tuple[GraphFacts, dict[str, list[list[int]]]]] = {}  # profile facts per tree
        # drift: a float32 shadow of each body, compared in the same call (function_reference)
        self.reference = reference
        self._references: dict[str, FunctionReference] = {}  # function name -> its float32 shadow
        self._drift_log: DriftLog | None = None
        self._paused = False  # pause(): TensorFlow's own call path and definitions are back for now

    # ----------------------------------------------------------------------------- context manager
    def __enter__(self) -> FunctionEmulation:
        self._patch()
        return self

    def _patch(self) -> None:
        """Route every eager call of a traced function through the emulation."""
        from tensorflow.python.eager.polymorphic_function import atomic_function

        self._saved = atomic_function.AtomicFunction.call_flat
        emulation = self
        original = self._saved

        def call_flat(function: AtomicFunction, *args: Any, **kwargs: Any) -> Any:  # noqa: ANN401 - TensorFlow's outputs
            from tensorflow.python.eager import context

            if not context.executing_eagerly():
                return original(function, *args, **kwargs)
            emulation._prepare(function)
            emulation._attach_estimate(function, args)
            where = caller(entry_points())  # fit's validation and evaluate run one test function
            dumped = emulation._begin(function)
            profiler = emulation._profiler(function)
            start = time.perf_counter()
            try:
                with profiler, without_grappler():
                    result = original(function, *args, **kwargs)
            finally:
                observations = emulation._log.end()
            wall_ms = (time.perf_counter() - start) * 1000.0
            emulation._called_from(function, where)  # before _record, whose first act counts the call
            emulation._record(emulation._call_record(function, wall_ms, result, observations, dumped, profiler))
            return result

        atomic_function.AtomicFunction.call_flat = call_flat

    def _unpatch(self) -> None:
        """Put back TensorFlow's call path and the original definitions (the rewritten ones are kept)."""
        from tensorflow.python.eager.polymorphic_function import atomic_function

        atomic_function.AtomicFunction.call_flat = self._saved
        self._profiles.close()  # every profiled call's files are on disk when the cell ends
        for name, original in self._originals.items():
            register(self._context, name, original)

    def pause(self) -> None:
        """Stop emulating for a while (another emulation runs, e.g. a ``%%npu`` cell's), keeping the reports.

        The device's emulation outside cells pauses for each ``%%npu`` cell: when it resumes, a function
        it ran before the cell goes on counting in the same report (its calls, call indices, dump steps
        and first findings continue), rather than starting a second report of the same function.
        """
        if not self._paused:
            self._unpatch()
            self._paused = True

    def resume(self) -> None:
        """Emulate again after :meth:`pause`: the call path and this emulation's rewritten definitions."""
        if not self._paused:
            return
        self._paused = False
        self._patch()
        for name in self._originals:
            rewritten = self._handled[name][0]
            if rewritten is not None:
                register(self._context, name, rewritten.definition)

    def __exit__(self, *exc: object) -> None:
        if not self._paused:  # a paused emulation put everything back already
            self._unpatch()
        self._paused = False
        self._originals.clear()
        for observer in self._observers.values():
            observer.release()
        for shadow in self._references.values():
            shadow.release()

    def reconfigure(self, config: ConfigSource) -> None:
        """Emulate under ``config`` from the next function on (the TF2 adapter read its options at open()).

        A script opens the NPU device (``npu_device.open().as_default()``) with the options it set, usually
        before it traces anything; functions planned before keep their plans. Raises like ``__init__``
        (a bad dump_path) and then changes nothing.
        """
        from npu_jupyter._options.config import as_snapshot
        from npu_jupyter._runtime.functions.findings import FunctionFindings

        snapshot = as_snapshot(config)
        settings = read_run_settings(snapshot)
        self.config, self.settings = snapshot, settings
        self._findings = FunctionFindings(settings, self._findings.dump_budget, reference=self.reference)

    # ----------------------------------------------------------------------------- per function
    def _prepare(self, function: AtomicFunction) -> None:
        """Plan and rewrite ``function`` and everything it calls, once per emulation."""
        key = function_name(function)
        if key in self.reports:
            return
        started = time.perf_counter()
        self._context = function._bound_context
        tree = [function, *call_tree(function)]
        planned = [(member, self._planned(member)) for member in tree]
        flags = any(rounded for _, (_, rounded) in planned)  # the plan lowers precision: always check
        observing = flags or self.settings.enable_dump or self.settings.enable_dump_debug
        drop_xla = observing or self.reference or any(rounded for _, (_, rounded) in planned)
        plans: list[tuple[str, Any]] = []
        rewrites = []
        for member, (plan, rounded) in planned:
            rewritten = self._rewrite(member, plan, rounded, flags, observing, drop_xla)
            if plan is not None:
                plans.append((function_name(member), plan))
            if rewritten is not None:
                rewrites.append((function_name(member), rewritten))
        # the report shows the called function's plan, joined with the plans of the functions it calls
        main = tree_plan(plans) if plans else None
        main_name = plans[0][0] if plans else key
        # named as the report's plan names ops: plain in the called function, function/op in its callees
        from npu_jupyter._runtime.functions.findings import op_name

        emulation = {op_name(fn, op, main_name): how for fn, rw in rewrites for op, how in rw.emulation().items()}
        # main is None when no function had a plannable graph (its report still renders, without ops)
        report = RunReport(plan=main, backend="emulator", fetches=[key], steps=0, wall_ms=0.0)
        report.emulation = emulation
        report.rounded_tensors = sum(len(rewritten.roundings) for _, rewritten in rewrites)
        report.notes = [TF2_RULE_NOTE]
        if keras3_entry():
            report.notes.insert(0, KERAS3_NOTE)
        optimizer = update_note(main)
        if optimizer is not None:
            report.notes.append(optimizer)
        lowered = main is not None and any(d.precision_changed for d in main.ops.values())
        if lowered and not emulation:
            report.warnings.append(
                "the plan lowers precision but no float32 tensor of this function was "
                "rounded (the lowered tensors are not float32)"
            )
        xla_off = [name for name in self._xla_off if name in {function_name(m) for m in tree}]
        if xla_off:
            report.notes.append(
                f"jit_compile=True is off in the emulated functions ({', '.join(xla_off)}): XLA would drop "
                "the float16 round trips (and cannot run the observer nodes); the device compiles the graph "
                "with GE, not XLA"
            )
        report.function = FunctionInfo(
            label=label(key),  # "Keras fit (train function)" while Keras' frames are live
            plan_function=main_name,
            functions=tuple(function_name(m) for m in tree),
            helper=helper_kind(key),  # TensorFlow's initialize_variables: the cell's "also ran" line
            titled=caller(title_entries(entry_points())),  # where the label says: fit's validation, evaluate
        )
        report.notes.append(setup_note(time.perf_counter() - started, len(tree)))
        self._graphs.update({function_name(m): m.graph for m in tree if getattr(m, "graph", None) is not None})
        self._trees[key] = [function_name(m) for m in tree]
        self.reports[key] = report
        self._traces[key] = trace_of(function)
        note_retraces(self.reports, self._traces, key)  # a second trace of one tf.function: say which is which

    def _attach_estimate(self, function: AtomicFunction, args: tuple[Any, ...]) -> None:
        """Give the report of ``function`` the cost model's estimate, computed when it is first read.

        Attached at the first call, whose arguments are the host tensors each call copies to the device
        (:func:`~npu_jupyter.cost.attach.function_estimate`); a later call of the same trace has the same
        shapes, as TensorFlow traces again for others.
        """
        from npu_jupyter.cost.attach import PendingEstimate

        key = function_name(function)
        report = self.reports[key]
        if report.cost is not None or report.plan is None or report.function is None:
            return
        main = report.function.plan_function
        members = [
            ("" if name == main else f"{name}/", self._graphs[name])
            for name in self._trees[key]
            if name in self._graphs
        ]
        graph = self._graphs.get(key)
        fed = host_arguments(graph, args) if graph is not None else {}
        fetches = [t.name for t in getattr(graph, "outputs", ())]  # a FuncGraph's returned tensors
        report.cost = PendingEstimate.of_function(report.plan, members, fed, fetches)

    def _planned(self, function: AtomicFunction) -> tuple[Plan | None, list[Rounding]]:
        """(Plan or None, the float32 tensors it rounds) of one function, planned once per emulation."""
        from npu_jupyter._runtime.rewrite import roundings

        name = function_name(function)
        if name in self._handled:
            rewritten, plan = self._handled[name]
            return plan, list(rewritten.roundings) if rewritten is not None else []
        graph = getattr(function, "graph", None)
        if graph is None or not graph.get_operations():
            return None, []
        plan = self._plan(graph)
        return plan, roundings(plan, graph)

    def _rewrite(
        self,
        function: AtomicFunction,
        plan: Plan | None,
        rounded: list[Rounding],
        flags: bool,
        observing: bool,
        drop_xla: bool,
    ) -> RewrittenFunction | None:
        """The RewrittenFunction of one function (None without a plan); registers it when it changed.

        ``drop_xla``: the call tree rounds or observes something, so ``jit_compile`` is turned off in
        it (see :func:`~npu_jupyter._runtime.functions.rewrite.xla_marked`).
        """
        from npu_jupyter._runtime.functions.observe_nodes import FunctionObserver
        from npu_jupyter._runtime.functions.rewrite import rewrite_function, xla_marked

        name = function_name(function)
        if name in self._handled:
            return self._handled[name][0]
        if plan is None:
            self._handled[name] = (None, None)
            return None
        definition = function.definition
        keys = {(r.op, r.kind, r.slot) for r in rounded}
        observer: FunctionObserver | None = None
        if observing:
            observer = FunctionObserver(name, plan, function.graph, keys, self.settings, flags, self._log)
        # the hook also makes calls into observed callees control returns, so it runs without own watches
        hook = observer.add_nodes if observer is not None else None
        shadow = self._shadow(name, definition, function.graph, keys)
        rewritten = rewrite_function(definition, function.graph, plan, hook, drop_xla=drop_xla, reference=shadow)
        if drop_xla and xla_marked(definition):
            self._xla_off.append(name)
        if observer is not None and observer.active:
            self._observers[name] = observer
        if rewritten.definition is not definition:
            self._originals.setdefault(name, definition)
            register(function._bound_context, name, rewritten.definition)
        self._handled[name] = (rewritten, plan)
        return rewritten

    def _plan(self, graph: Graph) -> Plan:
        plan_fn = self._plan_fn
        if plan_fn is None:
            from npu_jupyter._plan.planner import plan as default_plan

            return default_plan(graph, self.config, soc=self.soc, adapter="tf2")
        return plan_fn(graph, self.config, soc=self.soc)

    def _begin(self, function: AtomicFunction) -> bool:
        """A call starts: open its observation log; True when ``dump_step`` selects it (and it fits)."""
        report = self.reports[function_name(function)]
        dumped = self._findings.dump_now(report, function_name(function), report.steps)
        self._log.begin(dumped)
        return dumped

    def _call_record(
        self,
        function: AtomicFunction,
        wall_ms: float,
        result: object,
        observations: list[Observation],
        dumped: bool,
        profiler: CallProfiler | contextlib.nullcontext[None],
    ) -> StepRecord:
        """The record of the call that just ran: the function, its call index, time, outputs, observations."""
        from npu_jupyter._runtime.functions.profile import CallProfiler

        key = function_name(function)
        report = self.reports[key]
        return StepRecord(
            "call",
            key,
            report.steps,  # the calls so far: this call's index
            report.plan,
            wall_ms,
            tuple(result) if isinstance(result, (list, tuple)) else (result,),
            dump_now=dumped,
            observations=tuple(observations),
            profile=self._call_profile(key, profiler, report.steps),
            unprofiled=profiler.error if isinstance(profiler, CallProfiler) else None,
        )

    def _record(self, record: StepRecord) -> None:
        """Count the call, add its CPU time, and fill the report from what its observers saw."""
        key = record.name
        report = self.reports[key]
        add_time(report, record)
        observers = {name: self._observers[name] for name in self._trees.get(key, []) if name in self._observers}
        if record.non_finite_outputs or record.observations or record.dump_now:
            self._findings.after_call(report, record, observers)
        self._findings.count_check(report, observers)
        if self.reference:
            self._record_drift(report, key)
        if record.unprofiled is not None:
            note = f"profiling: {record.unprofiled}; this call ran unprofiled"
            if note not in report.warnings:
                report.warnings.append(note)
        if record.profile is not None:
            self._add_profile(report, key, record.profile)

    def _called_from(self, function: AtomicFunction, where: str) -> None:
        """Count the call that just ran as coming from ``where`` (:func:`~.labels.caller`)."""
        report = self.reports[function_name(function)]
        if report.function is not None:
            report.function = report.function.called(where)

    # ----------------------------------------------------------------------------- drift: float32 shadow
    def _shadow(
        self, name: str, definition: FunctionDef, graph: Graph, keys: set[tuple[str, str, int]]
    ) -> Callable[[FunctionDef, StoredRefs], None] | None:
        """The hook adding ``name``'s float32 shadow and drift nodes (None when drift is off)."""
        if not self.reference:
            return None
        from npu_jupyter._runtime.functions.reference import DriftLog, FunctionReference

        if self._drift_log is None:
            self._drift_log = DriftLog()
        shadow = self._references[name] = FunctionReference(name, definition, graph, keys, self._drift_log)
        return shadow.add_nodes

    def _record_drift(self, report: RunReport, key: str) -> None:
        """Fold the drift the call's bodies handed over into ``report.drift`` (worst per op over calls)."""
        from npu_jupyter._runtime.functions.findings import op_name
        from npu_jupyter._runtime.functions.reference import DRIFT_NOTE, merge_drift

        tree, main = set(self._trees.get(key, [])), report.function.plan_function if report.function else key
        rows = self._drift_log.drain() if self._drift_log is not None else []
        merge_drift(report, rows, lambda fn, op: op_name(fn, op, main) if fn in tree else None, report.steps - 1)
        if DRIFT_NOTE not in report.notes:
            report.notes.append(DRIFT_NOTE)

    # ----------------------------------------------------------------------------- profiling
    def _profiler(self, function: AtomicFunction) -> CallProfiler | contextlib.nullcontext[None]:
        """A :class:`CallProfiler` for this call when profiling is on (and fp/bp points allow), else a no-op."""
        from npu_jupyter._runtime.functions.profile import CallProfiler
        from npu_jupyter._runtime.observe import profile as _profile

        report = self.reports[function_name(function)]
        if not self.settings.profiling or report.plan is None:
            return contextlib.nullcontext()
        options = self.settings.profile_options()
        plans = self._tree_plans(function_name(function))
        points = [str(options.get(key) or "") for key in ("fp_point", "bp_point")]
        if any(points) and not any(_profile.profiles_run(plan, [], options) for plan in plans):
            return contextlib.nullcontext()
        return CallProfiler()

    def _call_profile(
        self, key: str, profiler: CallProfiler | contextlib.nullcontext[None], step: int
    ) -> StepProfile | None:
        """The per-op CPU times of call ``step``, when it was profiled (None when the profiler failed)."""
        from npu_jupyter._runtime.functions.profile import CallProfiler, call_profile

        if not isinstance(profiler, CallProfiler) or profiler.error is not None:
            return None
        decisions: dict[str, OpDecision] = {}
        for plan in self._tree_plans(key):
            for name, decision in plan.ops.items():
                decisions.setdefault(name, decision)
        return call_profile(profiler.events, decisions, step, self._tree_facts(key)[1])

    def _tree_facts(self, key: str) -> tuple[GraphFacts, dict[str, list[list[int]]]]:
        """Op facts and traced output shapes of ``key``'s call tree (:func:`.npu_jupyter._runtime.functions.profile.tree_facts`).

        Read once per function: a traced graph does not change after tracing.
        """
        from npu_jupyter._runtime.functions.profile import tree_facts

        found = self._facts.get(key)
        if found is None:
            graphs = [self._graphs[name] for name in self._trees.get(key, []) if name in self._graphs]
            found = self._facts[key] = tree_facts(graphs)
        return found

    def _add_profile(self, report: RunReport, key: str, prof: StepProfile) -> None:
        """Write the call's trace and op summary, and put its per-op CPU times in the report."""
        from npu_jupyter._runtime.functions.profile import function_folder

        options = self.settings.profile_options()
        folder = function_folder(str(options.get("output") or "./"), key)
        self._profiles.add(report, prof, options, folder, facts=self._tree_facts(key)[0])
        names = self._report_names(key)
        report.op_times_us = {names.get(op, op): us for op, us in report.op_times_us.items()}

    def _tree_plans(self, key: str) -> list[Any]:
        """Plans of the functions in ``key``'s call tree, each on its own, the called function's first."""
        plans = []
        for name in self._trees.get(key, []):
            plan = self._handled.get(name, (None, None))[1]
            if plan is not None:
                plans.append(plan)
        return plans

    def _report_names(self, key: str) -> dict[str, str]:
        """A node name of ``key``'s call tree -> the op name the report gives it (``function/op`` in callees).

        The profiler names nodes as each function's graph does; the report's plan joins the functions.
        """
        out: dict[str, str] = {}
        info = self.reports[key].function
        main = info.plan_function if info is not None else key
        for name in self._trees.get(key, []):
            plan = self._handled.get(name, (None, None))[1]
            for op in plan.ops if plan is not None else ():
                out.setdefault(op, op if name == main else f"{name}/{op}")
        return out


def host_arguments(graph: Graph, args: tuple[Any, ...]) -> dict[str, list[int]]:
    """``{"x:0": [16, 8]}``: each argument of a call that is a tensor a copy carries, by its placeholder.

    Resource handles (variables, iterators), variants and strings are left out: the device reads a
    variable or an iterator where it is, and no copy carries those.
    """
    out: dict[str, list[int]] = {}
    for placeholder, value in zip(getattr(graph, "inputs", ()), args):  # a FuncGraph's arguments, then captures
        dtype = getattr(placeholder.dtype, "name", "")
        shape = getattr(value, "shape", None)
        if dtype in ("resource", "variant", "string") or shape is None or shape.rank is None:
            continue
        dims = shape.as_list()
        if None not in dims:
            out[placeholder.name] = dims
    return out


__all__ = ["KERAS3_NOTE", "TF2_RULE_NOTE", "FunctionEmulation", "host_arguments", "supported"]
