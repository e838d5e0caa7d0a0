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


_BUILTIN_GENERICS = {"tuple", "list", "dict", "set", "frozenset", "type"}


def _annotation_nodes(tree: ast.AST) -> set[int]:
    """ids of every node inside an annotation or an ``if TYPE_CHECKING:`` block (never evaluated on 3.7)."""
    inside: set[int] = set()
    for node in ast.walk(tree):
        roots: list[ast.AST] = []
        if isinstance(node, ast.AnnAssign):
            roots.append(node.annotation)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            every = getattr(args, "posonlyargs", []) + args.args + args.kwonlyargs + [args.vararg, args.kwarg]
            roots.extend(a.annotation for a in every if a is not None and a.annotation is not None)
            if node.returns is not None:
                roots.append(node.returns)
        elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            roots.append(node)
        for root in roots:
            inside.update(id(sub) for sub in ast.walk(root))
    return inside


def _evaluated_builtin_generics(tree: ast.AST) -> list[str]:
    """``tuple[...]``-style subscripts Python evaluates at run time (a TypeError on 3.7 and 3.8)."""
    skip = _annotation_nodes(tree)
    return [
        f"line {node.lineno}: {ast.unparse(node)}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Name)
        and node.value.id in _BUILTIN_GENERICS
        and id(node) not in skip
    ]


def test_no_builtin_generic_is_evaluated_at_run_time():
    """A module-level alias such as ``Fetches = Union[tuple[str, ...], None]`` broke the TF 1.15 leg."""
    found = {}
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        hits = _evaluated_builtin_generics(ast.parse(path.read_text(encoding="utf-8")))
        if hits:
            found[str(path.relative_to(PACKAGE_DIR))] = hits
    assert not found, f"use typing.Tuple/List/Dict/... where Python evaluates the subscript: {found}"


def test_the_generic_check_sees_an_alias_and_passes_annotations():
    assert _evaluated_builtin_generics(ast.parse("from typing import Union\nX = Union[tuple[int, ...], None]\n"))
    assert not _evaluated_builtin_generics(
        ast.parse("def f(x: tuple[int, ...]) -> dict[str, int]: ...\ny: list[int] = []\n")
    )
    assert not _evaluated_builtin_generics(
        ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    X = tuple[int, ...]\n")
    )
