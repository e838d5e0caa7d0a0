"""The report's facts as labelled lines, computed once and shipped in the payload for every view.

Everything a report says besides its op table — what a run measured and where it wrote files, notes,
what rests on approximate data, the cost model's estimate — is listed here once, with the label that
says what kind of number it is ("wall-clock time of the emulation on this CPU", "estimated by the cost model").
:func:`report_facts` computes the list from a payload's other fields; ``report_payload`` ships it as
the payload's ``facts``, and the HTML, text and JupyterLab (``labextension/src/facts.ts``) views draw
those lines as they are, so they cannot drift apart (``tests/display/test_view_parity.py``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from npu_jupyter._display.chart import costliest
from npu_jupyter._display.drift import DRIFT_UNITS, drift_text, worst_drift
from npu_jupyter._units import format_bytes

if TYPE_CHECKING:  # pragma: no cover - typing only
    from npu_jupyter._display.payload_types import Tone


class Fact(NamedTuple):
    """One line of a report: ``label: text``. ``tone`` is "error", "warn", "path" or "" (plain)."""

    key: str  # the payload field it shows, e.g. "run.dump_dir"
    label: str
    text: str
    tone: Tone = ""


def measured_label(payload: Mapping[str, Any], field: str = "wall_ms") -> str:
    """What a measured number of this report is ("wall-clock time of the emulation on this CPU", …)."""
    labels = payload.get("labels") or {}
    return str(labels.get(field) or labels.get("wall_ms") or "measured")


def time_tag(payload: Mapping[str, Any]) -> str:
    """One word said next to each per-op time where it stands ("31.0 µs CPU"): whose clock it is.

    The emulator times ops on this CPU, never on an NPU; the op list shows the number away from the
    headings that say so, so the number itself carries the word. The ascend backend puts no per-op
    times in its report (the adapter's profiling writes the device's own to its output folder, which
    the report lists): were one there, it would not be called a device time unread.
    """
    backend = (payload.get("run") or {}).get("backend", "emulator")
    return "CPU" if backend == "emulator" else "measured"


def step_word(payload: Mapping[str, Any]) -> str:
    """What a report counts: a traced function's calls, else a run graph's steps.

    ``run.unit`` says it; a payload written before that field falls back to its call tree, which a
    function that calls no other function does not have.
    """
    unit = (payload.get("run") or {}).get("unit")
    if unit is not None:
        return str(unit)
    return "call" if payload.get("functions") else "step"


def reference_label(payload: Mapping[str, Any]) -> str:
    """What ``run.reference_wall_ms`` is: its own label, else (payloads written before it) the old words."""
    labels = payload.get("labels") or {}
    return str(labels.get("reference_wall_ms") or "wall-clock time of the float32 reference run on this CPU")


def estimate_label(payload: Mapping[str, Any]) -> str:
    """What an estimated number is; always says "estimate"."""
    return str((payload.get("labels") or {}).get("est_us") or "estimated by the cost model")


def shipped_facts(payload: Mapping[str, Any]) -> list[Fact]:
    """The fact lines a payload ships; computed here for a payload written without them (older ones)."""
    shipped = payload.get("facts")
    if shipped is None:
        return report_facts(payload)
    return [Fact(str(f["key"]), str(f["label"]), str(f["text"]), cast("Tone", f.get("tone", ""))) for f in shipped]


def report_facts(payload: Mapping[str, Any]) -> list[Fact]:
    """Every labelled line of the report, in reading order: problems, run, files, estimates, notes."""
    facts = _run_facts(payload)
    facts += _plan_facts(payload)
    return facts


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _dump_left_empty(payload: Mapping[str, Any], run: Mapping[str, Any]) -> bool:
    """Whether the emulator was asked to dump yet wrote none of this report's steps, and nothing says why.

    A ``dump_step`` past the steps a cell runs (the ModelZoo scripts' default ``"10"`` under a short
    run) dumps nothing; without this line the report shows ``enable_dump=True`` and no dump at all.
    Skipped steps already have their own line; a real device's dumps are the adapter's to list.
    """
    config = payload.get("config") or {}
    return bool(
        config.get("enable_dump") is True
        and run.get("backend") == "emulator"
        and run.get("steps")
        and not run.get("dump_skipped")
    )


def _counted(run: Mapping[str, Any], step: str) -> str:
    """``"9 calls: 6 during Keras fit (validation), 3 in Keras evaluate"``, or ``"6 calls"``.

    A function's report says where its calls came from when its title does not (``run.calls_from``):
    the test function a report titles "Keras evaluate" also runs fit's validation.
    """
    total = _plural(run["steps"], step)
    split = run.get("calls_from") or []
    if not split:
        return total
    if len(split) == 1:
        return f"{total}, {'all ' if run['steps'] > 1 else ''}{split[0]['where']}"
    return f"{total}: " + ", ".join(f"{part['calls']} {part['where']}" for part in split)


def _run_facts(payload: Mapping[str, Any]) -> list[Fact]:
    run = payload.get("run")
    if not run:
        return []
    step = step_word(payload)
    per = f" per {step}" if run["steps"] != 1 else ""
    label = measured_label(payload)
    # A label that says its aggregate ("mean per step over 4 steps: …") is not preceded by "per step".
    wall = f"{run['wall_ms']:.2f} ms{'' if label.startswith('mean per ') else per} ({label})"
    facts = [Fact("run", "Run", f"backend {run['backend']} · {_counted(run, step)} · {wall}")]
    if run.get("rounded_tensors") is not None:
        scope = " (in every function it calls too)" if len(payload.get("functions") or []) > 1 else ""
        text = (
            f"{_plural(run['rounded_tensors'], 'half-precision rounding')} (one per op input or output the "
            f"plan stores in half precision; not a count of ops or of Cast nodes){scope}"
        )
        facts.append(Fact("run.rounded_tensors", "Emulated", text))
    facts += adapter_facts(run)
    if run.get("reference_wall_ms") is not None:
        facts.append(
            Fact(
                "run.reference_wall_ms",
                "float32 reference",
                f"{run['reference_wall_ms']:.2f} ms ({reference_label(payload)})",
            )
        )
    if run.get("first_overflow"):
        facts.append(Fact("run.first_overflow", "First overflow (inf/NaN)", run["first_overflow"], "error"))
    if run.get("overflow_check"):
        text = overflow_check_text(run["overflow_check"], step, bool(run.get("first_overflow")))
        facts.append(Fact("run.overflow_check", "Overflow check", text))
    nonfinite = run.get("nonfinite")
    if nonfinite:
        where = nonfinite["first_op"] + ("" if nonfinite.get("step") is None else f" at step {nonfinite['step']}")
        reason = f": {nonfinite['reason']}" if nonfinite.get("reason") else ""
        facts.append(Fact("run.nonfinite", "First non-finite value", where + reason, "error"))
    if run.get("dump_dir"):
        facts.append(Fact("run.dump_dir", "Dump folder", run["dump_dir"], "path"))
    if run.get("dump_steps"):
        facts.append(Fact("run.dump_steps", "Dumped steps", ", ".join(str(k) for k in run["dump_steps"])))
    elif _dump_left_empty(payload, run):
        spec = (payload.get("config") or {}).get("dump_step")
        which = "" if spec is None else f" (dump_step {spec!r})"
        facts.append(
            Fact("run.dump_steps", "Dumped steps", f"none of this report's {_plural(run['steps'], step)}{which}")
        )
    for item in run.get("dump_skipped") or []:
        facts.append(Fact("run.dump_skipped", f"Dump skipped step {item['step']}", item["reason"], "warn"))
    if run.get("trace_file"):
        facts.append(Fact("run.trace_file", "Trace (open in Perfetto)", run["trace_file"], "path"))
    if run.get("op_summary_csv"):
        facts.append(Fact("run.op_summary_csv", "Op summary CSV", run["op_summary_csv"], "path"))
    top = costliest(payload["ops"], 5)
    if top:
        listed = ", ".join(f"{op_label(payload, op)} {op['us']:.1f} µs" for op in top)
        head = f"Costliest ops (mean per {step_word(payload)}, {measured_label(payload, 'us')})"
        facts.append(Fact("ops.us", head, listed))
    facts += _drift_facts(payload)
    return facts


#: The ops each ``dump_debug_mode`` checks (:func:`~npu_jupyter._runtime.observe.observers.debug_covers`).
_CHECKED_OPS = {
    "aicore_overflow": "AI Core kernels",
    "atomic_overflow": "AI Core kernels",
    "all": "device kernels (not the ops GE executes itself)",
}


def overflow_check_text(check: Mapping[str, Any], step: str, found: bool) -> str:
    """What the overflow check looked at, labelled for what it is: an emulation on this CPU.

    A check that found nothing says so, or the user cannot tell it from no check: "no inf/NaN in 3 calls
    (emulated float16/float32 storage on this CPU; dump_debug_mode all: the float outputs of the device
    kernels (not the ops GE executes itself))". One that found an overflow (``found``: the first-overflow
    line names it) says how much it checked.
    """
    storage = "/".join(check.get("storage") or []) or "float"
    mode = str(check.get("mode") or "")
    steps = _plural(int(check["checked"]), step)
    said = (
        f"{steps} checked, inf/NaN found (the first overflow names the first op)" if found else f"no inf/NaN in {steps}"
    )
    ops = _CHECKED_OPS.get(mode, _CHECKED_OPS["all"])
    return f"{said} (emulated {storage} storage on this CPU; dump_debug_mode {mode}: the float outputs of the {ops})"


def _drift_facts(payload: Mapping[str, Any]) -> list[Fact]:
    """The ops that drifted most from float32 (:mod:`.drift`), or that none did, when a reference ran."""
    ops = payload["ops"]
    if not any(op.get("dr") for op in ops):
        return []  # no reference ran
    run = payload.get("run") or {}
    shown = run["drift_worst"] if "drift_worst" in run else worst_drift(ops)
    if not shown:
        return [Fact("ops.dr", "Largest drift vs float32", "none: every compared output equals its float32 reference")]
    listed = "; ".join(f"{op_label(payload, ops[k])} {drift_text(ops[k]['dr'])}" for k in shown)
    return [Fact("ops.dr", f"Largest drift vs float32, each op's worst step ({DRIFT_UNITS})", listed)]


def adapter_facts(run: dict[str, Any], rows: int = 50) -> list[Fact]:
    """Ascend runs: the prediction label, the adapter's own output folders, GE's actual decisions."""
    facts = []
    if run.get("prediction"):
        facts.append(Fact("run.prediction", "Predicted, not measured", run["prediction"], "warn"))
    for place in run.get("adapter_outputs") or []:
        state = "" if place.get("exists") else " (not written yet)"
        facts.append(Fact("run.adapter_outputs", place["label"], place["path"] + state, "path"))
    actual = run.get("actual")
    if actual is None:
        return facts
    if actual.get("error"):
        facts.append(Fact("run.actual.error", "GE graph dump not read", actual["error"], "error"))
    if not actual.get("files"):
        return [*facts, Fact("run.actual", "GE graph dump", "on, but none from this session was found yet")]
    facts.append(
        Fact(
            "run.actual",
            "Actual (read from the GE compiled-graph dump)",
            f"{actual['compared']} ops compared, {actual['differ']} differ from the prediction, "
            f"{actual['missing']} predicted device ops not in the dump",
        )
    )
    facts.append(Fact("run.actual.files", "GE dump files", ", ".join(actual["files"]), "path"))
    for row in sorted(actual["rows"], key=lambda r: bool(r.get("same")))[:rows]:
        mark = "same" if row.get("same") else "DIFFERS"
        facts.append(
            Fact(
                "run.actual.rows",
                row["n"],
                f"predicted {row['pe']} {'/'.join(row['pd'])}, actual {row['ae']} {'/'.join(row['ad'])} "
                f"(GE op {row['ge']}) [{mark}]",
                "" if row.get("same") else "warn",
            )
        )
    return facts


def transfers_text(payload: Mapping[str, Any], limit: int = 8) -> str:
    """``"a → b (host → device, float32, 4.0 KiB); …"``: each host<->device edge, the first ``limit``.

    A producer that sends more than one tensor across is named with each tensor's output slot
    (``call:0 → x``, ``call:1 → x``), so that two edges never read as one line repeated.
    """
    ops = payload["ops"]
    transfers = payload["transfers"]
    senders = Counter(t["s"] for t in transfers)
    items = []
    for t in transfers[:limit]:
        arrow = "host → device" if t["dir"] == "h2d" else "device → host"
        size = "size unknown" if t.get("b") is None else format_bytes(t["b"])
        source = op_label(payload, ops[t["s"]])
        if senders[t["s"]] > 1 and t.get("o") is not None:
            source = f"{source}:{t['o']}"
        items.append(f"{source} → {op_label(payload, ops[t['d']])} ({arrow}, {t['dt']}, {size})")
    more = len(payload["transfers"]) - limit
    return "; ".join(items) + (f" +{more} more" if more > 0 else "")


def functions_text(payload: Mapping[str, Any]) -> str:
    """``"train_step (40 ops) calls gen_loss (12 ops), disc_loss (20 ops); the counts cover all"``."""
    functions = payload.get("functions") or []
    head, called = functions[0], functions[1:]
    listed = ", ".join(f"{f['label']} ({_plural(f['ops'], 'op')})" for f in called)
    return f"{head['label']} ({_plural(head['ops'], 'op')}) calls {listed}; the counts above cover all of them"


def _plan_facts(payload: Mapping[str, Any]) -> list[Fact]:
    facts = []
    estimated = [(k, op) for k, op in enumerate(payload["ops"]) if op.get("est_us") is not None]
    if estimated:
        top = sorted(estimated, key=lambda item: (-item[1]["est_us"], item[0]))[:5]
        listed = ", ".join(f"{op_label(payload, op)} {op['est_us']:.1f} µs" for _, op in top)
        head = f"Estimated costliest ops (NPU time per {step_word(payload)}, {estimate_label(payload)}, not measured)"
        facts.append(Fact("ops.est_us", head, listed))
    if len(payload.get("functions") or []) > 1:
        facts.append(Fact("functions", "Functions", functions_text(payload)))
    if payload["transfers"]:
        count = len(payload["transfers"])
        facts.append(Fact("transfers", _plural(count, "transfer"), transfers_text(payload)))
    cost = payload.get("cost_model")
    if cost:
        facts.append(Fact("cost_model", f"NPU step ({estimate_label(payload)}, not measured)", _cost_text(cost)))
    approximate = payload["summary"].get("approximate")
    if approximate:
        facts.append(
            Fact(
                "summary.approximate",
                "Approximate",
                f"{_plural(approximate, 'decision')} {'rests' if approximate == 1 else 'rest'} on approximate op tables or the host-kept "
                "list, not on the published CANN tables (marked ≈ per op)",
                "warn",
            )
        )
    predicted = payload.get("predicted")
    if predicted is not None:
        text = (
            "predicted by the planner, not read from the device" if predicted else "read from the device's graph dump"
        )
        facts.append(Fact("predicted", "Placement and precision", text))
    facts += [Fact("notes", "Note", note) for note in payload.get("notes") or []]
    return facts


LAUNCH_BOUND = 0.5  # a step at least this much fixed launch cost is said to be launch-bound


def _cost_text(cost: dict[str, Any]) -> str:
    """``"time 1.25 ms (0.48× float32) · activation + weight memory 12.0 MiB (0.55× float32) · basis: ..."``.

    The label already says "estimated by the cost model, not measured"; the basis says what the model
    assumes. A step that is mostly fixed launch cost says so next to its ratio (a small model shows
    ~1.00× float32 under every precision mode for that reason, not because float16 gains nothing).
    """

    def ratio(value: float | None, why: str = "") -> str:
        return "" if value is None else f" ({value:.2f}× float32{why})"

    parts = []
    if cost.get("step_ms") is not None:
        parts.append(f"time {cost['step_ms']:.3f} ms{ratio(cost.get('step_ratio_fp32'), _launch_note(cost))}")
    if cost.get("memory_bytes") is not None:
        parts.append(
            f"activation + weight memory {format_bytes(cost['memory_bytes'])}{ratio(cost.get('memory_ratio_fp32'))}"
        )
    if not parts:  # nothing estimated (a refused plan): the basis says why
        return str(cost.get("basis") or "no estimate")
    return " · ".join(parts) + (f" · basis: {cost['basis']}" if cost.get("basis") else "")


def _launch_note(cost: dict[str, Any]) -> str:
    """``": 92% of it is fixed launch and copy latency, which precision does not change"`` or ``""``.

    ``launch_share`` counts each op's launch and each host<->device copy's latency (the plan's transfers
    and a run's feeds and fetches): the note names both, as the step they are part of does.
    """
    share = cost.get("launch_share")
    if share is None or share < LAUNCH_BOUND:
        return ""
    part = "over 99%" if share >= 0.995 else f"{share:.0%}"  # not "100%": the kernels take some time
    return f": {part} of it is fixed launch and copy latency, which precision does not change"


def op_function(payload: Mapping[str, Any], op: dict[str, Any]) -> str:
    """The Python name of the function an op belongs to ("" in a report on one function)."""
    functions = payload.get("functions") or []
    return str(functions[op.get("f", 0)]["label"]) if len(functions) > 1 else ""


def op_short_name(payload: Mapping[str, Any], op: dict[str, Any]) -> str:
    """An op's name inside its own function (a called function's ops are named ``<function>/<op>``)."""
    where = op.get("f", 0)
    if not where:
        return str(op["n"])
    prefix = payload["functions"][where]["name"] + "/"
    return str(op["n"])[len(prefix) :] if str(op["n"]).startswith(prefix) else str(op["n"])


def op_label(payload: Mapping[str, Any], op: dict[str, Any]) -> str:
    """An op as a line of text names it: ``MatMul (in inner)`` for an op of a called function."""
    return f"{op_short_name(payload, op)} (in {op_function(payload, op)})" if op.get("f") else str(op["n"])


def op_marks(op: dict[str, Any]) -> list[str]:
    """Short per-op labels shown next to its name: overflow, approximate decision.

    The cost model's per-op estimate is not one: every op has it, so on every name it buried the
    name; it is listed once (``ops.est_us``) and per op in the Lab view's details.
    """
    marks = []
    if op.get("ov"):
        marks.append("⚠ overflow")
    if op.get("approximate"):
        marks.append("≈ approximate")
    return marks
