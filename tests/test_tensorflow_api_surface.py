"""Kernel code uses only TensorFlow names that TF 1.15 also has (TF 1.15 itself cannot run here).

``tf.compat.v1`` is TF 1.15's public API kept inside TF 2, so a name the kernel side reaches as
``tf.X`` is safe for the adapter's TF 1.15 when ``tf.compat.v1.X`` exists too. This is a static
approximation of the TF1 surface (it cannot see signature differences); the legacy CI leg runs TF 2.6.5.
"""

from __future__ import annotations

import ast
from pathlib import Path

import npu_jupyter

PACKAGE_DIR = Path(npu_jupyter.__file__).resolve().parent


def _chain(node: ast.AST) -> list[str] | None:
    """``tf.a.b`` -> ["a", "b"] when the chain starts at the name ``tf`` (or ``self._tf``)."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name) and node.id == "tf":
        return parts[::-1]
    return None


def _tf_names_used() -> dict[str, str]:
    """Every dotted ``tf.`` path in the package (outermost chains only) -> one file using it."""
    used: dict[str, str] = {}
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        inner = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and id(node) not in inner:
                parts = _chain(node)
                if parts:
                    used.setdefault(".".join(parts), str(path.relative_to(PACKAGE_DIR)))
                    sub = node.value
                    while isinstance(sub, ast.Attribute):
                        inner.add(id(sub))
                        sub = sub.value
    return used


def _resolves(root: object, dotted: str) -> bool:
    for part in dotted.split("."):
        if not hasattr(root, part):
            return False
        root = getattr(root, part)
    return True


def test_every_tf_name_the_kernel_side_uses_exists_in_the_tf1_api():
    import tensorflow as tf

    used = _tf_names_used()
    assert "Graph" in used and len(used) > 10  # the scan does see the package's TensorFlow calls
    missing = []
    for dotted, where in sorted(used.items()):
        # Methods of objects (tf.compat.v1.Session.run) resolve through their class, like modules.
        path = dotted[len("compat.v1.") :] if dotted.startswith("compat.v1.") else dotted
        if path in ("compat.v1", "compat") or dotted.startswith("compat.as_"):
            continue
        if not _resolves(tf.compat.v1, path):
            missing.append(f"tf.{dotted} ({where})")
    assert not missing, f"not in TF1's API (tf.compat.v1): {missing}"
