"""The emulator backend: a ``tf.compat.v1.Session`` look-alike that runs the adapter's decisions on CPU.

How a step runs
---------------
1. The graph is planned (``npu_jupyter.plan``) for the config, cached per graph version and config
   snapshot; the per-fetch plan (pruned to what the fetches need) feeds the report.
2. The whole graph is copied into a private ``tf.Graph`` (see :mod:`.rewrite`): unchanged when the plan
   keeps float32, with storage rounding where the plan lowers an op to float16/bfloat16. The copy is
   built once per plan and run by an inner ``tf.compat.v1.Session`` whose ConfigProto is the real
   ``config.to_config_proto()`` (plain TensorFlow ignores the NpuOptimizer entry, as the product promises
   the same config works on a real NPU).
3. *Everything* runs in that copy — initializers, optimizer updates, savers — so variables live in one
   place. The user's tensors, ops and names map to the copy by name. When the copy must be rebuilt (the
   user added ops, the config changed), initialized variables are carried over (:mod:`.variables`).
4. Around the step: dump, overflow detection, profiling and float32 drift, as the config asks; the
   outcome lands in ``session.last_report`` (the last run made from the thread that created the
   session, so queue-runner threads do not replace it; the last run overall until that thread runs).

Steps are counted per graph, as on the device: each distinct run signature (fetches + fed tensors) is
its own compiled graph with its own iteration counter, and ``dump_step`` selects by that counter
(see :mod:`.dump`). The session-wide run count still drives ``accelerate_train_mode`` and the report's
``first_step``/``last_step``.

A float32-preserving plan runs an exact copy of the user's graph, so the only overhead is a name map and
a report per ``run``.
"""

from __future__ import annotations

import json
import threading
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

# This module is only imported when a session is created (backends.session imports it lazily), so
# TensorFlow is already needed; subclassing SessionInterface lets tf.compat.v1.train.Saver and other
# ``isinstance(sess, Session)`` checks accept the emulator. Inner sessions use TF's Session class
# itself, not ``tf.compat.v1.Session``, which ``%%npu`` cells temporarily replace.
from npu_jupyter.tensorflow_import import require_tensorflow

require_tensorflow("the emulator backend")  # one clear error when TensorFlow is missing
from tensorflow.python.client.session import Session as _TFSession
from tensorflow.python.client.session import SessionInterface

from npu_jupyter.runtime import dump as _dump
from npu_jupyter.runtime import profile as _profile
from npu_jupyter.runtime.report import RunReport
from npu_jupyter.runtime.rewrite import ROUND_MARKER, PrivateGraph, build_private_graph
from npu_jupyter.runtime.run_settings import RunSettings, option, read_run_settings, reduced_phase
from npu_jupyter.runtime.variables import read_variables, write_variables

_UNFETCHABLE = {"resource", "variant"}
# Per-session caches (plans per fetch set, watch lists) are dropped whole past this many entries.
_CACHE_LIMIT = 256
_FEED_TYPES = {"Placeholder", "PlaceholderWithDefault", "PlaceholderV2"}
_STATE_TYPES = {"VariableV2", "Variable", "VarHandleOp"}
# Reduction-style op types that accumulate with atomic adds on the AI Core (dump_debug_mode atomic_overflow).
_ATOMIC_TYPES = {
    "Sum", "Mean", "BiasAddGrad", "UnsortedSegmentSum", "ScatterAdd", "ScatterNdAdd",
    "TensorScatterAdd", "SegmentSum", "L2Loss", "ResourceScatterAdd",
}


