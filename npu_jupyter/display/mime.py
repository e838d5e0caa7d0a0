"""The report MIME bundle: one versioned JSON payload, rendered three ways.

A :class:`~npu_jupyter.plan.model.Plan` or :class:`~npu_jupyter.runtime.report.RunReport` becomes the
JSON object described in ``docs/report-schema.md`` (drawn by the JupyterLab extension), and the
``text/html`` and ``text/plain`` fallbacks are rendered *from that payload*, so every frontend shows the
same facts and there is one place where user data enters the output.

Two properties matter more than completeness:

* **Bounded** — a 7k-op training graph must stay under 1 MB (notebooks are saved with their outputs).
  Keys are short, reason texts are stored once and referenced by index, and when the payload is still
  over budget the ops a person needs first (overflowed, left the device, changed precision) are kept and
  ``truncated`` is set.
* **Deterministic** — no timestamps, ids or set iteration: the same plan gives byte-identical output,
  so nbval can compare notebook outputs.
"""

from __future__ import annotations

import json
import math
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover - typing only; keeps this module import-light
    from npu_jupyter.cost.attach import CostBlock
    from npu_jupyter.plan.model import Plan
    from npu_jupyter.runtime.report import RunReport

MIME_TYPE = "application/vnd.npu-jupyter.report+json"
SCHEMA = "npu-jupyter.report"
VERSION = 1
BUDGET_BYTES = 1_000_000
# A warning that names thousands of ops must not eat the whole budget on its own.
_MAX_MESSAGE_CHARS = 2_000
_MAX_MESSAGES = 100


def report_payload(obj: Plan | RunReport, *, budget: int = BUDGET_BYTES) -> dict[str, Any]:
    """The ``application/vnd.npu-jupyter.report+json`` payload of a plan or a run report.

    Parameters
    ----------
    obj : Plan or RunReport
        What to report. A RunReport adds per-op times, drift and overflow flags, and a ``run`` block.
    budget : int
        Upper bound in bytes of the compact JSON encoding. Ops are dropped (most interesting kept,
        ``truncated`` set) until the payload fits.

    """
    plan, run = _split(obj)
    order = list(plan.ops)
    keep = order
    payload = _build(plan, run, keep)
    if _size(payload) <= budget:
        return payload
    ranked = _ranked(plan, run)
    fixed = _size(_build(plan, run, []))
    costs = {name: _op_cost(plan.ops[name]) for name in ranked}
    count = _prefix_within(ranked, costs, budget - fixed)
    while True:
        chosen = set(ranked[:count])
        keep = [name for name in order if name in chosen]
        payload = _build(plan, run, keep, truncated=True)
        if _size(payload) <= budget or count == 0:
            return payload
        count = int(count * 0.9)


def mimebundle(obj: Plan | RunReport, *, detail: str | None = None) -> dict[str, Any]:
    """``_repr_mimebundle_`` of Plan and RunReport: the JSON payload plus HTML and text fallbacks.

    ``detail`` is ``"summary"`` (interesting ops first, the rest collapsed and capped) or ``"full"``
    (every op); ``None`` uses the session default that ``%config NpuMagics.detail`` sets.
    """
    from npu_jupyter.display import html, text

    payload = report_payload(obj)
    level = detail or html.default_detail()
    return {
        MIME_TYPE: payload,
        "text/html": html.render(payload, detail=level),
        "text/plain": text.render(payload, detail=level),
    }


def _split(obj: Any) -> tuple[Plan, RunReport | None]:
    """Return (plan, run report or None); anything else is a programming error worth naming."""
    from npu_jupyter.plan.model import Plan

    if isinstance(obj, Plan):
        return obj, None
    plan = getattr(obj, "plan", None)
    if isinstance(plan, Plan):
        return plan, obj
    raise TypeError(f"report_payload() takes a Plan or a RunReport, not {type(obj).__name__}")


