"""Imports flow one way through the pipeline (docs/architecture.md): no module imports a layer above it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "npu_jupyter"

#: layer of each top-level part of the package; a module may import its own part and lower layers.
LAYERS = {
    "_renderers": 0,
    "units": 0,
    "progress": 0,
    "tensorflow_import": 0,
    "package_data": 0,
    "tf_types": 0,
    "ops": 0,
    "options": 1,
    "scope": 1,
    "plan": 2,
    "cost": 3,
    "runtime": 4,
    "adapter": 5,
    "display": 6,
    "zoo_check": 7,
    "notebook": 8,
    "__init__": 9,
    "__main__": 9,
}


def _part(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _imports(path: Path) -> list[tuple[int, str]]:
    """Every npu_jupyter module ``path`` imports, with its line (inside functions too)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module == "npu_jupyter":  # from npu_jupyter import adapter
            found.extend((node.lineno, f"npu_jupyter.{a.name}") for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("npu_jupyter"):
            found.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            found.extend((node.lineno, a.name) for a in node.names if a.name.startswith("npu_jupyter"))
    return found


MODULES = sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_imports_a_layer_above_its_own(path: Path) -> None:
    relative = path.relative_to(PACKAGE)
    own = relative.parts[0].removesuffix(".py")
    assert own in LAYERS, f"{relative}: add its package to LAYERS and docs/architecture.md"
    upward = [
        f"line {line}: {module}" for line, module in _imports(path) if LAYERS.get(_part(module), 99) > LAYERS[own]
    ]
    assert not upward, f"{relative} imports a higher layer: " + "; ".join(upward)


def test_the_layer_table_matches_the_architecture_doc() -> None:
    doc = (PACKAGE.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    for part in LAYERS:
        name = "npu_jupyter" if part == "__init__" else f"npu_jupyter.{part}"
        assert f"`{name}`" in doc, name
