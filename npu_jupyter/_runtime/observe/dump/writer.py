"""Writing dump steps: one step at a time, atomically, within a byte budget.

See :mod:`npu_jupyter._runtime.observe.dump` for the layout. A step is written into a hidden temporary folder and
renamed into place after its manifest, so a reader never sees half a step. Tensors are saved in the
dtype the op produced them in on the emulated device (float16 where the plan lowered it).

The size budget (``budget_bytes``; env ``NPU_JUPYTER_DUMP_BUDGET``, e.g. ``"2GB"``; default 2 GB) is
checked before anything of a step is written: :meth:`DumpWriter.fits` answers from an estimate of the
step's size, so the emulator can skip a step *before* running the extra fetches it would need.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from npu_jupyter._runtime.observe.dump.format import (
    FORMAT,
    GRAPH_INDEX,
    VERSION,
    DumpGraph,
    check_dump_path,
    graph_record,
    read_json,
)
from npu_jupyter._units import format_bytes

if TYPE_CHECKING:
    from npu_jupyter._progress import Progress

DEFAULT_BUDGET_BYTES = 2 * 1024**3
BUDGET_ENV = "NPU_JUPYTER_DUMP_BUDGET"
_UNITS = {"": 1, "B": 1, "KB": 1024, "MB": 1024**2, "GB": 1024**3, "TB": 1024**4}


class DumpBudgetExceeded(RuntimeError):  # noqa: N818 - public name; renaming breaks callers
    """Dumping the next step would exceed the size budget; nothing of that step was written.

    ``needed`` is that step's size in bytes, so a caller that knows which graph or function the step
    belongs to can say so (the writer only knows the step number).
    """

    def __init__(self, message: str, needed: int = 0) -> None:
        super().__init__(message)
        self.needed = needed


class DumpWriteError(OSError):
    """Writing a step failed (most often a full disk); that step was removed, earlier steps are complete.

    An OSError (with the original errno) so callers catching disk errors still catch it, but with a
    message that names the problem, ``dump_path`` and the step instead of numpy's bare
    ``"16384 requested and 7136 written"``.
    """


def _write_error(exc: OSError, root: str, step: int) -> DumpWriteError:
    """One clear error for an OSError raised while writing ``step`` under ``root``."""
    full = exc.errno in (errno.ENOSPC, errno.EDQUOT) or bool(re.search(r"requested and \d+ written", str(exc)))
    try:
        free = f"; {format_bytes(shutil.disk_usage(root).free)} free now"
    except OSError:
        free = ""
    what = (
        "the disk is full (no space left on device)"
        if full
        else f"the write failed ({exc.strerror or exc}; check the disk has space and is writable)"
    )
    return DumpWriteError(
        exc.errno or (errno.ENOSPC if full else errno.EIO),
        f"dump to dump_path {root} failed at step {step}: {what}{free}. Step {step} was not dumped (its "
        f"partial files were removed); earlier steps are complete. Free space, or narrow dump_step / "
        f"dump_mode / dump_layer.",
    )


def budget_from_env(default: int = DEFAULT_BUDGET_BYTES) -> int:
    """``NPU_JUPYTER_DUMP_BUDGET`` ("512MB", "2GB", bytes) or ``default``."""
    raw = os.environ.get(BUDGET_ENV, "").strip().upper()
    if not raw:
        return default
    match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([KMGT]?B?)", raw)
    if not match:
        raise ValueError(f"{BUDGET_ENV}={raw!r}: expected a size such as 2GB, 512MB or a byte count")
    return int(float(match.group(1)) * _UNITS[match.group(2) if match.group(2) != "K" else "KB"])


@dataclass
class DumpEntry:
    """One tensor to dump: the user's op, input or output slot, and its value."""

    op: str
    op_type: str
    kind: str  # "input" | "output"
    slot: int
    value: object  # the array as the run produced it (saved with numpy)
    decided_dtype: str = ""
    overflow: bool = False
    iteration: int | None = None  # the loop iteration, for a tensor inside a while-loop frame