def _size(payload: dict[str, Any]) -> int:
    """Bytes of the compact, ASCII-escaped encoding: the upper bound of what a notebook stores."""
    return len(json.dumps(payload, separators=(",", ":")))


def _op_cost(decision: Any) -> int:
    """Rough bytes one op entry adds (name, type, fixed keys, a few input indices)."""
    return len(decision.name) + len(decision.op_type) + 90 + 6 * len(decision.inputs)


def _prefix_within(ranked: list[str], costs: dict[str, int], room: int) -> int:
    """How many of the ranked ops fit into ``room`` bytes."""
    used = 0
    for index, name in enumerate(ranked):
        used += costs[name]
        if used > room:
            return index
    return len(ranked)


def _ranked(plan: Plan, run: RunReport | None) -> list[str]:
    """Op names, most interesting first: overflowed, computing on the host, precision changed, host
    constants, AI CPU, then the rest slowest first.

    Ties keep topological order (``sorted`` is stable), so the choice is deterministic.
    """
    overflow = set(run.overflow_ops) if run else set()
    times = run.op_times_us if run else {}

    def rank(item: tuple[int, str]) -> tuple[int, float, int]:
        position, name = item
        d = plan.ops[name]
        if name in overflow:
            tier = 0
        elif d.engine == "HOST" and d.op_type not in ("Const", "Placeholder"):
            tier = 1
        elif d.dtype_before != d.dtype_after:
            tier = 2
        elif d.engine == "HOST":
            tier = 3
        elif d.engine == "AI_CPU":
            tier = 4
        else:
            tier = 5
        return tier, -float(times.get(name, 0.0)), position

    return [name for _, name in sorted(enumerate(plan.ops), key=rank)]


def _build(plan: Plan, run: RunReport | None, keep: list[str], *, truncated: bool = False) -> dict[str, Any]:
    """Assemble the payload for the ops in ``keep`` (topological order)."""
    reasons = _Interner()
    index = {name: i for i, name in enumerate(keep)}
    cluster_names = [sub.name for sub in plan.subgraphs]
    cluster_index = {name: i for i, name in enumerate(cluster_names)}
    clusters = [{"name": sub.name, "size": len(sub.ops)} for sub in plan.subgraphs]
    for name in keep:  # a decision naming a cluster the plan did not list still gets an entry
        cluster = plan.ops[name].cluster
        if cluster and cluster not in cluster_index:
            cluster_index[cluster] = len(clusters)
            clusters.append({"name": cluster, "size": sum(d.cluster == cluster for d in plan.ops.values())})
    ops = [_op_entry(plan.ops[name], index, cluster_index, reasons, run) for name in keep]
    functions = list(getattr(plan, "functions", None) or [])  # plans cached before the field existed
    if len(functions) > 1:
        _mark_functions(ops, keep, functions)
    payload: dict[str, Any] = {
        "schema": SCHEMA,
        "version": VERSION,
        "kind": "run" if run is not None else "plan",
        "title": _title(plan, run),
        "soc": plan.soc,
        "config": _jsonable_config(plan.config_changes),
        "effective_precision_mode": plan.precision_mode,
        "summary": plan.summary(),
        "reasons": reasons.items,
        "clusters": clusters,
        "ops": ops,
        "transfers": _transfers(plan, index),
        "warnings": _messages(_grouped(plan, _warnings(plan, run))),
        "errors": _messages(_grouped(plan, plan.errors)),
        "truncated": truncated,
    }
    payload.update(_plan_extras(plan, run, payload["summary"]))
    if len(functions) > 1:
        payload["functions"] = _functions_block(plan, functions)
    if run is not None:
        payload["run"] = _run_block(run)
    return payload


