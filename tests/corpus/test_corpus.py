"""The real-model corpus, end to end: every ``zoo_*.py`` model planned and trained under its script's config.

Per model (slow), built once: three plain float32 steps; one ``plan()`` on the script's own fetches with
no plan errors; three emulated steps under the script's config (nothing switched on), with precision
applied wherever the plan lowers it and a finite loss, or the report naming the first non-finite op; then
a separate one-step debug run (dump, overflow detection, profiling) read back with ``load_dump``: the
graph it opens is the training step's (it fetches the loss) and holds the loss op's tensors.
The emulator/plain ratio is taken from the plain emulated run, the debug run's ratio is its own column.
Figures go to ``test-artifacts/corpus.md`` (times measured on this CPU, placements and precision
predicted by the planner). Fast: the corpus covers every idiom/architecture.
"""

from __future__ import annotations

import ast
import json
import os
from pathlib import Path
from typing import Any

import pytest

from corpus import runner
from corpus.corpus import ARCHITECTURES, IDIOMS

ARTIFACT = Path(__file__).resolve().parents[2] / "test-artifacts" / "corpus.md"
ROWS: dict[str, dict[str, Any]] = {}
# Under pytest-xdist the models run in several workers: each writes its rows here, tagged with the run's
# id (the same in every worker of one run), and the table is made from every row of this run.
ROWS_DIR = ARTIFACT.parent / "corpus-rows"
RUN_ID = os.environ.get("PYTEST_XDIST_TESTRUNUID")
EMU_RATIO = "emulator/plain step (CPU)"
DEBUG_RATIO = "debug emulator/plain step (CPU)"
COLUMNS = (
    "model",
    "ops",
    "plan ms",
    "host / AI Core / AI CPU",
    "ops lowered",
    "ops rounded",
    EMU_RATIO,
    DEBUG_RATIO,
    "loss plain vs emulated",
    "dump / profile files",
    "problem",
)


