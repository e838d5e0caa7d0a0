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
   ops, the config changed), initialized variables are carried over (:mod:`.variables`).
3. Around the step, the observers (:mod:`.observers`) dump, detect overflow, profile and compare with a
   float32 reference as the config asks; tensors that may be dead or that run inside loop frames are
   read through guards and per-iteration captures (:mod:`.observe_nodes`). A run whose plan lowers
   precision also checks every float output for inf/NaN, so a non-finite fetch is reported with the
   first op that went non-finite. The outcome lands in ``session.last_report`` (the last run made from
   the thread that created the session, so queue-runner threads do not replace it).

Steps are counted per graph, as on the device: each distinct run signature (fetches + fed tensors) is
its own compiled graph with its own iteration counter, and ``dump_step`` selects by that counter
(see :mod:`.dump`). The session-wide run count still drives ``accelerate_train_mode`` and the report's
``first_step``/``last_step``.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

# This module is only imported when a session is created (backends.session imports it lazily), so
# TensorFlow is already needed; subclassing SessionInterface lets tf.compat.v1.train.Saver and other
# ``isinstance(sess, Session)`` checks accept the emulator. Inner sessions use TF's Session class
# itself, not ``tf.compat.v1.Session``, which ``%%npu`` cells temporarily replace.
from tensorflow.python.client.session import Session as _TFSession
from tensorflow.python.client.session import SessionInterface

from npu_jupyter.runtime import dump_format as _dump
from npu_jupyter.runtime.fetch_map import feed_names, fetch_values, map_feeds, map_fetches
from npu_jupyter.runtime.liveness import analyse
from npu_jupyter.runtime.observers import StepObservers
from npu_jupyter.runtime.report import RunReport
from npu_jupyter.runtime.rewrite import PrivateGraph, build_private_graph, roundings
from npu_jupyter.runtime.run_graph import RunGraph, build_run_graph, executed_ops
from npu_jupyter.runtime.run_notes import lowered_but_unrounded, non_finite_finding
from npu_jupyter.runtime.run_settings import RunSettings, option, read_run_settings, reduced_phase
from npu_jupyter.runtime.variables import read_variables, write_variables
from npu_jupyter.runtime.watch import finite_flag_tensors, observe_spec, read_values, watch_list
from npu_jupyter.runtime.watch import fetch_names as watch_fetch_names

# Per-session caches (plans per fetch set, run facts) are dropped whole past this many entries.
_CACHE_LIMIT = 256