def _warnings(plan: Plan, run: RunReport | None) -> list[str]:
    """The plan's and the run's warnings, less the non-finite finding the ``run.nonfinite`` fact already says.

    The run notes the first non-finite value both as a warning and in ``run.non_finite``; every view
    shows the latter as its labelled "First non-finite value" line, so the sentence would appear twice.
    The warning names the step or call (``message``: "In call 3 of f, …") where the fact's ``reason``
    does not ("In this call, …"): both spellings are the same finding.
    """
    warnings = list(plan.warnings) + (list(run.warnings) if run is not None else [])
    finding = run.non_finite if run is not None else None
    said = {finding.reason, finding.message} - {""} if finding is not None else set()
    return [w for w in warnings if w not in said]


def _mark_functions(ops: list[dict[str, Any]], keep: list[str], functions: list[str]) -> None:
    """``f``: the index of the called function an op belongs to (absent for the function reported on)."""
    from npu_jupyter.runtime.function_tree import function_of

    for entry, name in zip(ops, keep):
        where = function_of(name, functions)
        if where:
            entry["f"] = where


def _functions_block(plan: Plan, functions: list[str]) -> list[dict[str, Any]]:
    """The traced functions a tree plan covers, the called one first: name, Python name, op count."""
    from npu_jupyter.runtime.function_labels import python_name
    from npu_jupyter.runtime.function_tree import function_of

    counts = [0] * len(functions)
    for name in plan.ops:
        counts[function_of(name, functions)] += 1
    return [{"name": name, "label": python_name(name), "ops": counts[k]} for k, name in enumerate(functions)]


def _grouped(plan: Plan, messages: list[str]) -> list[str]:
    """Messages differing only in the op they name, folded into one (:mod:`.grouping`)."""
    from npu_jupyter.display.grouping import group_messages

    if len(messages) < 2:
        return messages
    names = set(plan.ops)
    if len(getattr(plan, "functions", None) or []) > 1:  # a called function's findings name its own ops
        names |= {name.split("/", 1)[1] for name in plan.ops if "/" in name}
    return group_messages(messages, names)


def _plan_extras(plan: Plan, run: RunReport | None, summary: dict[str, Any]) -> dict[str, Any]:
    """The optional top-level slots: ``notes``, ``cost_model`` and ``labels`` when known, and ``predicted``.

    ``predicted`` is always set: it says where the placements and precisions come from.
    """
    out: dict[str, Any] = {}
    approximate = sum(bool(getattr(d, "approximate", False)) for d in plan.ops.values())
    if approximate:
        summary["approximate"] = approximate
    notes = list(dict.fromkeys(list(plan.notes or []) + (list(run.notes) if run is not None else [])))
    if notes:
        out["notes"] = _messages(notes)
    # Every decision is the planner's prediction unless a backend read it from the device (SPEC §9).
    out["predicted"] = True if run is None else bool(run.predicted)
    estimate = run.estimate if run is not None else None
    cost = estimate.block if estimate is not None else None
    if cost is not None:
        out["cost_model"] = _cost_block(cost)
    labels = _labels(run, cost is not None or bool(estimate is not None and estimate.est_us))
    if labels:
        out["labels"] = labels
    return out


_COST_FIELDS = ("step_ms", "memory_bytes", "step_ratio_fp32", "memory_ratio_fp32", "launch_share")


def _cost_block(cost: CostBlock) -> dict[str, Any]:
    """The cost model's per-step estimate, rounded."""
    out: dict[str, Any] = {}
    for name in _COST_FIELDS:
        value = getattr(cost, name)
        if name == "memory_bytes":
            out[name] = None if value is None else int(value)
        else:
            out[name] = None if value is None else _round(value, 4)
    out["basis"] = str(cost.basis)
    return out


_MEASURED = {"emulator": "CPU time of the emulation", "ascend": "measured on the device"}


def _labels(run: RunReport | None, estimated: bool) -> dict[str, str]:
    """What each number of a run is: defaults from the backend, overridden by the run's own ``labels``."""
    if run is None:
        return {}
    measured = _MEASURED.get(run.backend, f"measured by the {run.backend} backend")
    labels = {"wall_ms": measured}
    if run.op_times_us:
        labels["us"] = measured
    if estimated:
        labels["est_us"] = "estimated by the cost model"
    labels.update({str(k): str(v) for k, v in run.labels.items()})
    return dict(sorted(labels.items()))


