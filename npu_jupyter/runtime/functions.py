"""TF2 code on the emulator: every ``tf.function`` a cell runs, planned and run in the decided precisions.

Keras ``fit``/``evaluate``/``predict`` and custom GradientTape loops run traced functions: FunctionDefs
in the eager context's library, called by name. While :class:`FunctionEmulation` is active, the first
eager call of each function plans its graph and the graphs of the functions it calls
(``AtomicFunction.children``), and registers, under the same names, definitions with the plan's
storage rounding (:mod:`npu_jupyter.runtime.function_rewrite`). Calls are timed (CPU time of the
emulation) and counted per top-level function; leaving the context puts the original definitions
back, so code after the cell runs as before.

Each function is planned with the TF2 adapter's own placement rule (``plan(..., adapter="tf2")``,
:mod:`npu_jupyter.plan.tf2_placement`: npu_device's NodePlacer), and each report says what that
prediction models and what it approximates (:data:`TF2_RULE_NOTE`). Limits: TensorFlow ≥ 2.14 (the
``AtomicFunction`` call path); dump, overflow detection per op and drift are not yet captured inside
functions — a non-finite output of a function is reported without naming the first op.
"""

from __future__ import annotations

import time
from typing import Any, Callable, cast

from npu_jupyter.runtime.report import RunReport

#: Said in every TF2 report: whose rule placed the ops, and what the prediction approximates.
TF2_RULE_NOTE = (
    "TF2 code: placement predicted with the TF2 adapter's own rule (npu_device NodePlacer): a function "
    "whose ops are all in npu_supported_ops.json compiles whole on the NPU; otherwise unsupported ops, and "
    "ops joined to them by string/resource/variant tensors, run on the CPU. Approximated: op support comes "
    "from the bundled npu_supported_ops.json unless CANN is installed; captured resources read by variable "
    "ops are taken to be NPU variables (created after npu_device.open().as_default()); each function of the "
    "call tree is planned on its own; NPU_LOOP_SIZE device loops and dynamic shapes are not modelled"
)


def supported() -> bool:
    """True when this TensorFlow calls traced functions through ``AtomicFunction`` (TF ≥ 2.14)."""
    try:
        from tensorflow.python.eager.polymorphic_function import atomic_function  # noqa: F401
    except ImportError:
        return False
    return True


