"""The emulator backend: a ``tf.compat.v1.Session`` look-alike that runs the adapter's decisions on CPU.

How a step runs
---------------
1. The run's fetches and feeds define its *run graph* (the subgraph one ``Session.run`` reaches), and
   that run graph is planned (``npu_jupyter.plan``) for the config, as the adapter plans each run graph
   on its own: its whole-graph exits (a dataset initialisation graph, ...) apply per run, so
   ``sess.run(iterator.initializer)`` stays float32 while ``sess.run(train_op)`` in the same graph is
   lowered. Plans are cached per graph version, config snapshot, phase and run signature.
2. The user's graph is copied once into a private ``tf.Graph`` run by an inner ``tf.compat.v1.Session``
   whose ConfigProto is the real ``config.to_config_proto()`` (plain TensorFlow ignores the NpuOptimizer
   entry), with ``allow_soft_placement=True`` as the adapter sets on every session it configures (so
   ops pinned to ``/gpu:0`` run). A run whose plan rounds a float32 tensor runs a *variant* of its ops
   added beside the copy with that plan's storage rounding (:mod:`.run_graph`); variables, iterators and
   queues stay shared, so everything lives in one session. When the copy must be rebuilt (the user added
   ops, the config changed), initialized variables are carried over (:mod:`.session_copy`).
3. Around the step, the observers (:mod:`.observers`, reading the step's
   :class:`~npu_jupyter._runtime.observe.step_record.StepRecord`) dump, detect overflow, profile and compare with a
   float32 reference as the config asks; tensors that may be dead or that run inside loop frames are
   read through guards and per-iteration captures (:mod:`.observe_nodes`). A run whose plan lowers
   precision and that fetches a float tensor also checks the float outputs outside loops for inf/NaN,
   so a non-finite fetch, or a variable write of one, is reported with the first op that went
   non-finite (:mod:`.run_notes`). The outcome lands in ``session.last_report`` (the last run made from
   the thread that created the session, so queue-runner threads do not replace it).

Steps are counted per graph, as on the device: each distinct run signature (fetches + fed tensors) is
its own compiled graph with its own iteration counter, and ``dump_step`` selects by that counter
(see :mod:`.dump`). A report numbers its steps by that counter too, from 0: dumped steps, profile
files (``trace_step_<n>.json``, under ``graph_<k>/`` like the dump for graphs after the first) and the
step of a non-finite finding agree. The session-wide run count still drives ``accelerate_train_mode``
and the report's ``session.first_step``/``last_step``.
"""

from __future__ import annotations

import contextlib
import threading
import time
from contextlib import AbstractContextManager
from dataclasses import replace
from types import TracebackType
from typing import TYPE_CHECKING, Any, Callable, Hashable, Mapping, NoReturn, Sequence

# This module is only imported when a session is created (backends.session imports it lazily), so
# TensorFlow is already needed; subclassing SessionInterface lets tf.compat.v1.train.Saver and other
# ``isinstance(sess, Session)`` checks accept the emulator. Inner sessions use TF's Session class
# itself, not ``tf.compat.v1.Session``, which ``%%npu`` cells temporarily replace.
from npu_jupyter._tensorflow_import import require_tensorflow

require_tensorflow("the emulator backend")  # one clear error when TensorFlow is missing
from tensorflow.python.client.session import SessionInterface