@dataclass
class _Executor:
    """One private graph and the inner session that runs it."""

    key: tuple
    private: PrivateGraph
    session: Any
    plan: Any
    signature: tuple
    emulation: dict = field(default_factory=dict)


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
        tf = require_tensorflow("the emulator backend")

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
        self._closure_cache: dict[tuple, list] = {}
        self._exec: _Executor | None = None
        self._ref_exec: _Executor | None = None
        self._dump_writer: _dump.DumpWriter | None = None
        self._dump_stopped: str | None = None
        self._profile_writer: _profile.BackgroundWriter | None = None
        self._step = 0
        self._graph_steps: dict[tuple, list[int]] = {}  # run signature -> [graph id, runs so far]
        self._count_lock = threading.Lock()
        self._owner_thread = threading.get_ident()
        self._owner_last: RunReport | None = None
        self._last_any: RunReport | None = None
        self._closed = False
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
        signature = (tuple(names), tuple(sorted(_feed_names(feed_dict))))
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
        return _default_session_context(self)

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
        writer, self._profile_writer = getattr(self, "_profile_writer", None), None
        if writer is not None:
            writer.close()
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
        mapped = _map_fetches(fetches, ex.private, names)
        feeds = _map_feeds(feed_dict, ex.private)
        fetch_key = tuple(names)
        plan = self._plan_for(fetch_key)
        want_ref = self.reference if reference is None else bool(reference)
        if not (settings.observes or want_ref):
            start = time.perf_counter()
            results = ex.session.run(mapped, feeds, options, run_metadata)
            wall = (time.perf_counter() - start) * 1000.0
            step, _, _ = self._count(names, feed_dict)
            self._record(plan, fetch_key, wall, step, results, names)
            return results
        return self._observed_run(ex, settings, plan, mapped, feeds, feed_dict, names, options, run_metadata, want_ref)

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
            self._dump_writer = None
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

    def _plan(self, fetches: tuple | None, reduced: bool) -> Any:
        """Plan for ``fetches`` (None = whole graph), cached per graph version, config and phase."""
        key = (self._graph.version, self._config_snapshot(), reduced, fetches)
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

    def _plan_for(self, fetch_key: tuple) -> Any:
        ex = self._exec
        return self._plan(fetch_key, ex.key[2] if ex is not None else False)

    def _executor(self, settings: RunSettings | None = None) -> _Executor:
        """The private graph + inner session for the current graph version, config and phase."""
        settings = settings or self._settings()
        reduced = self._reduced(settings)
        key = (self._graph.version, self._config_snapshot(), reduced)
        ex = self._exec
        if ex is not None and ex.key == key:
            return ex
        plan = self._plan(None, reduced)
        private = build_private_graph(self._graph, plan, fixed_seeds=self.reference)
        signature = (self._graph.version, tuple((r.op, r.kind, r.slot, r.dtype) for r in private.roundings),
                     self._proto_snapshot())
        if ex is not None and ex.signature == signature:
            ex.key, ex.plan = key, plan  # same copy, same session: nothing to rebuild
            return ex
        session = _TFSession(target=self.target, graph=private.graph, config=self._proto())
        new = _Executor(key, private, session, plan, signature, private.emulation())
        if ex is not None:
            write_variables(session, private.graph, read_variables(ex.session, ex.private.graph))
            ex.session.close()
        self._exec = new
        if self._ref_exec is not None and self._ref_exec.key[0] != key[0]:
            self._ref_exec.session.close()
            self._ref_exec = None
        return new

    def _reference_executor(self) -> _Executor:
        """An unrewritten copy (float32 as the user wrote it) with the same fixed seeds."""
        ex = self._ref_exec
        if ex is not None and ex.key[0] == self._graph.version:
            return ex
        private = build_private_graph(self._graph, None, fixed_seeds=True)
        session = _TFSession(target=self.target, graph=private.graph, config=self._proto())
        self._ref_exec = _Executor((self._graph.version,), private, session, None, ())
        return self._ref_exec

    def _proto(self) -> Any:
        """The inner session's ConfigProto: the real NpuOptimizer config (plain TF ignores the entry)."""
        cfg = self.config
        if cfg is not None and hasattr(cfg, "to_config_proto"):
            return cfg.to_config_proto(self._base_proto) if self._base_proto is not None else cfg.to_config_proto()
        proto = self._tf.compat.v1.ConfigProto()
        if self._base_proto is not None:
            proto.CopyFrom(self._base_proto)
        return proto

    def _proto_snapshot(self) -> str:
        return self._config_snapshot()

    # ------------------------------------------------------------------ observed steps

    def _observed_run(self, ex, settings, plan, mapped, feeds, user_feeds, names, options, run_metadata, want_ref):
        step, graph_step, graph = self._count(names, user_feeds)
        dump_now = (settings.enable_dump and _dump.step_selected(settings.dump_steps, graph_step)
                    and not self._dump_stopped)
        watch = self._watch_list(ex, plan, names, user_feeds, settings, dump_now, want_ref)
        ref_values = self._reference_values(ex, mapped, feeds, watch) if want_ref else None
        run_options, meta = options, run_metadata
        if settings.profiling:
            run_options = self._tf.compat.v1.RunOptions()
            if options is not None:
                run_options.CopyFrom(options)
            run_options.trace_level = self._tf.compat.v1.RunOptions.FULL_TRACE
            meta = self._tf.compat.v1.RunMetadata()
        extra = [w[3] for w in watch]
        start = time.perf_counter()
        if extra:
            results, values = ex.session.run([mapped, extra], feeds, run_options, meta)
        else:
            results, values = ex.session.run(mapped, feeds, run_options, meta), []
        wall = (time.perf_counter() - start) * 1000.0
        if settings.profiling and run_metadata is not None:
            run_metadata.CopyFrom(meta)
        report = self._record(plan, tuple(names), wall, step, results, names)
        self._after_step(report, settings, plan, watch, values, ref_values, dump_now, meta, step, graph_step, graph)
        return results

    def _watch_list(self, ex, plan, names, user_feeds, settings, dump_now, want_ref) -> list[tuple]:
        """(op, kind, slot, private tensor name, decided dtype, is-float) for every tensor to look at."""
        if not (dump_now or settings.enable_dump_debug or want_ref):
            return []
        fed = tuple(sorted(_feed_names(user_feeds)))
        key = (ex.key, tuple(names), fed, dump_now and settings.dump_mode, settings.enable_dump_debug, want_ref,
               settings.dump_layer)
        cached = self._closure_cache.get(key)
        if cached is not None:
            return cached
        executed = _executed_ops(self._graph, names, set(fed))
        kinds = set()
        if dump_now:
            kinds |= {"output", "input"} if settings.dump_mode == "all" else {settings.dump_mode}
        if settings.enable_dump_debug or want_ref:
            kinds.add("output")
        watch: list[tuple] = []
        for name, decision in plan.ops.items():
            if name not in executed:
                continue
            op = self._graph.get_operation_by_name(name)
            if op._control_flow_context is not None or op.type in _STATE_TYPES:
                continue  # inside a v1 while/cond frame (unfetchable), or a variable (state, not a result)
            if "output" in kinds:
                for slot, t in enumerate(op.outputs):
                    if _fetchable(self._graph, t, fed):
                        want = decision.output_dtypes[slot] if slot < len(decision.output_dtypes) else ""
                        watch.append((name, "output", slot, ex.private.tensor_name(t.name), want,
                                      t.dtype.base_dtype.is_floating))
            if "input" in kinds:
                private_op = ex.private.graph.get_operation_by_name(name)
                for slot, t in enumerate(op.inputs):
                    if _fetchable(self._graph, t, fed):
                        want = decision.input_dtypes[slot] if slot < len(decision.input_dtypes) else ""
                        watch.append((name, "input", slot, private_op.inputs[slot].name, want,
                                      t.dtype.base_dtype.is_floating))
        if len(self._closure_cache) >= _CACHE_LIMIT:
            self._closure_cache.clear()  # a loop over ever-new fetch sets must not grow memory without bound
        self._closure_cache[key] = watch
        return watch

    def _reference_values(self, ex, mapped, feeds, watch) -> dict[tuple, Any]:
        """Run the float32 reference of this step from the emulated session's current weights."""
        ref = self._reference_executor()
        write_variables(ref.session, ref.private.graph, read_variables(ex.session, ex.private.graph))
        outputs = [w for w in watch if w[1] == "output" and w[5]]
        start = time.perf_counter()
        values = ref.session.run([w[0] + f":{w[2]}" for w in outputs], feeds) if outputs else []
        self._last_ref_ms = (time.perf_counter() - start) * 1000.0
        return {(w[0], w[2]): v for w, v in zip(outputs, values)}

    def _after_step(self, report, settings, plan, watch, values, ref_values, dump_now, meta, step, graph_step,
                    graph) -> None:
        """Dump and overflow checks go by the graph's own step; profiles by the session-wide one."""
        by_key = {(w[0], w[1], w[2]): (w, v) for w, v in zip(watch, values)}
        if settings.enable_dump_debug:
            self._check_overflow(report, settings, plan, by_key, graph_step, graph)
        if dump_now:
            entries = [
                _dump.DumpEntry(w[0], plan.ops[w[0]].op_type, w[1], w[2], v, w[4],
                                overflow=w[0] in report.extra.get("_overflow_now", ()))
                for w, v in zip(watch, values)
                if (w[1] in ("output", "input") and (settings.dump_mode == "all" or w[1] == settings.dump_mode))
                and (not settings.dump_layer or w[0] in settings.dump_layer)
            ]
            self._write_dump(report, settings, graph_step, entries, graph=graph)
        if ref_values is not None:
            self._record_drift(report, by_key, ref_values)
        if settings.profiling:
            self._record_profile(report, settings, plan, meta, step)
        report.extra.pop("_overflow_now", None)

    def _check_overflow(self, report, settings, plan, by_key, step, graph) -> None:
        """Flag ops whose outputs hold inf/NaN in their decided precision; dump them."""
        flagged: list[str] = []
        for (name, kind, _slot), (w, value) in by_key.items():
            if kind != "output" or not w[5] or name in flagged:
                continue
            if not _debug_covers(settings.dump_debug_mode, plan.ops[name]):
                continue
            array = np.asarray(value)
            if array.size and not np.isfinite(array).all():
                flagged.append(name)
        if not flagged:
            return
        report.extra["_overflow_now"] = list(flagged)
        for name in flagged:
            if name not in report.overflow_ops:
                report.overflow_ops.append(name)
        by_step = report.extra.setdefault("first_overflow_by_step", {})
        by_step[step] = flagged[0]
        report.first_overflow = flagged[0]
        if not settings.enable_dump or not _dump.step_selected(settings.dump_steps, step):
            entries = [
                _dump.DumpEntry(name, plan.ops[name].op_type, "output", slot, v, w[4], overflow=True)
                for (name, kind, slot), (w, v) in by_key.items()
                if kind == "output" and name in flagged
            ]
            self._write_dump(report, settings, step, entries, overflow_only=True, graph=graph)

    def _write_dump(self, report, settings, step, entries, overflow_only: bool = False, graph=None) -> None:
        if self._dump_stopped:
            return
        if self._dump_writer is None:
            self._dump_writer = _dump.DumpWriter(settings.dump_path, budget_bytes=self._dump_budget,
                                                 stats_only=settings.dump_data == "stats")
        meta = {
            "dump_mode": "overflow" if overflow_only else settings.dump_mode,
            "overflow_ops": list(report.extra.get("_overflow_now", ())),
            "first_overflow": report.extra.get("first_overflow_by_step", {}).get(step),
            "backend": "emulator",
        }
        try:
            folder = self._dump_writer.write_step(step, entries, meta, graph=graph)
        except _dump.DumpBudgetExceeded as exc:
            self._dump_stopped = str(exc)
            report.warnings.append(str(exc))
            warnings.warn(str(exc), RuntimeWarning, stacklevel=4)
            return
        report.dump_dir = self._dump_writer.root  # the dump_path the user set; load_dump(dump_dir) reads it
        report.extra["dump_graph_dir"] = str(Path(folder).parent)  # dump_path for graph 0, graph_<k> after
        report.extra.setdefault("dumped_steps", []).append(step)

    def _record_drift(self, report, by_key, ref_values) -> None:
        from npu_jupyter.runtime.compare import metrics

        drift: dict[str, dict[str, float]] = {}
        for (name, slot), ref in ref_values.items():
            hit = by_key.get((name, "output", slot))
            if hit is None or np.shape(hit[1]) != np.shape(ref):
                continue
            m = metrics(hit[1], ref)
            row = {"max_abs": m["max_abs"], "max_rel": m["max_rel"], "cos": m["cosine"], "rmse": m["rmse"],
                   "accumulated_rel": m["accumulated_rel"]}
            old = drift.get(name)
            if old is None or not (row["max_abs"] <= old["max_abs"]):
                drift[name] = row
        report.drift = drift
        report.reference_wall_ms = getattr(self, "_last_ref_ms", None)

    def _record_profile(self, report, settings, plan, meta, step) -> None:
        options = settings.profile_options()
        prof = _profile.collect(meta.step_stats, self._graph, plan, step, marker=ROUND_MARKER)
        out_dir = str(options.get("output") or "./")
        if self._profile_writer is None:
            self._profile_writer = _profile.BackgroundWriter()
        self._profile_writer.submit(prof, self._graph, options, out_dir)
        report.trace_file = prof.trace_file
        report.op_summary_csv = prof.op_summary_csv
        sums = report.extra.setdefault("_op_time_sums", {})
        for name, us in prof.op_times_us().items():
            sums[name] = sums.get(name, 0.0) + us
        runs = report.extra["profiled_steps"] = report.extra.get("profiled_steps", 0) + 1
        report.op_times_us = {name: total / runs for name, total in sums.items()}
        report.extra["emulator_cast_us"] = prof.cast_us

    # ------------------------------------------------------------------ reports

    def _record(self, plan, fetch_key, wall_ms, step, results, names) -> RunReport:
        """Start a report, or fold this step into the last one when the fetches and plan are the same."""
        report = self._fold_or_start(plan, fetch_key, wall_ms, step, results, names)
        self._last_any = report
        if threading.get_ident() == self._owner_thread:
            self._owner_last = report
        return report

    def _fold_or_start(self, plan, fetch_key, wall_ms, step, results, names) -> RunReport:
        """Fold into the last run's report when the fetches and plan are the same, else start one."""
        last = self._last_any
        if last is not None and last.plan is plan and last.extra.get("_fetch_key") == fetch_key:
            total = last.extra["total_wall_ms"] + wall_ms
            last.steps += 1
            last.extra["total_wall_ms"] = total
            last.wall_ms = total / last.steps
            last.extra["last_step"] = step
            last.extra["values"] = _fetch_values(names, results)
            return last
        report = RunReport(plan=plan, backend="emulator", fetches=list(names), steps=1, wall_ms=wall_ms)
        if self._exec is not None:
            emulation = self._exec.emulation
            report.emulation = {op: how for op, how in emulation.items() if op in plan.ops}
        report.extra.update(_fetch_key=fetch_key, total_wall_ms=wall_ms, first_step=step, last_step=step,
                            values=_fetch_values(names, results))
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


