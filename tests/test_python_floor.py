"""The kernel side stays importable on Python 3.7 (the Ascend adapter's TF 1.15 floor).

vermin (.ci/python_floor.sh) checks syntax and standard-library names but not annotation contents; a
``list[int]`` or ``X | None`` annotation is only safe on 3.7 because ``from __future__ import
annotations`` keeps it a string. This test makes sure every annotated module has that import.
"""

from __future__ import annotations

import ast
from pathlib import Path

import npu_jupyter

PACKAGE_DIR = Path(npu_jupyter.__file__).resolve().parent


def _has_annotations(tree: ast.AST) -> bool:
    """Whether any function signature or variable in ``tree`` carries an annotation."""
    for node in ast.walk(tree):
        if isinstance(node, ast.AnnAssign):
            return True
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            every = getattr(args, "posonlyargs", []) + args.args + args.kwonlyargs + [args.vararg, args.kwarg]
            if node.returns is not None or any(a is not None and a.annotation is not None for a in every):
                return True
    return False


def _has_future_annotations(tree: ast.Module) -> bool:
    return any(
        isinstance(node, ast.ImportFrom)
        and node.module == "__future__"
        and any(alias.name == "annotations" for alias in node.names)
        for node in tree.body
    )


def test_every_annotated_module_defers_its_annotations():
    missing = []
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if _has_annotations(tree) and not _has_future_annotations(tree):
            missing.append(str(path.relative_to(PACKAGE_DIR)))
    assert not missing, f"add `from __future__ import annotations` to: {missing}"


def test_the_check_sees_an_annotation_without_the_future_import():
    assert _has_annotations(ast.parse("def f(x: list[int]) -> None: ..."))
    assert not _has_future_annotations(ast.parse("def f(x: list[int]) -> None: ..."))
    assert _has_future_annotations(ast.parse("from __future__ import annotations\n"))