from npu_jupyter._runtime.observe import profile as _profile
from npu_jupyter._runtime.observe.dump import format as _dump
from npu_jupyter._runtime.observe.fetch_map import feed_names, leaves, map_feeds, map_fetches
from npu_jupyter._runtime.observe.observers import StepObservers, strip_variant_names
from npu_jupyter._runtime.observe.run_notes import note_non_finite
from npu_jupyter._runtime.observe.run_settings import RunSettings, reduced_phase
from npu_jupyter._runtime.observe.step_record import StepRecord, StepValues
from npu_jupyter._runtime.report import RunReport
from npu_jupyter._runtime.rewrite import ROUND_MARKER, roundings
from npu_jupyter._runtime.session.liveness import analyse
from npu_jupyter._runtime.session.op_errors import as_user_error
from npu_jupyter._runtime.session.reference import Float32Reference, ReferenceStep, data_sources
from npu_jupyter._runtime.session.report_book import ReportBook
from npu_jupyter._runtime.session.run_graph import RunGraph, StepCounter, build_run_graph, executed_ops
from npu_jupyter._runtime.session.session_copy import Executor, SessionCopy
from npu_jupyter._runtime.session.session_plans import SessionPlans
from npu_jupyter._runtime.session.variables import read_variables
from npu_jupyter._runtime.session.watch import fetch_names as watch_fetch_names
from npu_jupyter._runtime.session.watch import (
    finite_flag_tensors,
    float_fetches,
    observe_spec,
    read_values,
    watch_list,
    writes_variables,
)

if TYPE_CHECKING:
    from npu_jupyter._plan.model import Plan
    from npu_jupyter._runtime.observe.step_record import WatchValues
    from npu_jupyter._runtime.session.liveness import Liveness
    from npu_jupyter._runtime.session.run_graph import Observe
    from npu_jupyter._runtime.session.watch import Watch
    from npu_jupyter._tf_types import ConfigProto, Graph, GraphDef, RunMetadata

    #: What a run signature executes under a plan: (executed ops, does the plan round one, tensors to flag).
    RunFacts = tuple[set[str], bool, list[str]]

# Per-session caches (run facts per fetch set) are dropped whole past this many entries.
_CACHE_LIMIT = 256


