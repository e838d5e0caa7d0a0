"""The zoo's results file: one row per (entry, options), rewritten atomically after every finished task.

Why a file: a zoo check of hundreds of tasks runs for hours; when it stops (a crash, a closed laptop, a
cluster preempted), running it again with the same file skips every task that already has a row and
runs only the rest. Each write goes through a temp file, fsync and rename, so the file is always a
complete JSON document, never half a row.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

FORMAT = "npu_jupyter.zoo"
VERSION = 1


def task_key(entry: str, options: dict[str, Any]) -> str:
    """The identity of a task: its entry and its option set (key order does not matter)."""
    return json.dumps([entry, options], sort_keys=True, default=str)


class ResultsFile:
    """Rows by task key, loaded from ``path`` when it exists; :meth:`add` saves at once."""

    def __init__(self, path: str | os.PathLike[str] | None) -> None:
        self.path = Path(path) if path is not None else None
        self.rows: dict[str, dict[str, Any]] = {}
        if self.path is not None and self.path.exists():
            self.rows = _read(self.path)

    def has(self, key: str) -> bool:
        """Whether this task already finished (it is not run again)."""
        return key in self.rows

    def add(self, row: dict[str, Any]) -> None:
        """Keep ``row`` and rewrite the file (atomically) when there is one."""
        self.rows[task_key(row["entry"], row["options"])] = row
        if self.path is not None:
            from npu_jupyter._options.storage import write_atomic

            document = {"format": FORMAT, "version": VERSION, "rows": list(self.rows.values())}
            write_atomic(self.path, json.dumps(_jsonable(document), indent=1) + "\n")


def _read(path: Path) -> dict[str, dict[str, Any]]:
    """Rows of a results file; a file that is not one is refused (never overwritten by mistake)."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"zoo results file {str(path)!r} cannot be read as JSON: {exc}") from None
    if not isinstance(document, dict) or document.get("format") != FORMAT or not isinstance(document.get("rows"), list):
        raise ValueError(
            f"{str(path)!r} is not a zoo results file (expected a JSON object with format {FORMAT!r} and rows); "
            f"pass another path, or remove it to start over"
        )
    return {task_key(row["entry"], row["options"]): _restore(row) for row in document["rows"]}


def _jsonable(value: object) -> object:
    """Strict JSON: inf/NaN drift and losses become the strings "inf", "-inf", "nan"."""
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    return value


#: Columns that can be non-finite; ``*_max_rel`` are the drift columns of rows written before rel. RMSE.
NUMERIC = ("loss", "fetch_rel_rmse", "worst_op_rel_rmse", "fetch_max_rel", "worst_op_max_rel")


def _restore(row: dict[str, Any]) -> dict[str, Any]:
    """Undo :func:`_jsonable` for the float columns that can be non-finite."""
    for name in NUMERIC:
        if row.get(name) in ("nan", "inf", "-inf"):
            row[name] = float(row[name])
    return row


def to_json(rows: list[dict[str, Any]]) -> str:
    """The rows as strict JSON text (what ``ZooTable.to_json`` and the CLI's ``--json`` write)."""
    return json.dumps(_jsonable({"format": FORMAT, "version": VERSION, "rows": rows}), indent=1) + "\n"
