"""The fields of a report payload, from a plan and (for a run report) its run.

:mod:`npu_jupyter._display.mime` decides which ops fit the payload's budget; this module writes the
payload for the ops it chose, in the shape ``report_schema.json`` gives (docs/report-schema.md), and
ships the report's labelled fact lines (:mod:`npu_jupyter._display.facts`) computed once from it, so
the HTML, text and JupyterLab views only draw them. Keys are short, reason texts are stored once and
referenced by index, numbers are rounded and nothing depends on time or set order: the same plan
gives byte-identical output.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from npu_jupyter._display.drift import SHOWN
from npu_jupyter._display.facts import report_facts
from npu_jupyter._display.run_payload import MAX_ITEMS, round_number, run_block
from npu_jupyter._runtime.observe.drift_ranking import Ranking, discarded_overflow_note, rank_plan

if TYPE_CHECKING:  # pragma: no cover - typing only; keeps this module import-light
    from typing import Final  # novermin (never imported at run time)

    from npu_jupyter._display.payload_types import (
        Cluster,
        CostModel,
        Drift,
        FunctionInfo,
        Op,
        Report,
        Summary,
        Transfer,
    )
    from npu_jupyter._plan.model import OpDecision, Plan
    from npu_jupyter._runtime.report import RunReport
    from npu_jupyter.cost.attach import CostBlock

# report_schema.json's constants (tests/display/test_report_schema.py); Final: literal types for mypy
SCHEMA: Final = "npu-jupyter.report"  # novermin (a string annotation)
VERSION: Final = 1  # novermin (a string annotation)
# A warning that names thousands of ops must not eat the whole budget on its own.
_MAX_MESSAGE_CHARS = 2_000


def build_payload(plan: Plan, run: RunReport | None, keep: list[str], *, truncated: bool = False) -> Report:
    """The payload for the ops in ``keep`` (topological order), its fact lines computed from it last."""
    reasons = _Interner()
    index = {name: i for i, name in enumerate(keep)}
    cluster_names = [sub.name for sub in plan.subgraphs]
    cluster_index = {name: i for i, name in enumerate(cluster_names)}
    clusters: list[Cluster] = [{"name": sub.name, "size": len(sub.ops)} for sub in plan.subgraphs]
    for name in keep:  # a decision naming a cluster the plan did not list still gets an entry
        cluster = plan.ops[name].cluster
        if cluster and cluster not in cluster_index:
            cluster_index[cluster] = len(clusters)
            clusters.append({"name": cluster, "size": sum(d.cluster == cluster for d in plan.ops.values())})
    ops = [_op_entry(plan.ops[name], index, cluster_index, reasons, run) for name in keep]
    # the ops the "Largest drift" line lists and the cancellation marks: one assessment of the whole plan
    ranking = rank_plan(plan, run.drift, SHOWN) if run is not None and run.drift else None
    if ranking is not None:
        _mark_cancellations(ops, keep, ranking)
    functions = list(getattr(plan, "functions", None) or [])  # plans cached before the field existed
    if len(functions) > 1:
        _mark_functions(ops, keep, functions)
    payload: Report = {
        "schema": SCHEMA,
        "version": VERSION,
        "kind": "run" if run is not None else "plan",
        "title": _title(plan, run),
        "soc": plan.soc,
        "config": _jsonable_config(plan.config_changes),
        "effective_precision_mode": plan.precision_mode,
        "summary": cast("Summary", plan.summary()),
        "reasons": reasons.items,
        "clusters": clusters,
        "ops": ops,
        "transfers": _transfers(plan, index),
        "warnings": _messages(_grouped(plan, _warnings(plan, run))),
        "errors": _messages(_grouped(plan, plan.errors)),
        "truncated": truncated,
        "facts": [],  # computed last, from the rest
    }
    _add_plan_extras(payload, plan, run)
    if len(functions) > 1:
        payload["functions"] = _functions_block(plan, functions)
    if run is not None:
        payload["run"] = run_block(run)
        if ranking is not None:  # the ops the "Largest drift" line lists (mime keeps them in the payload)
            payload["run"]["drift_worst"] = [index[name] for name in ranking.worst if name in index]
    payload["facts"] = [
        {"key": fact.key, "label": fact.label, "text": fact.text, "tone": fact.tone} for fact in report_facts(payload)
    ]
    return payload


def _warnings(plan: Plan, run: RunReport | None) -> list[str]:
    """The plan's and the run's warnings, less the non-finite finding the ``run.nonfinite`` fact already says.

    The run notes the first non-finite value both as a warning and in ``extra["nonfinite"]``; every
    view shows the latter as its labelled "First non-finite value" line, so the sentence would appear twice.
    A traced function's warning names the call ("In call 3 of f, …", kept as ``non_finite["message"]``)
    where the fact's reason says "In this call, …": both spellings are the same finding.
    """
    warnings = list(plan.warnings) + (list(run.warnings) if run is not None else [])
    finding = run.non_finite if run is not None else None
    said = {finding.reason, finding.message} - {""} if finding is not None else set()
    return [w for w in warnings if w not in said]


def _mark_functions(ops: list[Op], keep: list[str], functions: list[str]) -> None:
    """``f``: the index of the called function an op belongs to (absent for the function reported on)."""
    from npu_jupyter._runtime.functions.tree import function_of

    for entry, name in zip(ops, keep):
        where = function_of(name, functions)
        if where:
            entry["f"] = where


def _functions_block(plan: Plan, functions: list[str]) -> list[FunctionInfo]:
    """The traced functions a tree plan covers, the called one first: name, Python name, op count."""
    from npu_jupyter._runtime.functions.labels import python_name
    from npu_jupyter._runtime.functions.tree import function_of

    counts = [0] * len(functions)
    for name in plan.ops:
        counts[function_of(name, functions)] += 1
    return [{"name": name, "label": python_name(name), "ops": counts[k]} for k, name in enumerate(functions)]


def _grouped(plan: Plan, messages: list[str]) -> list[str]:
    """Messages differing only in the op they name, folded into one (:mod:`.grouping`)."""
    from npu_jupyter._display.grouping import group_messages

    if len(messages) < 2:
        return messages
    names = set(plan.ops)
    if len(getattr(plan, "functions", None) or []) > 1:  # a called function's findings name its own ops
        names |= {name.split("/", 1)[1] for name in plan.ops if "/" in name}
    return group_messages(messages, names)


def _add_plan_extras(out: Report, plan: Plan, run: RunReport | None) -> None:
    """The optional top-level slots: ``notes``, ``cost_model`` and ``labels`` when known, and ``predicted``.

    ``predicted`` is always set: it says where the placements and precisions come from.
    """
    approximate = sum(bool(getattr(d, "approximate", False)) for d in plan.ops.values())
    if approximate:
        out["summary"]["approximate"] = approximate
    notes = list(dict.fromkeys(list(plan.notes or []) + (list(run.notes) if run is not None else [])))
    discarded = (
        discarded_overflow_note(
            run.drift,
            run.non_finite is not None,
            run.overflow_steps,
            run.reference_steps,
            {name: d.op_type for name, d in plan.ops.items() if name in run.drift},
        )
        if run is not None
        else ""
    )
    if discarded:
        notes.append(discarded)
    if notes:
        out["notes"] = _messages(notes)
    # Every decision is the planner's prediction unless a backend read it from the device
    # (docs/report-schema.md, "Every number says what it is").
    out["predicted"] = True if run is None else bool(run.predicted)
    estimate = run.estimate if run is not None else None
    cost = estimate.block if estimate is not None else None
    if cost is not None:
        out["cost_model"] = _cost_block(cost)
        if run is not None and run.fed_shapes_varied and run.fed_shapes:
            out["cost_model"]["basis"] += _one_batch(run.fed_shapes)
    labels = _labels(run, cost is not None or bool(estimate is not None and estimate.est_us))
    if labels:
        out["labels"] = labels


def _cost_block(cost: CostBlock) -> CostModel:
    """The cost model's per-step estimate, rounded (None: not estimated, a refused plan)."""

    def ratio(value: float | None) -> float | None:
        return None if value is None else round_number(value, 4)

    return {
        "step_ms": ratio(cost.step_ms),
        "memory_bytes": None if cost.memory_bytes is None else int(cost.memory_bytes),
        "step_ratio_fp32": ratio(cost.step_ratio_fp32),
        "memory_ratio_fp32": ratio(cost.memory_ratio_fp32),
        "launch_share": ratio(cost.launch_share),
        "basis": str(cost.basis),
    }