class EmulatorSession(SessionInterface):
    """A session with ``tf.compat.v1.Session``'s interface that emulates the Ascend adapter on CPU.

    Parameters
    ----------
    config : NpuConfig, optional
        Copied at construction; change ``session.config`` to re-plan on the next ``run``.
    graph : tf.Graph, optional
        Defaults to the default graph at construction, like ``tf.compat.v1.Session``.
    reference : bool
        Run a float32 reference of every step alongside and record per-op drift in
        ``RunReport.drift`` (``run(..., reference=True)`` asks for one step only).
    base_proto : ConfigProto, optional
        The user's own ConfigProto; the NpuOptimizer entry is added to (a copy of) it.
    plan_fn : callable, optional
        ``plan_fn(graph, config, fetches=...) -> Plan``; defaults to :func:`npu_jupyter._plan.planner.plan`.

    """

    backend = "emulator"

    def __init__(
        self,
        config: Any = None,  # noqa: ANN401 - NpuConfig, a copy typed as its base, or ConfigSnapshot (#21 item 2)
        graph: Graph | None = None,
        *,
        reference: bool = False,
        target: str = "",
        base_proto: ConfigProto | None = None,
        plan_fn: Callable[..., Plan] | None = None,
        dump_budget_bytes: int | None = None,
    ) -> None:
        tf = require_tensorflow("the emulator backend")
        self._tf = tf
        self._graph = graph if graph is not None else tf.compat.v1.get_default_graph()
        self.config = config
        self.reference = bool(reference)
        self.target = target
        self._base_proto = base_proto
        self._dump_budget = dump_budget_bytes
        self._observers = StepObservers(self._graph, dump_budget_bytes)
        self._planner = SessionPlans(self._graph, lambda: self.config, plan_fn, self._observers.reset_dump)
        self._planner.settings()  # bad dump_path / dump_step / profiling options fail now, before any run
        self._facts: dict[Hashable, RunFacts] = {}  # (plan key, fed) -> (executed ops, rounds?, flagged)
        self._observes: dict[Hashable, tuple[Liveness, Observe]] = {}  # (plan key, fed) -> observe, no watches
        self._copy = SessionCopy(self._graph, target, self._proto, lambda: self.reference)
        self._reference: Float32Reference | None = None
        self._capture_lock = threading.Lock()
        self._steps = StepCounter()
        self._book = ReportBook(self._graph)
        self.reports = self._book.reports
        self._closed = False
        self._pending_warnings: list[str] = []
        self._roles: dict[tuple[int, tuple[str, ...]], str] = {}  # (plan id, fetches) -> its dump graph's role
        self._last_ref_ms: float | None = None  # how long the last float32 reference took

    @property
    def last_report(self) -> RunReport | None:
        """The last run made from the thread that created the session; the last run overall until then.

        Queue-runner threads run small enqueue graphs all the time; the report a user means is the one
        of their own ``sess.run``. Every run's report is still in ``reports``. Each report shows the
        cost model's estimate at the shapes its run fed, as ``%%npu`` does; it is computed when the
        report is first read (``report.estimate``), never in the training loop.
        """
        return self._book.last

    # ------------------------------------------------------------------ tf.compat.v1.Session interface

    @property
    def graph(self) -> Graph:
        """The user's graph (as ``tf.compat.v1.Session.graph``)."""
        return self._graph

    @property
    def graph_def(self) -> GraphDef:
        """The user's graph as a GraphDef (as ``tf.compat.v1.Session.graph_def``)."""
        return self._graph.as_graph_def()

    @property
    def sess_str(self) -> str:
        """The session target (as ``tf.compat.v1.Session.sess_str``)."""
        return self.target

    def as_default(self) -> AbstractContextManager[object]:
        """Make this the default session (``tf.compat.v1.get_default_session`` returns it)."""
        return _default_session_context(self)

    def __enter__(self) -> EmulatorSession:
        self._default_cm = self.as_default()
        self._default_cm.__enter__()
        self._graph_cm = self._graph.as_default()
        self._graph_cm.__enter__()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self._graph_cm.__exit__(kind, error, tb)
        self._default_cm.__exit__(kind, error, tb)
        self.close()

    def close(self) -> None:
        """Close the inner sessions; further ``run`` calls raise like a closed TF session.

        Pending profile files are written first.
        """
        observers = getattr(self, "_observers", None)
        if observers is not None:
            observers.close()
        copy, reference = getattr(self, "_copy", None), getattr(self, "_reference", None)
        if copy is not None:
            copy.close()
        if reference is not None:
            reference.close()
        self._reference = None
        self._closed = True

    def __del__(self) -> None:  # pragma: no cover - interpreter shutdown order varies
        with contextlib.suppress(Exception):
            self.close()

    def partial_run_setup(self, fetches: object, feeds: object = None) -> NoReturn:
        """Not supported: the emulator rewrites whole runs, so it has no partial runs."""
        raise NotImplementedError("partial_run is not supported by the emulator; use run()")

    def partial_run(self, handle: object, fetches: object, feed_dict: object = None) -> NoReturn:
        """Not supported: the emulator rewrites whole runs, so it has no partial runs."""
        raise NotImplementedError("partial_run is not supported by the emulator; use run()")

    def list_devices(self) -> list[object]:
        """The devices of the CPU session that runs the emulation (no NPU is listed: there is none)."""
        return self._executor().session.list_devices()

    def run(
        self,
        fetches: object,
        feed_dict: Mapping[object, object] | None = None,
        options: object = None,
        run_metadata: RunMetadata | None = None,
        *,
        reference: bool | None = None,
    ) -> Any:  # noqa: ANN401 - the fetched values mirror the fetches' structure, as TensorFlow's run
        """Run ``fetches`` like ``tf.compat.v1.Session.run``, with the plan's precisions.

        ``reference=True`` additionally runs a float32 reference of this step and records per-op drift.
        """
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        settings = self._planner.settings()
        ex = self._executor(settings)
        names: list[str] = []
        map_fetches(fetches, ex.private, names)  # the signature: user-side names in flattening order
        fed = tuple(sorted(feed_names(feed_dict)))
        plan_key = self._planner.key(tuple(names), ex.key[2])
        plan = self._planner.plan(tuple(names), ex.key[2])
        executed, _rounds, flagged = self._run_facts(plan_key, plan, names, fed)
        want_ref = self.reference if reference is None else bool(reference)
        step, graph_step, graph = self._steps.count(names, fed)
        if settings.enable_dump or settings.enable_dump_debug:
            graph = self._with_role(graph, plan, names)
        dump_now = settings.enable_dump and _dump.step_selected(settings.dump_steps, graph_step)
        watch = self._watch(plan, executed, fed, settings, dump_now, want_ref)
        if (
            dump_now
            and watch
            and not self._observers.dump_fits(self._pending_warnings, settings, watch, graph, graph_step)
        ):
            dump_now = False
            watch = self._watch(plan, executed, fed, settings, False, want_ref)
        liveness = analyse(self._graph) if (watch or flagged) else None
        observe = self._observe(watch, flagged, liveness, (plan_key, fed))
        run = self._run_graph(ex, (tuple(names), fed), plan_key, plan, executed, observe, liveness)
        mapped = map_fetches(fetches, run, [])
        feeds = map_feeds(feed_dict, run)
        weights = read_variables(ex.session, ex.private.graph) if want_ref else None  # before the step
        sources = data_sources(self._graph, executed) if want_ref else []
        run_options, meta = options, run_metadata
        trace: RunMetadata | None = None  # this step's own trace, when it is profiled
        # Only the steps asked for are traced: not variable initialisers, not runs that miss fp/bp points,
        # and not the runs of helper threads (queue runners): TensorFlow allows one trace at a time.
        profiled = (
            settings.profiling
            and self._book.in_owner_thread()
            and _profile.profiles_run(plan, list(names), settings.profile_options())
        )
        if profiled:
            run_options = self._tf.compat.v1.RunOptions()
            if options is not None:
                run_options.CopyFrom(options)
            run_options.trace_level = self._tf.compat.v1.RunOptions.FULL_TRACE
            meta = trace = self._tf.compat.v1.RunMetadata()
        keys, extra = watch_fetch_names(run, watch)
        if run.flags is not None:
            extra = [*extra, run.flags[0]]
        if sources:
            extra = [*extra, [run.tensor_name(t) for t in sources]]
        with self._capture_lock if run.captures else contextlib.nullcontext():
            run.clear_captures()
            start = time.perf_counter()
            step_fetches: list[object] = [mapped, extra]
            # a compiled callable when TensorFlow would run the step the same way (not with run options)
            try:
                out = ex.fast.run(step_fetches, feeds) if run_options is None and meta is None else None
                ran: list[Any] = out if out is not None else ex.session.run(step_fetches, feeds, run_options, meta)
            except self._tf.errors.OpError as error:  # named as the user's graph names it, with its script lines
                raise as_user_error(error, self._graph) from None
            results, fetched = ran
            wall = (time.perf_counter() - start) * 1000.0
            source_values = dict(zip(sources, fetched.pop())) if sources else {}
            flags = run.finite_flags(fetched[-1]) if run.flags is not None else None
            values = read_values(run, watch, dict(zip(keys, fetched)))
        ref_values = (
            # weights are read exactly when want_ref (above), so this is the want_ref test
            self._reference_values(ReferenceStep(weights, executed, feed_dict, source_values, watch, liveness))
            if weights is not None
            else None
        )
        profile = None
        if trace is not None:
            strip_variant_names(trace, run.prefix)
            if run_metadata is not None:
                run_metadata.CopyFrom(trace)
            profile = _profile.collect(trace.step_stats, self._graph, plan, graph_step, marker=ROUND_MARKER)
        record = StepRecord(
            "step",
            ", ".join(names),
            graph_step,
            plan,
            wall,
            tuple(leaves(results)),
            graph=graph,
            dump_now=dump_now,
            watched=StepValues(tuple(watch), values, ref_values, self._last_ref_ms if ref_values is not None else None),
            profile=profile,
        )
        # a new report carries the shapes its run fed and the cost model's estimate at them (read lazily)
        report = self._book.record(record, step, names, run, feed_dict)
        if self._pending_warnings:
            report.warnings.extend(self._pending_warnings)
            report.dump = report.dump.skipping(graph_step, self._pending_warnings[-1])
            del self._pending_warnings[:]
        if flags is not None:
            note_non_finite(report, plan, run, flags, names, results, graph_step)
        if watch or profiled:
            self._observers.after_step(report, settings, record)
        return results

    def _with_role(self, graph: _dump.DumpGraph, plan: Plan, names: list[str]) -> _dump.DumpGraph:
        """``graph`` with its role (training, initializer), read once per plan: dumps go by it."""
        from npu_jupyter._runtime.observe.initializers import graph_role

        key = (id(plan), tuple(names))
        role = self._roles.get(key)
        if role is None:
            role = self._roles[key] = graph_role(plan, names)
        return replace(graph, role=role) if role else graph

    def make_callable(
        self, fetches: object, feed_list: Sequence[object] | None = None, accept_options: bool = False
    ) -> Callable[..., Any]:
        """A callable running ``fetches`` through :meth:`run` (feeds positional, like TF's)."""
        feed_list = list(feed_list or [])

        def call(*args: Any, **kwargs: Any) -> Any:  # noqa: ANN401 - what run returns for ``fetches``
            options = kwargs.pop("options", None) if accept_options else None
            run_metadata = kwargs.pop("run_metadata", None) if accept_options else None
            return self.run(fetches, dict(zip(feed_list, args)), options, run_metadata)

        return call

    def _make_callable_from_options(self, callable_options: object) -> Callable[..., list[Any]]:
        """TF's private callable maker, which Keras 2's graph-mode functions call: each call is a ``run``."""
        from npu_jupyter._runtime.session.callable_options import callable_from_options

        return callable_from_options(self.run, callable_options)

    # ------------------------------------------------------------------ planning and the private graph

    def _reduced(self, settings: RunSettings) -> bool:
        return reduced_phase(settings.accelerate, self._steps.total) if settings.accelerate else False

    @property
    def _exec(self) -> Executor | None:
        """The current private copy and its inner session (None before the first run)."""
        return self._copy.current

    def _executor(self, settings: RunSettings | None = None) -> Executor:
        """The private copy + inner session for the current graph version and config (and phase)."""
        settings = settings or self._planner.settings()
        return self._copy.get((self._graph.version, self._planner.snapshot(), self._reduced(settings)))

    def _run_facts(
        self, plan_key: tuple[Hashable, ...], plan: Plan, names: list[str], fed: tuple[str, ...]
    ) -> RunFacts:
        """(ops the run executes, does its plan round a tensor, the float outputs to flag) — cached."""
        key = (plan_key, fed)
        facts = self._facts.get(key)
        if facts is None:
            executed = executed_ops(self._graph, names, set(fed))
            rounds = bool(roundings(plan, self._graph, executed))
            # The flags explain a non-finite fetch, or a variable write that read inf/NaN (run_notes): a
            # run that does neither (fetches no float tensor, writes no variable) needs none.
            wanted = rounds and (bool(float_fetches(self._graph, names)) or writes_variables(self._graph, executed))
            flagged = finite_flag_tensors(self._graph, plan, executed, fed, analyse(self._graph)) if wanted else []
            if len(self._facts) >= _CACHE_LIMIT:
                self._facts.clear()
            facts = self._facts[key] = (executed, rounds, flagged)
        return facts

    def _observe(
        self, watch: list[Watch], flagged: list[str], liveness: Liveness | None, key: Hashable
    ) -> Observe | None:
        """What the run graph must observe; without watches it depends on the run facts only (cached)."""
        if liveness is None:
            return None
        if watch:
            return observe_spec(watch, flagged, liveness)
        observe = self._observes.get(key)
        if observe is None or observe[0] is not liveness:
            if len(self._observes) >= _CACHE_LIMIT:
                self._observes.clear()
            observe = self._observes[key] = (liveness, observe_spec(watch, flagged, liveness))
        return observe[1]

    def _run_graph(
        self,
        ex: Executor,
        signature: tuple[tuple[str, ...], tuple[str, ...]],
        plan_key: tuple[Hashable, ...],
        plan: Plan,
        executed: set[str],
        observe: Observe | None,
        liveness: Liveness | None,
    ) -> RunGraph:
        """The run graph of this signature under this plan and observation (built once, then reused)."""
        key = (signature, plan_key[1:], observe)
        run = ex.runs.get(key)
        if run is None:
            run = build_run_graph(
                ex.private.graph, self._graph, plan, executed, len(ex.runs), ex.graph_def, observe, liveness
            )
            ex.runs[key] = run
        return run

    def _proto(self) -> ConfigProto:
        """The inner session's ConfigProto: the real NpuOptimizer config (plain TF ignores the entry).

        ``allow_soft_placement`` is forced on, as the adapter's ``npu_config`` and ``npu_init`` Session
        wrapper do, so a script that pins ops to ``/gpu:0`` runs instead of failing to place them.

        Grappler's meta-optimizer is off in the inner session only: the user's ConfigProto and the one
        handed to the adapter keep it. On Ascend the ops the plan lowers run as GE compiles them, not as
        grappler's CPU passes rewrite them, so those passes stand for nothing the device does. Without
        them the emulated step and its float32 reference run the same arithmetic but for the plan's
        precision, so a drift figure is the precision's alone. (Grappler's rewrites change float32 bits:
        Inception-ResNet-v2's first emulated loss differs in its last bits with and without them; and
        the emulated graph, with storage-rounding Casts between its ops, need not get the rewrites its
        reference gets.) And it spares most of an emulated model's set-up, since every run graph (a
        step, its dump or profiling variant, the reference) is optimized anew: Inception-ResNet-v2's
        first three emulated steps take 52 s with grappler and 20 s without. TensorFlow's own graph
        optimizer (constant folding, common subexpressions, function inlining) still runs when each
        step's executor is built.
        """
        proto: ConfigProto
        if self.config is not None:
            proto = self._planner.current().to_config_proto(self._base_proto)
        else:
            proto = self._tf.compat.v1.ConfigProto()
            if self._base_proto is not None:
                proto.CopyFrom(self._base_proto)
        proto.allow_soft_placement = True  # as the adapter sets on every session it configures (npu_config.py)
        proto.graph_options.rewrite_options.disable_meta_optimizer = True
        return proto

    # ------------------------------------------------------------------ observed steps

    def _watch(
        self,
        plan: Plan,
        executed: set[str],
        fed: tuple[str, ...],
        settings: RunSettings,
        dump_now: bool,
        want_ref: bool,
    ) -> list[Watch]:
        """The tensors this step looks at (dump, overflow detection, drift)."""
        kinds = set()
        if dump_now:
            kinds |= {"output", "input"} if settings.dump_mode == "all" else {settings.dump_mode}
        if settings.enable_dump_debug or want_ref:
            kinds.add("output")
        if not kinds:
            return []
        return watch_list(self._graph, plan, executed, fed, kinds, analyse(self._graph))

    def _reference_values(self, step: ReferenceStep) -> WatchValues:
        """The float32 reference of this step's watched outputs, from the weights before the step.

        The step's data (what its iterators and queues handed out) is fed, so both read the same batch.
        """
        if self._reference is None or self._reference.version != self._graph.version:
            if self._reference is not None:
                self._reference.close()
            self._reference = Float32Reference(self._graph, self.target, self._proto(), self._capture_lock)
        values = self._reference.values(step)
        self._last_ref_ms = self._reference.last_ms
        return values


def _default_session_context(session: EmulatorSession) -> AbstractContextManager[object]:
    """TF's context manager that makes ``session`` the default one, wherever this TF version keeps it.

    TF 2.16+ has ``tensorflow.python.framework.stack.default_session``; TF 2.6.5 (the Ascend adapter's
    TF 2 version) has no ``stack`` module and keeps the same function in ``framework.ops``.
    """
    try:
        from tensorflow.python.framework import stack
    except ImportError:
        from tensorflow.python.framework import ops as stack  # older TF (2.6.5): ops.default_session
    context: AbstractContextManager[object] = stack.default_session(session)
    return context