class _Interner:
    """Reason texts stored once; ops refer to them by index (most reasons repeat thousands of times)."""

    def __init__(self) -> None:
        self.items: list[str] = []
        self._index: dict[str, int] = {}

    def __call__(self, text: str) -> int:
        found = self._index.get(text)
        if found is None:
            found = self._index[text] = len(self.items)
            self.items.append(text)
        return found


def _op_entry(
    d: Any,
    index: dict[str, int],
    cluster_index: dict[str, int],
    reasons: _Interner,
    run: RunReport | None,
) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "n": d.name,
        "t": d.op_type,
        "e": d.engine,
        "d0": d.dtype_before or "",
        "d1": d.dtype_after or "",
        "c": cluster_index.get(d.cluster, -1) if d.cluster else -1,
        "pr": reasons(d.placement_reason or ""),
        "xr": reasons(d.precision_reason or ""),
        "i": [index[src] for src in d.inputs if src in index],
    }
    if run is not None:
        if d.name in run.op_times_us:
            entry["us"] = _round(run.op_times_us[d.name], 3)
        if d.name in run.drift:
            entry["dr"] = {k: _round(v, 6) for k, v in sorted(run.drift[d.name].items())}
        if d.name in run.overflow_ops:
            entry["ov"] = True
        estimate = run.estimate
        estimates = estimate.est_us if estimate is not None else {}
        if d.name in estimates and estimates[d.name] is not None:
            entry["est_us"] = _round(estimates[d.name], 3)
    if getattr(d, "approximate", False):
        entry["approximate"] = True
    reads = list(getattr(d, "lowered_reads", []) or [])
    if reads and entry["d0"] == entry["d1"]:  # reads lowered, writes its declared dtype
        entry["rd"] = "/".join(reads)
    return entry


def _transfers(plan: Plan, index: dict[str, int]) -> list[dict[str, Any]]:
    """Host<->device edges whose two ends are both in the payload."""
    out = []
    for t in plan.transfers:
        if t.src in index and t.dst in index:
            out.append({"s": index[t.src], "d": index[t.dst], "dt": t.dtype, "b": t.bytes, "dir": t.direction})
    return out


def _run_block(run: RunReport) -> dict[str, Any]:
    return {
        "backend": run.backend,
        "steps": run.steps,
        "wall_ms": _round(run.wall_ms, 3),
        "reference_wall_ms": None if run.reference_wall_ms is None else _round(run.reference_wall_ms, 3),
        "first_overflow": run.first_overflow,
        "dump_dir": shown_path(run.dump_dir),
        "trace_file": shown_path(run.trace_file),
        "op_summary_csv": shown_path(run.op_summary_csv),
        **_run_extras(run),
        # ascend backend only (null / empty otherwise): see docs/report-schema.md
        "prediction": run.prediction_note,
        "adapter_outputs": [dict(o) for o in run.adapter_outputs][:100],
        "actual": _actual_block(run.actual),
    }


def shown_path(path: str | None) -> str | None:
    """A file a run wrote, as the views show and link it: relative to the kernel's working directory
    when it lies inside it (the notebook's folder, which JupyterLab can open), else absolute.

    A run records paths as it was given them (``--dump ./dump`` relative, ``--profile $dir``
    absolute); shown side by side they must read alike, and a relative one is a link in the views.
    """
    if not path:
        return path
    absolute = os.path.abspath(path)
    try:
        relative = os.path.relpath(absolute, os.getcwd())
    except ValueError:  # another drive on Windows
        return absolute
    return absolute if relative == os.pardir or relative.startswith(os.pardir + os.sep) else relative