@dataclass
class _Executor:
    """One private copy of the user's graph, the inner session that runs it, and its run graphs."""

    key: tuple
    private: PrivateGraph
    session: Any
    runs: dict = field(default_factory=dict)  # (run signature, plan key, Observe) -> RunGraph
    graph_def: Any = None  # the user's GraphDef the copy was made from (variants copy from it)


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
        ``plan_fn(graph, config, fetches=...) -> Plan``; defaults to :func:`npu_jupyter.plan.planner.plan`.
    """

    backend = "emulator"

    def __init__(
        self,
        config: Any = None,
        graph: Any = None,
        *,
        reference: bool = False,
        target: str = "",
        base_proto: Any = None,
        plan_fn: Callable[..., Any] | None = None,
        dump_budget_bytes: int | None = None,
    ) -> None:
        import tensorflow as tf

        self._tf = tf
        self._graph = graph if graph is not None else tf.compat.v1.get_default_graph()
        self.config = config
        self.reference = bool(reference)
        self.target = target
        self._base_proto = base_proto
        self._plan_fn = plan_fn
        self._dump_budget = dump_budget_bytes
        self._config_snapshot_cache: tuple[Any, str] | None = None
        self._settings_cache: tuple[str, RunSettings] | None = None
        self._settings()  # bad dump_path / dump_step / profiling options fail now, before any run
        self._plans: dict[tuple, Any] = {}
        self._facts: dict[tuple, tuple] = {}  # (version, plan key, fed) -> (executed ops, rounds?, flagged)
        self._exec: _Executor | None = None
        self._ref_exec: _Executor | None = None
        self._observers = StepObservers(self._graph, dump_budget_bytes)
        self._capture_lock = threading.Lock()
        self._step = 0
        self._graph_steps: dict[tuple, list[int]] = {}  # run signature -> [graph id, runs so far]
        self._count_lock = threading.Lock()
        self._owner_thread = threading.get_ident()
        self._owner_last: RunReport | None = None
        self._last_any: RunReport | None = None
        self._closed = False
        self._pending_warnings: list[str] = []
        self.reports: list[RunReport] = []

    @property
    def last_report(self) -> RunReport | None:
        """The last run made from the thread that created the session; the last run overall until then.

        Queue-runner threads run small enqueue graphs all the time; the report a user means is the one
        of their own ``sess.run``. Every run's report is still in ``reports``.
        """
        return self._owner_last if self._owner_last is not None else self._last_any

    def _count(self, names: list[str], feed_dict: Any) -> tuple[int, int, _dump.DumpGraph]:
        """Reserve this run's steps: (session-wide step, this graph's id and step) under a lock."""
        signature = (tuple(names), tuple(sorted(feed_names(feed_dict))))
        with self._count_lock:
            step = self._step
            self._step += 1
            entry = self._graph_steps.get(signature)
            if entry is None:
                entry = self._graph_steps[signature] = [len(self._graph_steps), 0]
            graph_step = entry[1]
            entry[1] += 1
        return step, graph_step, _dump.DumpGraph(entry[0], signature[0], signature[1])

    # ------------------------------------------------------------------ tf.compat.v1.Session interface

    @property
    def graph(self) -> Any:
        return self._graph

    @property
    def graph_def(self) -> Any:
        return self._graph.as_graph_def()

    @property
    def sess_str(self) -> str:
        return self.target

    def as_default(self) -> Any:
        """Make this the default session (``tf.compat.v1.get_default_session`` returns it)."""
        from tensorflow.python.framework import stack

        return stack.default_session(self)

    def __enter__(self) -> EmulatorSession:
        self._default_cm = self.as_default()
        self._default_cm.__enter__()
        self._graph_cm = self._graph.as_default()
        self._graph_cm.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._graph_cm.__exit__(*exc)
        self._default_cm.__exit__(*exc)
        self.close()

    def close(self) -> None:
        """Close the inner sessions; further ``run`` calls raise like a closed TF session.

        Pending profile files are written first.
        """
        observers = getattr(self, "_observers", None)
        if observers is not None:
            observers.close()
        for ex in (getattr(self, "_exec", None), getattr(self, "_ref_exec", None)):
            if ex is not None:
                ex.session.close()
        self._exec = self._ref_exec = None
        self._closed = True

    def __del__(self) -> None:  # pragma: no cover - interpreter shutdown order varies
        try:
            self.close()
        except Exception:
            pass

    def partial_run_setup(self, fetches: Any, feeds: Any = None) -> Any:
        raise NotImplementedError("partial_run is not supported by the emulator; use run()")

    def partial_run(self, handle: Any, fetches: Any, feed_dict: Any = None) -> Any:
        raise NotImplementedError("partial_run is not supported by the emulator; use run()")

    def list_devices(self) -> Any:
        return self._executor().session.list_devices()

    def run(
        self,
        fetches: Any,
        feed_dict: Any = None,
        options: Any = None,
        run_metadata: Any = None,
        *,
        reference: bool | None = None,
    ) -> Any:
        """Run ``fetches`` like ``tf.compat.v1.Session.run``, with the plan's precisions.

        ``reference=True`` additionally runs a float32 reference of this step and records per-op drift.
        """
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        settings = self._settings()
        ex = self._executor(settings)
        names: list[str] = []
        map_fetches(fetches, ex.private, names)  # the signature: user-side names in flattening order
        fed = tuple(sorted(feed_names(feed_dict)))
        plan_key = self._plan_key(tuple(names), ex.key[2])
        plan = self._plan(tuple(names), ex.key[2])
        executed, rounds, flagged = self._run_facts(plan_key, plan, names, fed)
        want_ref = self.reference if reference is None else bool(reference)
        step, graph_step, graph = self._count(names, feed_dict)
        dump_now = settings.enable_dump and _dump.step_selected(settings.dump_steps, graph_step)
        watch = self._watch(plan, executed, fed, settings, dump_now, want_ref)
        if dump_now and watch and not self._observers.dump_fits(self._pending_warnings, settings, watch, graph,
                                                                graph_step):
            dump_now = False
            watch = self._watch(plan, executed, fed, settings, False, want_ref)
        liveness = analyse(self._graph) if (watch or flagged) else None
        observe = observe_spec(watch, flagged, liveness) if liveness is not None else None
        run = self._run_graph(ex, (tuple(names), fed), plan_key, plan, executed, observe, liveness)
        mapped = map_fetches(fetches, run, [])
        feeds = map_feeds(feed_dict, run)
        ref_values = self._reference_values(ex, executed, feeds, watch, liveness) if want_ref else None
        run_options, meta = options, run_metadata
        if settings.profiling:
            run_options = self._tf.compat.v1.RunOptions()
            if options is not None:
                run_options.CopyFrom(options)
            run_options.trace_level = self._tf.compat.v1.RunOptions.FULL_TRACE
            meta = self._tf.compat.v1.RunMetadata()
        keys, extra = watch_fetch_names(run, watch)
        if run.flags is not None:
            extra = extra + [run.flags[0]]
        with self._capture_lock if run.captures else _NoLock():
            run.clear_captures()
            start = time.perf_counter()
            if extra:
                results, fetched = ex.session.run([mapped, extra], feeds, run_options, meta)
            else:
                results, fetched = ex.session.run(mapped, feeds, run_options, meta), []
            wall = (time.perf_counter() - start) * 1000.0
            flags = fetched[-1] if run.flags is not None else None
            values = read_values(run, watch, dict(zip(keys, fetched)))
        if settings.profiling:
            _strip_variant_names(meta, run.prefix)
            if run_metadata is not None:
                run_metadata.CopyFrom(meta)
        report = self._record(plan, tuple(names), wall, step, results, names, run)
        if self._pending_warnings:
            report.warnings.extend(self._pending_warnings)
            report.extra.setdefault("dump_skipped", {})[graph_step] = self._pending_warnings[-1]
            del self._pending_warnings[:]
        if flags is not None:
            self._note_non_finite(report, plan, run, flags, names, results, step)
        if watch or settings.profiling:
            self._observers.after_step(report, settings, plan, watch, values, ref_values, dump_now, meta, step,
                                       graph_step, graph)
        return results

    def make_callable(self, fetches: Any, feed_list: Any = None, accept_options: bool = False) -> Callable:
        """A callable running ``fetches`` through :meth:`run` (feeds positional, like TF's)."""
        feed_list = list(feed_list or [])

        def call(*args: Any, **kwargs: Any) -> Any:
            options = kwargs.pop("options", None) if accept_options else None
            run_metadata = kwargs.pop("run_metadata", None) if accept_options else None
            return self.run(fetches, dict(zip(feed_list, args)), options, run_metadata)

        return call

    # ------------------------------------------------------------------ planning and the private graph

    def _config_snapshot(self) -> str:
        """A string that changes exactly when an option that was set changes."""
        cfg = self.config
        cached = self._config_snapshot_cache
        if cached is not None and cached[0] is cfg and getattr(cfg, "_npu_emu_clean", False):
            return cached[1]
        if cfg is None:
            snapshot = "{}"
        elif hasattr(cfg, "changed"):
            snapshot = json.dumps(cfg.changed(), sort_keys=True, default=str)
        else:
            snapshot = json.dumps(dict(cfg), sort_keys=True, default=str)
        if hasattr(cfg, "observe") and not getattr(cfg, "_npu_emu_observed", False):
            cfg.observe(_mark_dirty)
            cfg._npu_emu_observed = True
        if hasattr(cfg, "observe"):
            cfg._npu_emu_clean = True
        self._config_snapshot_cache = (cfg, snapshot)
        return snapshot

    def _settings(self) -> RunSettings:
        snapshot = self._config_snapshot()
        if self._settings_cache is None or self._settings_cache[0] != snapshot:
            self._settings_cache = (snapshot, read_run_settings(self.config))
            if hasattr(self, "_observers"):
                self._observers.reset_dump()
        return self._settings_cache[1]

    def _effective_config(self, reduced: bool) -> Any:
        """The config planned with: the session's, or its reduced-precision phase (accelerate_train_mode)."""
        cfg = self.config
        if not reduced:
            return cfg
        if option(cfg, "precision_mode_v2"):
            overrides = {"precision_mode_v2": "mixed_float16"}
        else:
            overrides = {"precision_mode": "allow_mix_precision"}
        if hasattr(cfg, "copy"):
            return cfg.copy(**overrides)
        return {**(cfg or {}), **overrides}

    def _plan_key(self, fetches: tuple | None, reduced: bool) -> tuple:
        return (self._graph.version, self._config_snapshot(), reduced, fetches)

    def _plan(self, fetches: tuple | None, reduced: bool) -> Any:
        """Plan for ``fetches`` (None = whole graph), cached per graph version, config and phase."""
        key = self._plan_key(fetches, reduced)
        cached = self._plans.get(key)
        if cached is not None:
            return cached
        cfg = self._effective_config(reduced)
        plan_fn = self._plan_fn or _default_plan_fn()
        cache_dir = self._settings().plan_cache_dir
        if cache_dir:
            from npu_jupyter.runtime.plan_cache import cached_plan

            plan = cached_plan(cache_dir, self._graph, key[1] + f"|reduced={reduced}", fetches,
                               lambda: plan_fn(self._graph, cfg, fetches=list(fetches) if fetches else None))
        else:
            plan = plan_fn(self._graph, cfg, fetches=list(fetches) if fetches else None)
        if len(self._plans) >= _CACHE_LIMIT:
            self._plans.clear()
        self._plans[key] = plan
        return plan

    def _reduced(self, settings: RunSettings) -> bool:
        return reduced_phase(settings.accelerate, self._step) if settings.accelerate else False

    def _executor(self, settings: RunSettings | None = None) -> _Executor:
        """The private copy + inner session for the current graph version and config (and phase)."""
        settings = settings or self._settings()
        reduced = self._reduced(settings)
        key = (self._graph.version, self._config_snapshot(), reduced)
        ex = self._exec
        if ex is not None and ex.key == key:
            return ex
        if ex is not None and ex.key[:2] == key[:2]:
            ex.key = key  # only the phase changed: plans differ, the copy and session do not
            return ex
        graph_def = self._graph.as_graph_def(add_shapes=False)
        private = build_private_graph(self._graph, None, fixed_seeds=self.reference)
        session = _TFSession(target=self.target, graph=private.graph, config=self._proto())
        new = _Executor(key, private, session, graph_def=graph_def)
        if ex is not None:
            write_variables(session, private.graph, read_variables(ex.session, ex.private.graph))
            ex.session.close()
        self._exec = new
        if self._ref_exec is not None and self._ref_exec.key[0] != key[0]:
            self._ref_exec.session.close()
            self._ref_exec = None
        return new

    def _run_facts(self, plan_key: tuple, plan: Any, names: list[str], fed: tuple) -> tuple:
        """(ops the run executes, does its plan round a tensor, the float outputs to flag) — cached."""
        key = (plan_key, fed)
        facts = self._facts.get(key)
        if facts is None:
            executed = executed_ops(self._graph, names, set(fed))
            rounds = bool(roundings(plan, self._graph, executed))
            flagged = finite_flag_tensors(self._graph, plan, executed, fed, analyse(self._graph)) if rounds else []
            if len(self._facts) >= _CACHE_LIMIT:
                self._facts.clear()
            facts = self._facts[key] = (executed, rounds, flagged)
        return facts

    def _run_graph(self, ex: _Executor, signature: tuple, plan_key: tuple, plan: Any, executed: set[str],
                   observe: Any, liveness: Any) -> RunGraph:
        """The run graph of this signature under this plan and observation (built once, then reused)."""
        key = (signature, plan_key[1:], observe)
        run = ex.runs.get(key)
        if run is None:
            run = build_run_graph(ex.private.graph, self._graph, plan, executed, len(ex.runs), ex.graph_def,
                                  observe, liveness)
            ex.runs[key] = run
        return run

    def _reference_executor(self) -> _Executor:
        """An unrewritten copy (float32 as the user wrote it) with the same fixed seeds."""
        ex = self._ref_exec
        if ex is not None and ex.key[0] == self._graph.version:
            return ex
        private = build_private_graph(self._graph, None, fixed_seeds=True)
        session = _TFSession(target=self.target, graph=private.graph, config=self._proto())
        self._ref_exec = _Executor((self._graph.version,), private, session,
                                   graph_def=self._graph.as_graph_def(add_shapes=False))
        return self._ref_exec

    def _proto(self) -> Any:
        """The inner session's ConfigProto: the real NpuOptimizer config (plain TF ignores the entry).

        ``allow_soft_placement`` is forced on, as the adapter's ``npu_config`` and ``npu_init`` Session
        wrapper do, so a script that pins ops to ``/gpu:0`` runs instead of failing to place them.
        """
        cfg = self.config
        if cfg is not None and hasattr(cfg, "to_config_proto"):
            proto = cfg.to_config_proto(self._base_proto) if self._base_proto is not None else cfg.to_config_proto()
        else:
            proto = self._tf.compat.v1.ConfigProto()
            if self._base_proto is not None:
                proto.CopyFrom(self._base_proto)
        proto.allow_soft_placement = True  # as the adapter sets on every session it configures (npu_config.py)
        return proto

    # ------------------------------------------------------------------ observed steps

    def _watch(self, plan, executed, fed, settings, dump_now, want_ref) -> list:
        """The tensors this step looks at (dump, overflow detection, drift)."""
        kinds = set()
        if dump_now:
            kinds |= {"output", "input"} if settings.dump_mode == "all" else {settings.dump_mode}
        if settings.enable_dump_debug or want_ref:
            kinds.add("output")
        if not kinds:
            return []
        return watch_list(self._graph, plan, executed, fed, kinds, analyse(self._graph))

    def _reference_values(self, ex, executed, feeds, watch, liveness) -> dict[tuple, list]:
        """Run the float32 reference of this step's watched outputs from the emulated session's weights."""
        ref = self._reference_executor()
        write_variables(ref.session, ref.private.graph, read_variables(ex.session, ex.private.graph))
        outputs = [w for w in watch if w.kind == "output" and w.is_float]
        if not outputs:
            return {}
        observe = observe_spec(outputs, [], liveness)
        key = ("reference", tuple(sorted(executed)), observe)
        run = ref.runs.get(key)
        if run is None:
            run = ref.runs[key] = build_run_graph(ref.private.graph, self._graph, None, executed, len(ref.runs),
                                                  ref.graph_def, observe, liveness)
        keys, names = watch_fetch_names(run, outputs)
        ref_feeds = {run.feed_name(k if ":" in k else f"{k}:0"): v for k, v in (feeds or {}).items()}
        start = time.perf_counter()
        with self._capture_lock if run.captures else _NoLock():
            run.clear_captures()
            fetched = ref.session.run(names, ref_feeds or None) if names else []
            values = read_values(run, outputs, dict(zip(keys, fetched)))
        self._observers.last_ref_ms = (time.perf_counter() - start) * 1000.0
        return values

    def _note_non_finite(self, report, plan, run, flags, names, results, step) -> None:
        """A fetch went inf/NaN in a run whose plan lowers precision: say so, naming the first op."""
        finding = non_finite_finding(plan, run, flags, names, results, step)
        if finding is None:
            return
        report.extra.setdefault("non_finite", finding)
        if finding["message"] not in report.warnings:
            report.warnings.append(finding["message"])

    # ------------------------------------------------------------------ reports

    def _record(self, plan, fetch_key, wall_ms, step, results, names, run) -> RunReport:
        """Start a report, or fold this step into the last one when the fetches and plan are the same."""
        report = self._fold_or_start(plan, fetch_key, wall_ms, step, results, names, run)
        self._last_any = report
        if threading.get_ident() == self._owner_thread:
            self._owner_last = report
        return report

    def _fold_or_start(self, plan, fetch_key, wall_ms, step, results, names, run) -> RunReport:
        """Fold into the last run's report when the fetches and plan are the same, else start one."""
        last = self._last_any
        if last is not None and last.plan is plan and last.extra.get("_fetch_key") == fetch_key:
            total = last.extra["total_wall_ms"] + wall_ms
            last.steps += 1
            last.extra["total_wall_ms"] = total
            last.wall_ms = total / last.steps
            last.extra["last_step"] = step
            last.extra["values"] = fetch_values(names, results)
            return last
        report = RunReport(plan=plan, backend="emulator", fetches=list(names), steps=1, wall_ms=wall_ms)
        report.emulation = {op: how for op, how in run.emulation().items() if op in plan.ops}
        note = lowered_but_unrounded(plan, report.emulation, self._graph)
        if note:
            report.warnings.append(note)  # a plan that lowers precision never runs unrounded silently
        report.extra.update(_fetch_key=fetch_key, total_wall_ms=wall_ms, first_step=step, last_step=step,
                            values=fetch_values(names, results))
        self.reports.append(report)
        if len(self.reports) > 1000:
            del self.reports[: len(self.reports) - 1000]
        return report


# ---------------------------------------------------------------------- helpers (pure functions)


def _mark_dirty(change: Any) -> None:
    """traitlets observer: an option changed, so the session's config snapshot must be recomputed."""
    change["owner"]._npu_emu_clean = False


def _default_plan_fn() -> Callable[..., Any]:
    from npu_jupyter.plan.planner import plan

    return plan


class _NoLock:
    """A do-nothing context manager (runs without captures need no lock)."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None


def _strip_variant_names(meta: Any, prefix: str) -> None:
    """Name a variant's nodes in ``step_stats`` by the user's op, so profiles read the same either way."""
    if not prefix or meta is None:
        return
    for dev in meta.step_stats.dev_stats:
        for ns in dev.node_stats:
            if ns.node_name.startswith(prefix):
                ns.node_name = ns.node_name[len(prefix):]