def _module_literals(tree: ast.Module) -> dict[str, Any]:
    """Module-level ``NAME = <literal>`` assignments."""
    found: dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                found[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                continue
    return found


def declaration(module_name: str) -> tuple[str, tuple[str, ...]]:
    """(architecture, idioms) a module declares, read from its source (no TensorFlow, no build).

    Accepts ``ARCHITECTURE``/``IDIOMS`` constants or literal ``architecture=``/``idioms=`` keywords of its
    ``CorpusModel(...)`` call (a keyword may name a module constant).
    """
    tree = ast.parse((runner.CORPUS_DIR / f"{module_name}.py").read_text(encoding="utf-8"))
    literals = _module_literals(tree)
    arch, idioms = literals.get("ARCHITECTURE"), literals.get("IDIOMS")
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "CorpusModel":
            for kw in node.keywords:
                value = literals.get(kw.value.id) if isinstance(kw.value, ast.Name) else None
                if value is None:
                    try:
                        value = ast.literal_eval(kw.value)
                    except ValueError:
                        continue
                if kw.arg == "architecture" and arch is None:
                    arch = value
                elif kw.arg == "idioms" and idioms is None:
                    idioms = value
    assert isinstance(arch, str), f"{module_name}: no literal architecture declared"
    assert idioms is not None, f"{module_name}: no literal idioms declared"
    return arch, tuple(idioms)


def test_every_module_declares_known_idioms_and_architecture():
    names = runner.module_names()
    assert names, "no zoo_*.py corpus modules found"
    for name in names:
        arch, idioms = declaration(name)
        assert arch in ARCHITECTURES, f"{name}: {arch!r} is not one of {sorted(ARCHITECTURES)}"
        unknown = set(idioms) - IDIOMS
        assert not unknown, f"{name}: unknown idioms {sorted(unknown)}"


def test_corpus_covers_every_idiom_and_architecture():
    declared = [declaration(name) for name in runner.module_names()]
    missing_arch = ARCHITECTURES - {arch for arch, _ in declared}
    missing_idioms = IDIOMS - {idiom for _, idioms in declared for idiom in idioms}
    assert not missing_arch and not missing_idioms, (
        f"corpus misses architectures {sorted(missing_arch)} and idioms {sorted(missing_idioms)}"
    )


@pytest.fixture(scope="module", autouse=True)
def figures_table():
    """Write the per-model figures collected by the slow tests, whatever their outcome."""
    yield
    if not ROWS:
        return
    ARTIFACT.parent.mkdir(parents=True, exist_ok=True)
    rows = _rows_of_this_run() if RUN_ID else ROWS
    lines = [
        "# Real-model corpus figures",
        "",
        (
            "Times are CPU times of the emulation on this machine (wall clock, median of the steps), as "
            f"ratios to the plain float32 step of the same run: `{EMU_RATIO}` with nothing switched on, "
            f"`{DEBUG_RATIO}` with dump, overflow detection and profiling on ({runner.DEBUG_STEPS} step(s)). "
            "Placements and ops lowered (a float32 tensor of the op decided narrower) are predicted by the "
            "planner; ops rounded are what the emulator actually rounded (RunReport.emulation). "
            "None of these is an NPU measurement."
        ),
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "|" + "---|" * len(COLUMNS),
    ]
    for name in sorted(rows):
        row = rows[name]
        lines.append(
            "| " + " | ".join(str(row.get(c, "")).replace("|", "\\|").replace("\n", " ") for c in COLUMNS) + " |"
        )
    partial = ARTIFACT.with_name(f"{ARTIFACT.name}.{os.getpid()}")
    partial.write_text("\n".join(lines) + "\n", encoding="utf-8")
    partial.replace(ARTIFACT)  # atomic: another worker may write the table at the same time


def _rows_of_this_run() -> dict[str, dict[str, Any]]:
    """This worker's rows saved, then every worker's rows of this run (models of other runs left out)."""
    ROWS_DIR.mkdir(parents=True, exist_ok=True)
    for name, row in ROWS.items():
        (ROWS_DIR / f"{name}.json").write_text(json.dumps({"run": RUN_ID, "row": row}), encoding="utf-8")
    rows: dict[str, dict[str, Any]] = {}
    for path in ROWS_DIR.glob("*.json"):
        try:
            saved = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:  # being written by another worker: its own teardown writes the table again
            continue
        if saved.get("run") == RUN_ID:
            rows[path.stem] = saved["row"]
    return rows


def _fmt_losses(plain: list[float], emulated: list[float]) -> str:
    last = lambda values: f"{values[-1]:.6g}" if values else "-"  # noqa: E731
    return f"{last(plain)} vs {last(emulated)}"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    lines = [line for line in text.splitlines() if line.strip() and "Graph execution error" not in line]
    return f"{type(exc).__name__}: {(lines[0] if lines else text)[:200]}"


@pytest.mark.slow
@pytest.mark.parametrize("module_name", runner.module_names())
def test_model_plans_and_trains_emulated_with_dump_overflow_and_profiling(module_name, tmp_path):
    """Every phase runs even when an earlier one failed, so the table shows all of a model's problems."""
    row: dict[str, Any] = {"model": module_name[4:]}
    ROWS[module_name] = row
    problems: list[str] = []
    model = runner.build(module_name, tmp_path / "files")
    arch, idioms = declaration(module_name)
    assert (model.architecture, tuple(model.idioms)) == (arch, idioms), "built model differs from its declaration"
    row["ops"] = len(model.graph.get_operations())
    config = runner.npu_config(model)

    plain = runner.plain_run(model)
    row["loss plain vs emulated"] = _fmt_losses(plain.losses, [])
    assert runner.finite(plain.losses), f"plain float32 loss not finite: {plain.losses}"

    try:
        plan, plan_ms = runner.timed_plan(model, config)
        summary = plan.summary()
        row.update(
            {
                "plan ms": f"{plan_ms:.0f}",
                "ops lowered": len(runner.lowered_ops(plan, model.graph)),
                "host / AI Core / AI CPU": f"{summary['host']} / {summary['ai_core']} / {summary['ai_cpu']}",
            }
        )
        if plan.errors:
            problems.append(f"plan errors a real run would not have: {plan.errors}")
    except Exception as exc:
        problems.append("plan(): " + _first_line(exc))

    try:
        emulated = runner.emulated_run(model, config)
    except Exception as exc:
        problems.append("emulated run: " + _first_line(exc))
    else:
        problems += _check_emulated(row, model, plain, emulated)

    out = tmp_path / "out"
    try:
        debug = runner.emulated_run(model, runner.debug_config(config, out, model), runner.DEBUG_STEPS)
    except Exception as exc:
        problems.append("debug run (dump, overflow, profiling): " + _first_line(exc))
    else:
        row[DEBUG_RATIO] = f"{debug.median_s / plain.median_s:.1f}x"
        problems += _check_debug(row, out, model.loss)
    row["problem"] = "; ".join(problems) or row.get("problem", "")  # keep an explained non-finite loss
    assert not problems, "\n".join(problems)


def _check_emulated(row: dict[str, Any], model: Any, plain: runner.Training, emulated: runner.Training) -> list[str]:
    """Precision applied where the plan lowers it, and a finite loss or the first non-finite op named."""
    problems = []
    report = emulated.reports[-1]
    row["ops rounded"] = len(report.emulation)
    row[EMU_RATIO] = f"{emulated.median_s / plain.median_s:.1f}x"
    row["loss plain vs emulated"] = _fmt_losses(plain.losses, emulated.losses)
    lowered = runner.lowered_ops(report.plan, model.graph)
    if lowered and not report.emulation:
        problems.append(
            f"the plan lowers {len(lowered)} ops but the emulator rounded none (report warnings: {report.warnings})"
        )
    if not runner.finite(emulated.losses):
        finding = report.non_finite
        named = report.first_overflow or (finding.where if finding is not None else None)
        if not named:
            problems.append(
                f"emulated loss {emulated.losses} is not finite and the report names no first non-finite op"
            )
        else:
            step = finding.step if finding is not None else None
            row["problem"] = f"non-finite emulated loss; first non-finite op: {named} (step {step})"
            if finding is not None and finding.variable:  # a read of a variable an earlier update filled with inf/NaN
                writers = ", ".join(finding.variable_writers) or "no writer in the plan"
                row["problem"] += f", a read of {finding.variable}, written non-finite by an earlier update ({writers})"
    return problems


def _check_debug(row: dict[str, Any], out: Path, loss: str) -> list[str]:
    """The debug run's dump reads back with ``load_dump`` and its profiling wrote files.

    The dump holds step 0 of every run graph (the initialiser's too), so the graph ``load_dump`` opens
    must be the training step's: the one whose fetches hold the loss, with the loss op dumped.
    """
    from npu_jupyter import load_dump

    problems = []
    row["dump / profile files"] = f"{runner.files_under(out / 'dump')} / {runner.files_under(out / 'profiling')}"
    try:
        dump = load_dump(out / "dump")
        fetches = dump.graph_info(dump.graph_id).get("fetches", []) if dump.graphs else []
        if loss not in fetches:
            problems.append(f"load_dump opened graph {dump.graph_id} (fetches {fetches[:5]}), not the training step's")
        elif not dump.steps or not dump[dump.steps[-1]].tensors:
            problems.append("load_dump found no dumped training step with tensors")
        elif loss.rpartition(":")[0] not in dump[dump.steps[-1]]:
            problems.append(f"the dumped training step has no tensor of the loss op {loss}")
    except Exception as exc:
        problems.append("load_dump: " + _first_line(exc))
    if runner.files_under(out / "profiling") == 0:
        problems.append("profiling wrote nothing")
    return problems