def _actual_block(actual: dict[str, Any] | None) -> dict[str, Any] | None:
    """GE's actual engine/dtypes next to the prediction, capped like the other lists."""
    if actual is None:
        return None
    rows = list(actual.get("rows", []))
    return {
        "files": list(actual.get("files", []))[:100],
        "rows": [dict(r) for r in rows[:2000]],
        "differ": sum(1 for r in rows if not r.get("same")),
        "compared": len(rows),
        "missing": int(actual.get("missing", 0)),
        "error": actual.get("error"),
    }


def _run_extras(run: RunReport) -> dict[str, Any]:
    """Optional run facts: which steps were dumped or skipped, and the first non-finite value."""
    out: dict[str, Any] = {}
    if run.dump.steps:
        out["dump_steps"] = sorted(set(run.dump.steps))
    if run.dump.skipped:
        out["dump_skipped"] = [{"step": item.step, "reason": item.reason} for item in run.dump.skipped[:_MAX_MESSAGES]]
    if run.rounded_tensors is not None:
        out["rounded_tensors"] = int(run.rounded_tensors)
    finding = run.non_finite
    if finding is not None:
        out["nonfinite"] = {"first_op": finding.where, "step": finding.step, "reason": finding.reason}
    return out


def _title(plan: Plan, run: RunReport | None) -> str:
    """``Run of loss:0: <plan title>`` or ``Plan of loss (Ascend910, mode) · 45 ops · full offload``.

    A plan asked for named fetches (``%npu explain loss``) says so first, like a run report does; the
    SoC and precision mode move into its parentheses, so they are not repeated from the planner's title.
    """
    mode = plan.precision_mode or "adapter default precision"
    base = plan.title or f"Plan ({plan.soc}, {mode})"
    if run is not None and run.fetches:
        label = run.function.label if run.function is not None else None  # Keras entry point or Python name
        if label and label not in run.fetches:
            # The Python name, not TensorFlow's __inference_<name>_<uid> (the uid changes per trace).
            from npu_jupyter.runtime.function_labels import python_name

            names = [python_name(f) for f in run.fetches]
            return f"Calls of {label}{'' if names == [label] else f' ({_names(names)})'}: {base}"
        return f"Run of {_names(run.fetches)}: {base}"
    fetches = getattr(plan, "fetches", None)  # plans pickled by plan_cache before the field existed
    if run is None and fetches:
        head = f"Plan of {_names(fetches)} ({plan.soc}, {mode})"
        rest = [part for part in plan.title.split(" · ") if part and not _restates(part, plan.soc, mode)]
        return " · ".join([head, *rest])
    return base


def _names(fetches: list[str]) -> str:
    return ", ".join(fetches[:3]) + (", …" if len(fetches) > 3 else "")


def _restates(part: str, soc: str, mode: str) -> bool:
    """A planner title segment that only repeats the SoC or the mode ("allow_fp32_to_fp16 (precision_mode)")."""
    return part in (soc, mode) or part.startswith(f"{mode} (")


def _jsonable_config(changes: dict[str, Any]) -> dict[str, Any]:
    """Changed options, sorted by key, with anything non-JSON shown as its string form."""
    out: dict[str, Any] = {}
    for key in sorted(changes):
        value = changes[key]
        out[key] = value if isinstance(value, (bool, int, float, str)) or value is None else str(value)
    return out


def _messages(items: list[str]) -> list[str]:
    """Warnings/errors, each capped so one message listing thousands of ops stays readable and small."""
    out = [m if len(m) <= _MAX_MESSAGE_CHARS else m[: _MAX_MESSAGE_CHARS - 1] + "…" for m in items]
    if len(out) > _MAX_MESSAGES:
        out = [*out[:_MAX_MESSAGES], f"… and {len(items) - _MAX_MESSAGES} more"]
    return out


def _round(value: float, digits: int) -> float | None:
    """Round for stable, short output; NaN/inf are not JSON, so they become null."""
    value = float(value)
    if math.isnan(value) or math.isinf(value):
        return None
    return round(value, digits)
