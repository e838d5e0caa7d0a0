"""Imports flow one way through the pipeline (docs/architecture.md): no module imports a layer above it,
and inside the runtime no sub-package imports one above it or a sibling (the TF1 and TF2 stacks)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "npu_jupyter"

#: layer of each top-level part of the package; a module may import its own part and lower layers.
LAYERS = {
    "_renderers": 0,
    "_units": 0,
    "_progress": 0,
    "_tensorflow_import": 0,
    "_package_data": 0,
    "_tf_types": 0,
    "_ops": 0,
    "_options": 1,
    "scope": 1,
    "_plan": 2,
    "cost": 3,
    "_runtime": 4,
    "_sweep": 5,
    "adapter": 6,
    "_display": 7,
    "_zoo_check": 8,
    "_notebook": 9,
    "__init__": 10,
    "__main__": 10,
}

#: layers inside ``_runtime``: a module may import its own sub-part and strictly lower ones, so the
#: shared ``observe`` imports neither stack and the stacks (``session``, ``functions``) and the real
#: backend (``ascend``) do not import each other.
RUNTIME_LAYERS = {
    "__init__": 0,
    "report_records": 0,
    "value_ops": 0,
    "round_kernel": 0,
    "rewrite": 1,
    "report": 1,
    "observe": 2,
    "session": 3,
    "functions": 3,
    "ascend": 3,
    "backends": 4,
}


def _part(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _runtime_part(module: str) -> str:
    """The sub-part of ``npu_jupyter._runtime.<part>...`` (``__init__`` for the package itself)."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 else "__init__"


def _annotation_only(tree: ast.AST) -> set[int]:
    """Ids of the imports under ``if TYPE_CHECKING:`` (they name a type for the checker, load nothing)."""
    found = set()
    for node in ast.walk(tree):
        test = node.test if isinstance(node, ast.If) else None
        if (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or getattr(test, "attr", "") == "TYPE_CHECKING":
            found.update(id(inner) for stmt in node.body for inner in ast.walk(stmt))
    return found


def _imports(source: str, *, runtime_only: bool = False) -> list[tuple[int, str]]:
    """Every npu_jupyter module ``source`` imports, with its line (inside functions too); with
    ``runtime_only``, the imports that run (not the ones under ``TYPE_CHECKING``)."""
    tree = ast.parse(source)
    skip = _annotation_only(tree) if runtime_only else set()
    found = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.ImportFrom) and node.module in ("npu_jupyter", "npu_jupyter._runtime"):
            found.extend((node.lineno, f"{node.module}.{a.name}") for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("npu_jupyter"):
            found.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            found.extend((node.lineno, a.name) for a in node.names if a.name.startswith("npu_jupyter"))
    return found


def upward_imports(relative: Path, source: str) -> list[str]:
    """The imports of module ``relative`` (path inside npu_jupyter/) that break the layers."""
    own = relative.parts[0].removesuffix(".py")
    assert own in LAYERS, f"{relative}: add its package to LAYERS and docs/architecture.md"
    upward = [
        f"line {line}: {module}" for line, module in _imports(source) if LAYERS.get(_part(module), 99) > LAYERS[own]
    ]
    if own == "_runtime":
        mine = relative.parts[1].removesuffix(".py") if len(relative.parts) > 1 else "__init__"
        assert mine in RUNTIME_LAYERS, f"{relative}: add it to RUNTIME_LAYERS and docs/architecture.md"
        for line, module in _imports(source, runtime_only=True):
            if _part(module) != "_runtime":
                continue
            theirs = _runtime_part(module)
            if theirs != mine and RUNTIME_LAYERS.get(theirs, 99) >= RUNTIME_LAYERS[mine]:
                upward.append(f"line {line}: {module} (runtime: {mine} may not import {theirs})")
    return upward


MODULES = sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_imports_a_layer_above_its_own(path: Path) -> None:
    relative = path.relative_to(PACKAGE)
    upward = upward_imports(relative, path.read_text(encoding="utf-8"))
    assert not upward, f"{relative} imports a higher layer: " + "; ".join(upward)


@pytest.mark.parametrize(
    ("module", "statement"),
    [
        ("_runtime/observe/x.py", "from npu_jupyter._runtime.session.emulator import EmulatorSession"),
        ("_runtime/observe/x.py", "from npu_jupyter._runtime.functions import emulator"),
        ("_runtime/session/x.py", "from npu_jupyter._runtime.functions.tree import x"),
        ("_runtime/functions/x.py", "from npu_jupyter._runtime.session.watch import x"),
        ("_runtime/ascend/x.py", "from npu_jupyter._runtime.session import emulator"),
        ("_runtime/report.py", "from npu_jupyter._runtime.observe.dump import x"),
        ("_runtime/session/x.py", "from npu_jupyter._runtime import backends"),
        ("_runtime/observe/x.py", "def f():\n    from npu_jupyter._sweep import sweep"),
        ("_plan/x.py", "from npu_jupyter._runtime.report import RunReport"),
    ],
)
def test_an_upward_import_fails(module: str, statement: str) -> None:
    assert upward_imports(Path(module), statement)


@pytest.mark.parametrize(
    ("module", "statement"),
    [
        ("_runtime/session/x.py", "from npu_jupyter._runtime.observe.dump import x"),
        ("_runtime/functions/x.py", "from npu_jupyter._runtime.observe import profile"),
        ("_runtime/functions/x.py", "from npu_jupyter._runtime.rewrite import roundings"),
        ("_runtime/observe/x.py", "from npu_jupyter._runtime.report import RunReport"),
        ("_runtime/backends.py", "from npu_jupyter._runtime.ascend.backend import x"),
        (
            "_runtime/observe/x.py",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from npu_jupyter._runtime.session.watch import Watch",
        ),
    ],
)
def test_a_downward_import_passes(module: str, statement: str) -> None:
    assert not upward_imports(Path(module), statement)


def test_every_runtime_part_is_a_layer() -> None:
    parts = {p.name.removesuffix(".py") for p in (PACKAGE / "_runtime").iterdir() if p.name != "__pycache__"}
    assert parts == set(RUNTIME_LAYERS)


def test_the_layer_table_matches_the_architecture_doc() -> None:
    doc = (PACKAGE.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    for part in LAYERS:
        name = "npu_jupyter" if part == "__init__" else f"npu_jupyter.{part}"
        assert f"`{name}`" in doc, name
    for part in RUNTIME_LAYERS:
        if part != "__init__":
            assert f"`{part}`" in doc, part