def _map_fetches(fetches: Any, private: PrivateGraph, names: list[str]) -> Any:
    """The user's fetch structure with every leaf replaced by the private graph's name for it.

    ``names`` collects the user-side names (tensor ``op:slot`` or op name) in flattening order.
    """
    if isinstance(fetches, (list, tuple)):
        mapped = [_map_fetches(f, private, names) for f in fetches]
        if isinstance(fetches, tuple) and hasattr(fetches, "_fields"):
            return type(fetches)(*mapped)
        return type(fetches)(mapped) if isinstance(fetches, tuple) else mapped
    if isinstance(fetches, dict):
        return type(fetches)((k, _map_fetches(v, private, names)) for k, v in fetches.items())
    return _map_leaf(fetches, private, names)


def _default_session_context(session: Any) -> Any:
    """TF's context manager that makes ``session`` the default one, wherever this TF version keeps it.

    TF 2.16+ has ``tensorflow.python.framework.stack.default_session``; TF 2.6.5 (the Ascend adapter's
    TF 2 version) has no ``stack`` module and keeps the same function in ``framework.ops``.
    """
    require_tensorflow("the emulator backend")
    try:
        from tensorflow.python.framework import stack
    except ImportError:
        from tensorflow.python.framework import ops as stack  # older TF (2.6.5): ops.default_session
    return stack.default_session(session)