class DumpWriter:
    """Writes one step at a time under ``root``, atomically, within a byte budget."""

    def __init__(
        self, root: str, *, budget_bytes: int | None = None, fsync_data: bool = False, stats_only: bool = False
    ) -> None:
        self.root = check_dump_path(root)
        self.stats_only = stats_only  # dump_data="stats": statistics in the manifest, no tensor files
        self.budget_bytes = budget_from_env() if budget_bytes is None else int(budget_bytes)
        self.written_bytes = 0
        self.fsync_data = fsync_data
        self._graphs: set[int] = set()

    def _register(self, graph: DumpGraph, skipped: dict[str, str] | None = None) -> None:
        """First step of a graph: create its folder and add it to ``graphs.json`` (merged, atomic).

        ``skipped`` (step -> why) adds steps that were not dumped, so a reader can say so instead of
        silently reading another graph.
        """
        if graph.id in self._graphs and not skipped:
            return
        graph.folder(self.root).mkdir(exist_ok=True)
        index_path = Path(self.root) / GRAPH_INDEX
        loaded = read_json(index_path) if index_path.exists() else None
        index: dict[str, Any] = {"format": FORMAT, "version": VERSION, "graphs": []}
        if isinstance(loaded, dict) and loaded.get("format") == FORMAT and isinstance(loaded.get("graphs"), list):
            index = loaded
        old = next((g for g in index["graphs"] if isinstance(g, dict) and g.get("id") == graph.id), {})
        record = graph_record(graph)
        record["skipped"] = dict(old.get("skipped") or {}, **(skipped or {}))
        graphs = [g for g in index["graphs"] if isinstance(g, dict) and g.get("id") != graph.id]
        index["graphs"] = sorted([*graphs, record], key=lambda g: g.get("id", 0))
        _write_json(index_path, index)
        self._graphs.add(graph.id)

    def record_skipped(self, graph: DumpGraph, step: int, reason: str) -> None:
        """Note in ``graphs.json`` that ``step`` of ``graph`` was not dumped, and why."""
        # the report already says why; a full disk must not fail the run
        with contextlib.suppress(OSError):
            self._register(graph, {str(step): reason})

    def write_step(
        self,
        step: int,
        entries: list[DumpEntry],
        meta: dict[str, Any] | None = None,
        graph: DumpGraph | None = None,
        *,
        stats_only: bool | None = None,
    ) -> str:
        """Write ``entries`` as ``step_<step>`` of ``graph`` (default graph 0); return its folder.

        ``stats_only`` (default: the writer's ``dump_data``) writes statistics in the manifest and no
        tensor files, which spend none of the budget. Raises DumpBudgetExceeded before writing anything,
        DumpWriteError (an OSError) when the disk refuses a write.
        """
        graph = graph or DumpGraph()
        stats = self.stats_only if stats_only is None else stats_only
        arrays = [(e, _as_saved(e.value, e.decided_dtype)) for e in entries]
        size = 0 if stats else sum(a.nbytes for _, a in arrays)
        if self.written_bytes + size > self.budget_bytes:
            raise DumpBudgetExceeded(
                f"dump budget exceeded: step {step} needs {format_bytes(size)}, {format_bytes(self.written_bytes)} already "
                f"written of {format_bytes(self.budget_bytes)} (dump_path {self.root}). Step {step} and later steps "
                f"are not dumped; earlier steps are complete. Narrow dump_step or dump_mode, or raise the "
                f"budget with {BUDGET_ENV}=<size> or budget_bytes=.",
                size,
            )
        folder = graph.folder(self.root)
        try:
            self._register(graph)
            tmp = Path(tempfile.mkdtemp(prefix=f".step_{step}.", suffix=".partial", dir=folder))
        except OSError as exc:
            raise _write_error(exc, self.root, step) from exc
        try:
            records = self._write_files(tmp, arrays, stats)
            manifest = {
                "format": FORMAT,
                "version": VERSION,
                "step": step,
                "tensors": records,
                **(meta or {}),
                "graph": graph_record(graph),
            }
            _write_json(tmp / "manifest.json", manifest)
            final = folder / f"step_{step}"
            _publish_dir(tmp, final)
        except OSError as exc:
            shutil.rmtree(tmp, ignore_errors=True)
            raise _write_error(exc, self.root, step) from exc
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        self.written_bytes += size
        return str(final)

    def _write_files(
        self, folder: Path, arrays: list[tuple[DumpEntry, np.ndarray]], stats: bool
    ) -> list[dict[str, Any]]:
        """One ``.npy`` per tensor; a step of thousands of tensors shows a (late) progress bar in a notebook."""
        from npu_jupyter._progress import progress_bar

        with progress_bar(len(arrays), f"dump of {folder.name}") as bar:
            return self._write_each(folder, arrays, bar, stats)

    def _write_each(
        self, folder: Path, arrays: list[tuple[DumpEntry, np.ndarray]], bar: Progress, stats: bool
    ) -> list[dict[str, Any]]:
        records: list[dict[str, Any]] = []
        used: set[str] = set()
        for entry, array in arrays:
            bar.advance()
            if stats:
                records.append(dict(_record(entry, array, "", 0), stats=_stats(array)))
                continue
            iteration = "" if entry.iteration is None else f".iter{entry.iteration}"
            file_name = _unique(f"{_safe(entry.op)}.{entry.kind}.{entry.slot}{iteration}", used) + ".npy"
            with open(folder / file_name, "wb") as handle:
                np.lib.format.write_array(handle, array, allow_pickle=False)
                if self.fsync_data:
                    handle.flush()
                    os.fsync(handle.fileno())
                size = handle.tell()
            records.append(_record(entry, array, file_name, size))
        return records


