"""``ZooTable``: the zoo check's rows, for the notebook (HTML), the terminal (text), JSON and CSV."""

from __future__ import annotations

import csv
import io
import os
from typing import Any

from npu_jupyter._zoo_check.results import task_key, to_json


class ZooTable:
    """One row per (entry, option set), in the order they were asked for.

    ``rows`` are plain dicts (columns: :func:`npu_jupyter._zoo_check.task.empty_row`); ``row(entry, options)``
    finds one; ``to_json()`` / ``to_csv()`` return text and also write it when given a path.
    """

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self.rows = rows

    def to_records(self) -> list[dict[str, Any]]:
        """The rows as plain dicts (for pandas)."""
        return [dict(r) for r in self.rows]

    def row(self, entry: str, options: dict[str, Any]) -> dict[str, Any]:
        """The row of one task; KeyError naming what was run when there is none."""
        wanted = task_key(entry, options)
        for row in self.rows:
            if task_key(row["entry"], row["options"]) == wanted:
                return row
        raise KeyError(
            f"no zoo row for {entry!r} with {options!r}; rows: {[(r['entry'], r['options']) for r in self.rows]}"
        )

    def to_json(self, path: str | os.PathLike[str] | None = None) -> str:
        """Strict JSON text of every row (non-finite numbers as "inf"/"nan"); written atomically to ``path``."""
        text = to_json(self.rows)
        if path is not None:
            from npu_jupyter._options.storage import write_atomic

            write_atomic(path, text)
        return text

    def to_csv(self, path: str | os.PathLike[str] | None = None) -> str:
        """One CSV line per row (options as JSON); written atomically to ``path``."""
        from npu_jupyter._display.zoo_view import csv_rows

        records = csv_rows(self.rows)
        buffer = io.StringIO()
        if records:
            # every row's columns: rows of an older results file have other drift columns than new ones
            fields = list(dict.fromkeys(key for record in records for key in record))
            writer = csv.DictWriter(buffer, fieldnames=fields, extrasaction="ignore")
            writer.writeheader()
            writer.writerows(records)
        if path is not None:
            from npu_jupyter._options.storage import write_atomic

            write_atomic(path, buffer.getvalue())
        return buffer.getvalue()

    def __len__(self) -> int:
        return len(self.rows)

    def __repr__(self) -> str:
        from npu_jupyter._display.zoo_view import text

        return text(self.rows)

    def _repr_html_(self) -> str:
        from npu_jupyter._display.zoo_view import render_html

        return render_html(self.rows)