def _map_leaf(leaf: Any, private: PrivateGraph, names: list[str]) -> Any:
    if isinstance(leaf, str):
        names.append(leaf)
        return private.tensor_name(leaf) if ":" in leaf else leaf
    if hasattr(leaf, "indices") and hasattr(leaf, "dense_shape") and hasattr(leaf, "values"):
        tf = require_tensorflow("the emulator backend")  # SparseTensor / IndexedSlices: map their components

        parts = [private.graph.get_tensor_by_name(private.tensor_name(t.name))
                 for t in (leaf.indices, leaf.values, leaf.dense_shape)]
        names.extend(t.name for t in (leaf.indices, leaf.values, leaf.dense_shape))
        if isinstance(leaf, tf.SparseTensor):
            return tf.SparseTensor(parts[0], parts[1], parts[2])
        return tf.IndexedSlices(parts[1], parts[0], parts[2])
    convert = getattr(leaf, "_as_graph_element", None)  # variables fetch as their value tensor
    element = convert() if callable(convert) else leaf
    element = leaf if element is None else element
    name = getattr(element, "name", None)
    if name is None or not hasattr(element, "graph"):
        raise TypeError(
            f"Fetch argument {leaf!r} has invalid type {type(leaf)}, must be a string or Tensor/Operation "
            "(or a nested list/tuple/dict of them)"
        )
    names.append(name)
    return private.tensor_name(name) if ":" in name else name


