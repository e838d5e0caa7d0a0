"""Overrides of the host-kept (isGray) list, because the bundled one is an approximation.

The real list of op types the adapter keeps on the host in mixed computing ships only inside the
binary CANN package, so a user who knows better (or has a custom op) must be able to correct ours
without editing package data: pass ``host_ops=`` to ``load_library`` or point
``$NPU_JUPYTER_HOST_OPS`` at a JSON file holding either a list of TF op types to add or an object
``{"add": [...], "remove": [...], "replace": [...]}`` (``replace`` first, then ``remove``, then ``add``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from npu_jupyter._ops.cann import OpDataError

HOST_OPS_ENV = "NPU_JUPYTER_HOST_OPS"


_HOST_OPS_FORMAT = (
    'a JSON list of TF op types to add, or an object with any of "add", "remove", "replace" '
    "(each a list of TF op type strings)"
)


@dataclass(frozen=True)
class HostOps:
    """How a config changes the set of op types that stay on the host (replace, add, remove)."""

    replace: frozenset[str] | None = None
    add: frozenset[str] = frozenset()
    remove: frozenset[str] = frozenset()
    origin: str = ""


def _names(value: object, where: str) -> frozenset[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise OpDataError(f"{where}: expected {_HOST_OPS_FORMAT}")
    return frozenset(value)


def _parse_host_ops(spec: object, where: str) -> HostOps:
    if isinstance(spec, list):
        return HostOps(add=_names(spec, where), origin=where)
    if isinstance(spec, Mapping):
        unknown = sorted(set(spec) - {"add", "remove", "replace"})
        if unknown:
            raise OpDataError(f"{where}: unknown key(s) {unknown}; expected {_HOST_OPS_FORMAT}")
        replace = _names(spec["replace"], where) if "replace" in spec else None
        return HostOps(
            replace=replace,
            add=_names(spec.get("add", []), where),
            remove=_names(spec.get("remove", []), where),
            origin=where,
        )
    raise OpDataError(f"{where}: expected {_HOST_OPS_FORMAT}, got {type(spec).__name__}")


def host_ops_from(host_ops: object) -> HostOps | None:
    """The override from the argument (path, list or mapping) or else from $NPU_JUPYTER_HOST_OPS."""
    if host_ops is None:
        host_ops = os.environ.get(HOST_OPS_ENV) or None
        if host_ops is None:
            return None
    if isinstance(host_ops, (str, os.PathLike)):
        path = Path(host_ops)
        try:
            spec = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as err:
            raise OpDataError(f"{path}: host-ops override is not valid JSON ({err.msg} at line {err.lineno})") from None
        except OSError as err:
            raise OpDataError(f"{path}: host-ops override cannot be read ({err.strerror})") from None
        return _parse_host_ops(spec, str(path))
    if isinstance(host_ops, Mapping):
        return _parse_host_ops(dict(host_ops), "host_ops argument")
    if isinstance(host_ops, (list, tuple, set, frozenset)):
        return _parse_host_ops(sorted(host_ops), "host_ops argument")
    raise OpDataError(f"host_ops argument: expected a file path, {_HOST_OPS_FORMAT}; got {type(host_ops).__name__}")


def apply_host_ops(rows: dict[str, dict[str, Any]], override: HostOps) -> frozenset[str]:
    """Rewrite gray_in_mix of declared rows in place; return named types that have no row."""
    declared = {t for t, r in rows.items() if r.get("declared", True)}
    kept = {t for t in declared if rows[t]["gray_in_mix"]} if override.replace is None else set(override.replace)
    kept = (kept - override.remove) | override.add
    for tf_type in declared:
        row = rows[tf_type]
        if (tf_type in kept) != row["gray_in_mix"]:
            reason = f"host-ops override ({override.origin})" if tf_type in kept else ""
            rows[tf_type] = dict(row, gray_in_mix=tf_type in kept, gray_reason=reason)
    return frozenset(t for t in kept if t not in rows)
