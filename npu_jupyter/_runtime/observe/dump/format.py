"""The dump folder's format and the options that select what is dumped, shared by writer and reader.

The layout is described in :mod:`npu_jupyter._runtime.observe.dump`. This module owns what both sides must agree
on (the format tag, the graph index, a graph's record) and the adapter's checks of ``dump_path`` and
``dump_step``, which the run settings apply before the first step.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

FORMAT = "npu-jupyter.dump"
VERSION = 1
GRAPH_INDEX = "graphs.json"
DUMP_MODES = ("input", "output", "all")
DEBUG_MODES = ("aicore_overflow", "atomic_overflow", "all")


def config_error(message: str) -> Exception:
    """The options package's NpuConfigError when present (a ValueError either way)."""
    try:
        from npu_jupyter._options.errors import NpuConfigError
    except ImportError:  # pragma: no cover - options package not built yet
        return ValueError(message)
    return NpuConfigError(message)


def check_dump_path(path: str | None) -> str:
    """The adapter's dump_path checks, with its messages; returns the real path.

    The adapter refuses an unset path, a path that is not an existing directory, and a directory without read/write
    permission (tests/data/reference/ADAPTER-FACTS.md §1.2). We check before the first run, so a bad path leaves nothing
    behind.
    """
    if not path:
        raise config_error("if use dump function, dump_path must be set.")
    real = os.path.realpath(os.path.expanduser(str(path)))
    if not os.path.exists(real):
        raise config_error(f"the path {path} is invalid. (dump_path must be an existing directory)")
    if not os.path.isdir(real):
        raise config_error(f"the path {path} is not directory.")
    if not os.access(real, os.R_OK | os.W_OK | os.X_OK):
        raise config_error(f"the path {path} does't have read, write permissions.")
    return real


def parse_dump_step(spec: str | None) -> list[tuple[int, int]] | None:
    """``"0|3-5|10"`` -> [(0, 0), (3, 5), (10, 10)]; None or "" means every step.

    The grammar has one owner, :func:`npu_jupyter._options.grammars.parse_dump_step` (the adapter's
    checkDumpStep: at most 100 items, ASCII digits only, ranges ascending), so a dump_step the config
    accepts is exactly one the runtime reads; this wraps its complaint in NpuConfigError.
    """
    from npu_jupyter._options.grammars import parse_dump_step as _parse

    try:
        return _parse(None if spec is None else str(spec))
    except ValueError as exc:
        raise config_error(f"dump_step {spec!r}: {exc}") from None


def step_selected(ranges: Sequence[tuple[int, int]] | None, step: int) -> bool:
    """Whether ``step`` is dumped under a parsed ``dump_step``."""
    return ranges is None or any(lo <= step <= hi for lo, hi in ranges)


@dataclass(frozen=True)
class DumpGraph:
    """Which graph a step belongs to: its id in the session and the run signature that defines it."""

    id: int = 0
    fetches: tuple[str, ...] = ()
    feeds: tuple[str, ...] = ()
    # "training" (it computes gradients or applies an optimizer), "initializer" (variable initialisation
    # only) or "" (anything else: evaluation, prediction); load_dump opens a training graph by default
    role: str = ""

    def folder(self, root: str) -> Path:
        """Graph 0 at the top of ``dump_path`` (the flat layout), graph k under ``graph_<k>``."""
        return Path(root) if self.id == 0 else Path(root) / f"graph_{self.id}"


def graph_record(graph: DumpGraph) -> dict[str, Any]:
    """A graph's line in ``graphs.json`` and in each of its step manifests."""
    folder = "" if graph.id == 0 else f"graph_{graph.id}"
    record = {"id": graph.id, "folder": folder, "fetches": list(graph.fetches), "feeds": list(graph.feeds)}
    if graph.role:
        record["role"] = graph.role
    return record


def read_json(path: Path) -> object:
    """The JSON at ``path``; None when it is missing or not JSON (a partial or foreign file)."""
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (FileNotFoundError, NotADirectoryError, json.JSONDecodeError, UnicodeDecodeError):
        return None