class FunctionEmulation:
    """Emulate the config's precisions in every traced function called eagerly inside the ``with`` block.

    ``reports`` maps each top-level function name to its :class:`RunReport` (plan of the largest
    function in its call tree, the roundings of all of them, calls and CPU time).
    """

    def __init__(self, config: Any, *, soc: str | None = None, plan_fn: Callable[..., Any] | None = None) -> None:
        from npu_jupyter.options.config import NpuConfig

        base = config if isinstance(config, NpuConfig) else NpuConfig(config or {})
        self.config = base  # npu_device has no mix_compile_mode: its own rule mixes when needed
        self.soc = soc
        self._plan_fn = plan_fn
        self.reports: dict[str, RunReport] = {}
        self._originals: dict[str, Any] = {}  # function name -> original FunctionDef
        self._handled: dict[str, Any] = {}  # function name -> RewrittenFunction
        self._context: Any = None
        self._saved: Any = None

    # ----------------------------------------------------------------------------- context manager
    def __enter__(self) -> FunctionEmulation:
        from tensorflow.python.eager.polymorphic_function import atomic_function

        self._saved = atomic_function.AtomicFunction.call_flat
        emulation = self
        original = self._saved

        def call_flat(function: Any, *args: Any, **kwargs: Any) -> Any:
            from tensorflow.python.eager import context

            if not context.executing_eagerly():
                return original(function, *args, **kwargs)
            emulation._prepare(function)
            start = time.perf_counter()
            result = original(function, *args, **kwargs)
            emulation._record(function, (time.perf_counter() - start) * 1000.0, result)
            return result

        atomic_function.AtomicFunction.call_flat = call_flat
        return self

    def __exit__(self, *exc: object) -> None:
        from tensorflow.python.eager.polymorphic_function import atomic_function

        atomic_function.AtomicFunction.call_flat = self._saved
        for name, original in self._originals.items():
            _register(self._context, name, original)
        self._originals.clear()

    # ----------------------------------------------------------------------------- per function
    def _prepare(self, function: Any) -> None:
        """Plan and rewrite ``function`` and everything it calls, once per emulation."""
        key = _name(function)
        if key in self.reports:
            return
        self._context = function._bound_context
        tree = [function, *_descendants(function)]
        plans = []
        emulation: dict[str, str] = {}
        warnings: list[str] = []
        for member in tree:
            rewritten, plan = self._rewrite(member)
            if plan is not None:
                plans.append(plan)
                warnings.extend(plan.errors + plan.warnings)
            if rewritten is not None:
                emulation.update({f"{_name(member)}/{op}": how for op, how in rewritten.emulation().items()})
        main = max(plans, key=lambda p: len(p.ops)) if plans else None
        # main is None when no function had a plannable graph; RunReport.plan is typed Plan (report.py)
        report = RunReport(plan=main, backend="emulator", fetches=[key], steps=0, wall_ms=0.0)  # type: ignore[arg-type]
        report.emulation = emulation
        report.warnings = list(dict.fromkeys(warnings))
        report.extra["notes"] = [TF2_RULE_NOTE]
        lowered = main is not None and any(d.precision_changed for d in main.ops.values())
        if lowered and not emulation:
            report.warnings.append(
                "the plan lowers precision but no float32 tensor of this function was "
                "rounded (the lowered tensors are not float32)"
            )
        report.extra["tf2_functions"] = [_name(m) for m in tree]
        self.reports[key] = report

    def _rewrite(self, function: Any) -> tuple[Any, ...]:
        """(RewrittenFunction or None, Plan or None) for one function; registers the rewrite."""
        from npu_jupyter.runtime.function_rewrite import rewrite_function

        name = _name(function)
        if name in self._handled:
            return cast("tuple[Any, ...]", self._handled[name])
        graph = getattr(function, "graph", None)
        if graph is None or not graph.get_operations():
            self._handled[name] = (None, None)
            return cast("tuple[Any, ...]", self._handled[name])
        plan = self._plan(graph)
        rewritten = rewrite_function(function.definition, graph, plan)
        if rewritten.roundings:
            self._originals.setdefault(name, function.definition)
            _register(function._bound_context, name, rewritten.definition)
        self._handled[name] = (rewritten, plan)
        return cast("tuple[Any, ...]", self._handled[name])

    def _plan(self, graph: Any) -> Any:
        plan_fn = self._plan_fn
        if plan_fn is None:
            from npu_jupyter.plan.planner import plan as default_plan

            return default_plan(graph, self.config, soc=self.soc, adapter="tf2")
        return plan_fn(graph, self.config, soc=self.soc)

    def _record(self, function: Any, wall_ms: float, result: Any) -> None:
        """Count the call, add its CPU time, and note a non-finite float output."""
        report = self.reports[_name(function)]
        report.steps += 1
        report.wall_ms += wall_ms
        bad = _non_finite_outputs(result)
        if bad and "nonfinite" not in report.extra:
            report.extra["nonfinite"] = {"step": report.steps - 1, "outputs": bad}
            report.warnings.append(
                f"call {report.steps - 1} returned non-finite values in output(s) {', '.join(map(str, bad))}; "
                "the first op that produced them is not located inside tf.functions yet"
            )


def _name(function: Any) -> str:
    name = function.name
    return name.decode() if isinstance(name, bytes) else str(name)


def _descendants(function: Any) -> list[Any]:
    """Every function ``function`` calls, transitively, each once."""
    seen: dict[str, Any] = {}
    stack = list(getattr(function, "children", []) or [])
    while stack:
        child = stack.pop()
        if _name(child) in seen:
            continue
        seen[_name(child)] = child
        stack.extend(getattr(child, "children", []) or [])
    return list(seen.values())


def _register(context: Any, name: str, definition: Any) -> None:
    """Put ``definition`` in ``context``'s library under ``name`` (replacing what is there)."""
    if context is None:
        return
    if context.has_function(name):
        context.remove_function(name)
    context.add_function_def(definition)


def _non_finite_outputs(result: Any) -> list[int]:
    """Indices of float outputs holding NaN or Inf."""
    import numpy as np

    bad = []
    for index, value in enumerate(result if isinstance(result, (list, tuple)) else [result]):
        dtype = getattr(value, "dtype", None)
        if dtype is None or not getattr(dtype, "is_floating", False):
            continue
        try:
            array = np.asarray(value)
        except Exception:  # noqa: BLE001, S112 - a resource or variant output: nothing to check
            continue
        if array.size and not np.isfinite(array).all():
            bad.append(index)
    return bad


__all__ = ["TF2_RULE_NOTE", "FunctionEmulation", "supported"]