def _map_feeds(feed_dict: Any, private: PrivateGraph) -> dict | None:
    """Feed keys by name (feeding a tensor's original name also feeds its rounded consumers)."""
    if not feed_dict:
        return None
    out: dict[Any, Any] = {}
    for key, value in feed_dict.items():
        if hasattr(key, "indices") and hasattr(key, "dense_shape") and hasattr(key, "values"):
            parts = (key.indices, key.values, key.dense_shape)
            vals = (value.indices, value.values, value.dense_shape) if hasattr(value, "indices") else value
            for p, v in zip(parts, vals):
                out[p.name] = v
            continue
        out[key if isinstance(key, str) else key.name] = value
    return out


def _feed_names(feed_dict: Any) -> list[str]:
    if not feed_dict:
        return []
    return [k if isinstance(k, str) else getattr(k, "name", str(k)) for k in feed_dict]


def _executed_ops(graph: Any, names: list[str], fed: set[str]) -> set[str]:
    """Ops a run of ``names`` executes: the fetch closure, cut at fed tensors."""
    stack: list[Any] = []
    for name in names:
        element = graph.as_graph_element(name, allow_tensor=True, allow_operation=True)
        stack.append(element if hasattr(element, "control_inputs") else element.op)
    seen: set[str] = set()
    while stack:
        op = stack.pop()
        if op.name in seen:
            continue
        seen.add(op.name)
        for t in op.inputs:
            if t.name not in fed:
                stack.append(t.op)
            elif t.op.type in _FEED_TYPES:
                seen.add(t.op.name)  # a fed placeholder's value is part of the step (dumped as its output)
        stack.extend(op.control_inputs)
    return seen