def _one_batch(fed: dict[str, list[int]]) -> str:
    """Which feed the estimate is at, when the report's steps fed different shapes (its mean time mixes them)."""
    shown = ", ".join(f"{name} {shape}" for name, shape in list(fed.items())[:3]) + (" …" if len(fed) > 3 else "")
    return f"; at the shapes one step fed ({shown}): its steps fed other shapes too, which the estimate leaves out"


def _labels(run: RunReport | None, estimated: bool) -> dict[str, str]:
    """What each number of a run is: defaults from the backend, overridden by the run's own ``labels``."""
    if run is None:
        return {}
    from npu_jupyter._runtime.report_records import clock

    measured = clock(run.backend)  # whose clock: this CPU's (emulator), the host's around session.run (ascend)
    labels = {"wall_ms": measured}
    if run.op_times_us:
        labels["us"] = measured
    if run.reference_wall_ms is not None:  # the mean over the steps that ran the reference, not over every step
        n = run.reference_steps
        over = "" if not n else "1 step ran it; " if n == 1 else f"mean per step over the {n} steps that ran it; "
        labels["reference_wall_ms"] = f"{over}wall-clock time of the float32 reference run on this CPU"
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
    d: OpDecision,
    index: dict[str, int],
    cluster_index: dict[str, int],
    reasons: _Interner,
    run: RunReport | None,
) -> Op:
    """One op of ``ops``: its decision, and what the run measured of it (time, drift, overflow, estimate)."""
    entry: Op = {
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
        us = round_number(run.op_times_us[d.name], 3) if d.name in run.op_times_us else None
        if us is not None:  # a time that is not finite is not written (every view shows none)
            entry["us"] = us
        if d.name in run.drift:  # the reference's metrics by name (Drift lists them)
            entry["dr"] = _drift_entry(run.drift[d.name])
        if d.name in run.overflow_ops:
            entry["ov"] = True
        estimate = run.estimate
        estimates = estimate.est_us if estimate is not None else {}
        est = None if estimates.get(d.name) is None else round_number(estimates[d.name], 3)
        if est is not None:
            entry["est_us"] = est
    if getattr(d, "approximate", False):
        entry["approximate"] = True
    reads = list(getattr(d, "lowered_reads", []) or [])
    if reads and entry["d0"] == entry["d1"]:  # reads lowered, writes its declared dtype
        entry["rd"] = "/".join(reads)
    followed = list(getattr(d, "followed_reads", []) or [])
    if followed and not reads and entry["d0"] == entry["d1"]:  # reads what its producers lowered: not a change
        entry["rf"] = "/".join(followed)
    return entry


def _mark_cancellations(ops: list[Op], keep: list[str], ranking: Ranking) -> None:
    """Add to the drift rows what the ranking's cancellation rule found (``in_rel``, ``from_cancelled``,
    ``maybe_cancelled``), judged over the whole plan so a truncated payload says the same.
    """
    marks = ranking.marks
    for name, entry in zip(keep, ops):
        if name in marks and "dr" in entry:
            dr = cast("dict[str, object]", entry["dr"])
            for key, value in marks[name].items():
                dr[key] = float(f"{value:.6g}") if isinstance(value, float) else value


def _drift_entry(row: dict[str, float]) -> Drift:
    """An op's drift row: six significant digits (a 3e-7 difference must not read 0), the step as is."""
    out: dict[str, float | int | None] = {}
    for key, value in sorted(row.items()):
        if key == "step":
            out[key] = int(value)
        else:
            number = round_number(value, 300)  # None when not finite
            out[key] = None if number is None else float(f"{number:.6g}")
    return cast("Drift", out)


def _transfers(plan: Plan, index: dict[str, int]) -> list[Transfer]:
    """Host<->device edges whose two ends are both in the payload."""
    out: list[Transfer] = []
    for t in plan.transfers:
        if t.src in index and t.dst in index:
            item: Transfer = {"s": index[t.src], "d": index[t.dst], "dt": t.dtype, "b": t.bytes, "dir": t.direction}
            _, _, slot = t.tensor.rpartition(":")
            if slot.isdigit():  # which output: an op may send several tensors across
                item["o"] = int(slot)
            out.append(item)
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
            from npu_jupyter._runtime.functions.labels import python_name

            names = [python_name(f) for f in run.fetches]
            # "train_step" is its own label; "train_function" is what "Keras fit (train function)" says
            restated = all(name == label or label.endswith(f"({name.replace('_', ' ')})") for name in names)
            return f"Calls of {label}{'' if restated else f' ({fetch_names(names)})'}: {base}"
        return f"Run of {fetch_names(run.fetches)}: {base}"
    fetches = getattr(plan, "fetches", None)  # plans pickled by plan_cache before the field existed
    if run is None and fetches:
        head = f"Plan of {fetch_names(fetches)} ({plan.soc}, {mode})"
        rest = [part for part in plan.title.split(" · ") if part and not _restates(part, plan.soc, mode)]
        return " · ".join([head, *rest])
    return base


def fetch_names(fetches: list[str]) -> str:
    """The first three fetches and how many more: two runs of one train op whose fetch lists differ after the
    third (an Estimator's LoggingTensorHook adds its tensors on its logging steps only: ModelZoo VGG19_ID0374's
    steps 1 and 2) are two reports, which ``a, b, c, …`` titled alike.
    """
    more = len(fetches) - 3
    return ", ".join(fetches[:3]) + (f" and {more} more" if more > 0 else "")


def _restates(part: str, soc: str, mode: str) -> bool:
    """A planner title segment that only repeats the SoC or the mode ("allow_fp32_to_fp16 (precision_mode)")."""
    return part in (soc, mode) or part.startswith(f"{mode} (")


def _jsonable_config(changes: dict[str, Any]) -> dict[str, bool | float | str | None]:
    """Changed options, sorted by key, with anything non-JSON shown as its string form."""
    out: dict[str, bool | float | str | None] = {}
    for key in sorted(changes):
        value = changes[key]
        out[key] = value if isinstance(value, (bool, int, float, str)) or value is None else str(value)
    return out


def _messages(items: list[str]) -> list[str]:
    """Warnings/errors, each capped so one message listing thousands of ops stays readable and small."""
    out = [m if len(m) <= _MAX_MESSAGE_CHARS else m[: _MAX_MESSAGE_CHARS - 1] + "…" for m in items]
    if len(out) > MAX_ITEMS:
        out = [*out[:MAX_ITEMS], f"… and {len(items) - MAX_ITEMS} more"]
    return out