def _record(entry: DumpEntry, array: np.ndarray, file_name: str, size: int) -> dict[str, Any]:
    """The manifest line of one dumped tensor."""
    return {
        "op": entry.op,
        "op_type": entry.op_type,
        "kind": entry.kind,
        "slot": entry.slot,
        "file": file_name,
        "dtype": str(array.dtype),
        "decided_dtype": entry.decided_dtype or str(array.dtype),
        "shape": list(array.shape),
        "overflow": entry.overflow,
        "bytes": size,
        "iteration": entry.iteration,
    }


def _stats(array: np.ndarray) -> dict[str, Any]:
    """dump_data="stats": what the adapter's statistics dump gives instead of the tensor."""
    if array.dtype.kind not in "fiub" or array.size == 0:
        return {"count": int(array.size)}
    values = array.astype(np.float64)
    finite = values[np.isfinite(values)]
    return {
        "count": int(array.size),
        "min": float(finite.min()) if finite.size else None,
        "max": float(finite.max()) if finite.size else None,
        "mean": float(finite.mean()) if finite.size else None,
        "nan": int(np.isnan(values).sum()),
        "inf": int(np.isinf(values).sum()),
    }


def _as_saved(value: object, decided: str) -> np.ndarray:
    """The array as the device stored it: float16 where the plan lowered a float32 tensor."""
    array = np.asarray(value)
    if decided == "float16" and array.dtype in (np.float32, np.float64):
        return array.astype(np.float16)
    return array


def _publish_dir(tmp: Path, final: Path) -> None:
    """Rename ``tmp`` to ``final``; an older folder of the same step is swapped out, then removed."""
    old = None
    if final.exists():
        old = final.with_name(f".{final.name}.old.{os.getpid()}")
        os.replace(final, old)
    os.replace(tmp, final)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def _write_json(path: Path, data: object) -> None:
    """Atomic JSON write (temp file in the same folder, fsync, os.replace; see ``write_atomic``)."""
    from npu_jupyter._options.storage import write_atomic

    write_atomic(path, json.dumps(data, separators=(",", ":")))


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name) or "_"


def _unique(stem: str, used: set[str]) -> str:
    candidate, n = stem, 1
    while candidate.lower() in used:
        candidate = f"{stem}~{n}"
        n += 1
    used.add(candidate.lower())
    return candidate