def _fetchable(graph: Any, tensor: Any, fed: tuple) -> bool:
    if tensor.dtype.base_dtype.name in _UNFETCHABLE or tensor.dtype.base_dtype.name == "string":
        return False
    if tensor.op.type == "Placeholder" and tensor.name not in fed:
        return False
    return graph.is_fetchable(tensor)


def _debug_covers(mode: str, decision: Any) -> bool:
    """Which ops ``dump_debug_mode`` watches: AI Core ops, atomic accumulations, or all device ops."""
    if decision.engine == "HOST":
        return False  # host ops run on the CPU, outside the device's overflow detection
    if mode == "aicore_overflow":
        return decision.engine == "AI_CORE"
    if mode == "atomic_overflow":
        return decision.op_type in _ATOMIC_TYPES
    return True


def _fetch_values(names: list[str], results: Any) -> dict[tuple[str, str], Any]:
    """(fetch name, "output:0") -> value for array-valued leaves, for compare() over two reports."""
    if len(names) == 1 and not isinstance(results, (list, tuple, dict)):
        leaves = [results]
    else:
        leaves = _leaves(results)
    if len(leaves) != len(names):
        return {}
    return {(n, "output:0"): v for n, v in zip(names, leaves) if isinstance(v, (np.ndarray, np.generic, float, int))}


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in _leaves(v)]
    if isinstance(value, dict):
        return [x for v in value.values() for x in _leaves(v)]
    return [value]
