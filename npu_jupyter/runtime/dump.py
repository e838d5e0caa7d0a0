"""Data dump: the emulator's version of the adapter's ``enable_dump`` / ``enable_dump_debug`` files.

Steps are counted per graph, as on the device: the adapter compiles each distinct run (each set of
fetches and feeds the session is asked for) into its own GE model, and every model has its own
iteration counter. So in ``sess.run(init); sess.run(train) x 3`` the initializer run is step 0 of its
graph and the training runs are steps 0, 1, 2 of theirs, and ``dump_step="0|2"`` dumps training steps 0
and 2 (plus the initializer graph's own step 0, which is a different graph at its step 0 — the adapter
dumps it too). Graphs are numbered in the order the session first ran them.

Layout under ``dump_path``::

    graphs.json                         graph id -> the fetches and feeds that define it
    step_<n>/manifest.json              graph 0 (the first graph run): op, kind, slot, file, dtypes, shape
    step_<n>/<op>.<kind>.<slot>.npy
    graph_<id>/step_<n>/...             every later graph, the same way

Graph 0 stays at the top level so a session that runs one graph reads like the adapter's flat step
folders. ``load_dump`` lists the graphs (``dump.graphs``) and by default reads the graph with the most
dumped steps (the training loop; on a tie, the later graph); ``load_dump(path, graph=k)`` or
``dump.graph(k)`` picks one.

A step is written into a hidden temporary folder and renamed into place after its manifest, so a
reader (``load_dump`` or a person with ``ls``) never sees half a step: a ``step_<n>`` folder is
complete or absent. Tensors are saved in the dtype the op produced them in on the emulated device
(float16 where the plan lowered it), like the adapter's dumps.

``dump_step`` follows the adapter's grammar (``"0|5|10"``, ``"0|3-5|10"``; unset = every step) and
``dump_path`` is checked the way the adapter checks it, with its messages, before anything runs.
A size budget (``budget_bytes``; env ``NPU_JUPYTER_DUMP_BUDGET``, e.g. ``"2GB"``; default 2 GB) stops
dumping with a clear message when the next step would exceed it; earlier steps stay on disk.

Durability: the manifest is fsynced before the folder is renamed into place; tensor files are not
fsynced one by one (that cost 5x the throughput of ``np.save`` in ``bench/runtime_bench.py``). Instead
the manifest records each file's byte size and ``load_dump`` treats a step whose files do not match as
incomplete, so a crash can lose a step but never return wrong numbers. ``fsync_data=True`` restores
per-file fsync where that matters more than speed.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import numpy as np

FORMAT = "npu-jupyter.dump"
VERSION = 1
DEFAULT_BUDGET_BYTES = 2 * 1024**3
BUDGET_ENV = "NPU_JUPYTER_DUMP_BUDGET"
DUMP_MODES = ("input", "output", "all")
DEBUG_MODES = ("aicore_overflow", "atomic_overflow", "all")
_UNITS = {"": 1, "B": 1, "KB": 1024, "MB": 1024**2, "GB": 1024**3, "TB": 1024**4}


class DumpBudgetExceeded(RuntimeError):
    """Dumping the next step would exceed the size budget; nothing of that step was written."""


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
        free = f"; {_human(shutil.disk_usage(root).free)} free now"
    except OSError:
        free = ""
    what = ("the disk is full (no space left on device)" if full
            else f"the write failed ({exc.strerror or exc}; check the disk has space and is writable)")
    return DumpWriteError(
        exc.errno or (errno.ENOSPC if full else errno.EIO),
        f"dump to dump_path {root} failed at step {step}: {what}{free}. Step {step} was not dumped (its "
        f"partial files were removed); earlier steps are complete. Free space, or narrow dump_step / "
        f"dump_mode / dump_layer.",
    )


def _config_error(message: str) -> Exception:
    """The options package's NpuConfigError when present (a ValueError either way)."""
    try:
        from npu_jupyter.options.errors import NpuConfigError
    except ImportError:  # pragma: no cover - options package not built yet
        return ValueError(message)
    return NpuConfigError(message)


def check_dump_path(path: str | None) -> str:
    """The adapter's dump_path checks, with its messages; returns the real path.

    The adapter refuses an unset path, a path that is not an existing directory, and a directory
    without read/write permission (ADAPTER-FACTS §1.2). We check before the first run, so a bad path
    leaves nothing behind.
    """
    if not path:
        raise _config_error("if use dump function, dump_path must be set.")
    real = os.path.realpath(os.path.expanduser(str(path)))
    if not os.path.exists(real):
        raise _config_error(f"the path {path} is invalid. (dump_path must be an existing directory)")
    if not os.path.isdir(real):
        raise _config_error(f"the path {path} is not directory.")
    if not os.access(real, os.R_OK | os.W_OK | os.X_OK):
        raise _config_error(f"the path {path} does't have read, write permissions.")
    return real


def parse_dump_step(spec: str | None) -> list[tuple[int, int]] | None:
    """``"0|3-5|10"`` -> [(0, 0), (3, 5), (10, 10)]; None or "" means every step.

    The grammar has one owner, :func:`npu_jupyter.options.grammars.parse_dump_step` (the adapter's
    checkDumpStep: at most 100 items, ASCII digits only, ranges ascending), so a dump_step the config
    accepts is exactly one the runtime reads; this wraps its complaint in NpuConfigError.
    """
    from npu_jupyter.options.grammars import parse_dump_step as _parse

    try:
        return _parse(None if spec is None else str(spec))
    except ValueError as exc:
        raise _config_error(f"dump_step {spec!r}: {exc}") from None


def step_selected(ranges: list[tuple[int, int]] | None, step: int) -> bool:
    """Whether ``step`` is dumped under a parsed ``dump_step``."""
    return ranges is None or any(lo <= step <= hi for lo, hi in ranges)


def budget_from_env(default: int = DEFAULT_BUDGET_BYTES) -> int:
    """``NPU_JUPYTER_DUMP_BUDGET`` ("512MB", "2GB", bytes) or ``default``."""
    raw = os.environ.get(BUDGET_ENV, "").strip().upper()
    if not raw:
        return default
    match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([KMGT]?B?)", raw)
    if not match:
        raise ValueError(f"{BUDGET_ENV}={raw!r}: expected a size such as 2GB, 512MB or a byte count")
    return int(float(match.group(1)) * _UNITS[match.group(2) if match.group(2) != "K" else "KB"])


@dataclass(frozen=True)
class DumpGraph:
    """Which graph a step belongs to: its id in the session and the run signature that defines it."""

    id: int = 0
    fetches: tuple[str, ...] = ()
    feeds: tuple[str, ...] = ()

    def folder(self, root: str) -> Path:
        """Graph 0 at the top of ``dump_path`` (the flat layout), graph k under ``graph_<k>``."""
        return Path(root) if self.id == 0 else Path(root) / f"graph_{self.id}"


GRAPH_INDEX = "graphs.json"


@dataclass
class DumpEntry:
    """One tensor to dump: the user's op, input or output slot, and its value."""

    op: str
    op_type: str
    kind: str  # "input" | "output"
    slot: int
    value: Any
    decided_dtype: str = ""
    overflow: bool = False


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

    def _register(self, graph: DumpGraph) -> None:
        """First step of a graph: create its folder and add it to ``graphs.json`` (merged, atomic)."""
        if graph.id in self._graphs:
            return
        graph.folder(self.root).mkdir(exist_ok=True)
        index_path = Path(self.root) / GRAPH_INDEX
        index = _read_json(index_path) if index_path.exists() else None
        if not isinstance(index, dict) or index.get("format") != FORMAT or not isinstance(index.get("graphs"), list):
            index = {"format": FORMAT, "version": VERSION, "graphs": []}
        graphs = [g for g in index["graphs"] if isinstance(g, dict) and g.get("id") != graph.id]
        index["graphs"] = sorted(graphs + [_graph_record(graph)], key=lambda g: g.get("id", 0))
        _write_json(index_path, index)
        self._graphs.add(graph.id)

    def write_step(self, step: int, entries: list[DumpEntry], meta: dict[str, Any] | None = None,
                   graph: DumpGraph | None = None) -> str:
        """Write ``entries`` as ``step_<step>`` of ``graph`` (default graph 0); return its folder.

        Raises DumpBudgetExceeded before writing anything, DumpWriteError (an OSError) when the disk
        refuses a write.
        """
        graph = graph or DumpGraph()
        arrays = [(e, _as_saved(e.value, e.decided_dtype)) for e in entries]
        size = 0 if self.stats_only else sum(a.nbytes for _, a in arrays)
        if self.written_bytes + size > self.budget_bytes:
            raise DumpBudgetExceeded(
                f"dump budget exceeded: step {step} needs {_human(size)}, {_human(self.written_bytes)} already "
                f"written of {_human(self.budget_bytes)} (dump_path {self.root}). Step {step} and later steps "
                f"are not dumped; earlier steps are complete. Narrow dump_step or dump_mode, or raise the "
                f"budget with {BUDGET_ENV}=<size> or budget_bytes=."
            )
        folder = graph.folder(self.root)
        try:
            self._register(graph)
            tmp = Path(tempfile.mkdtemp(prefix=f".step_{step}.", suffix=".partial", dir=folder))
        except OSError as exc:
            raise _write_error(exc, self.root, step) from exc
        try:
            records = self._write_files(tmp, arrays)
            manifest = {"format": FORMAT, "version": VERSION, "step": step, "tensors": records, **(meta or {}),
                        "graph": _graph_record(graph)}
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

    def _write_files(self, folder: Path, arrays: list[tuple[DumpEntry, np.ndarray]]) -> list[dict[str, Any]]:
        records: list[dict[str, Any]] = []
        used: set[str] = set()
        for entry, array in arrays:
            if self.stats_only:
                records.append({**_record(entry, array, "", 0), "stats": _stats(array)})
                continue
            file_name = _unique(f"{_safe(entry.op)}.{entry.kind}.{entry.slot}", used) + ".npy"
            with open(folder / file_name, "wb") as handle:
                np.lib.format.write_array(handle, array, allow_pickle=False)
                if self.fsync_data:
                    handle.flush()
                    os.fsync(handle.fileno())
                size = handle.tell()
            records.append(_record(entry, array, file_name, size))
        return records

def _graph_record(graph: DumpGraph) -> dict[str, Any]:
    """A graph's line in ``graphs.json`` and in each of its step manifests."""
    folder = "" if graph.id == 0 else f"graph_{graph.id}"
    return {"id": graph.id, "folder": folder, "fetches": list(graph.fetches), "feeds": list(graph.feeds)}


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


def _as_saved(value: Any, decided: str) -> np.ndarray:
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


def _write_json(path: Path, data: Any) -> None:
    """Atomic JSON write (temp file in the same folder, fsync, os.replace; see ``write_atomic``)."""
    from npu_jupyter.options.storage import write_atomic

    write_atomic(path, json.dumps(data, separators=(",", ":")))


def _read_json(path: Path) -> Any:
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (FileNotFoundError, NotADirectoryError, json.JSONDecodeError, UnicodeDecodeError):
        return None


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name) or "_"


def _unique(stem: str, used: set[str]) -> str:
    candidate, n = stem, 1
    while candidate.lower() in used:
        candidate = f"{stem}~{n}"
        n += 1
    used.add(candidate.lower())
    return candidate


def _human(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n} B"  # pragma: no cover


# ----------------------------------------------------------------------------------------- reading


@dataclass
class DumpedTensor:
    """One dumped tensor's manifest record; ``value`` loads the array on first use."""

    step: int
    op: str
    op_type: str
    kind: str
    slot: int
    path: str
    dtype: str
    decided_dtype: str
    shape: list[int]
    overflow: bool
    stats: dict[str, Any] | None = None  # dump_data="stats" dumps: statistics instead of a file
    graph_id: int = 0  # which graph (run signature) of the session the step belongs to
    _value: Any = field(default=None, repr=False)

    @property
    def value(self) -> np.ndarray:
        if self._value is None:
            if not self.path:
                raise ValueError(f"{self.op} {self.kind}:{self.slot} was dumped as statistics only "
                                 f"(dump_data='stats'): {self.stats}")
            self._value = np.load(self.path, allow_pickle=False)
        return self._value


class StepDump(dict):
    """``op name -> {slot key -> array}`` for one step; slot keys are ``"output:0"``, ``"input:1"``.

    ``step_dump[op][0]`` (an int) means output slot 0.
    """

    def __init__(self, step: int, tensors: list[DumpedTensor], manifest: dict[str, Any]) -> None:
        super().__init__()
        self.step = step
        self.tensors = tensors
        self.manifest = manifest
        self.graph_id = int((manifest.get("graph") or {}).get("id", 0))
        for t in tensors:
            self.setdefault(t.op, _OpSlots())._records[f"{t.kind}:{t.slot}"] = t

    @property
    def overflow_ops(self) -> list[str]:
        return list(self.manifest.get("overflow_ops", []))

    @property
    def first_overflow(self) -> str | None:
        return self.manifest.get("first_overflow")


class _OpSlots(dict):
    """Slots of one op; values load lazily."""

    def __init__(self) -> None:
        super().__init__()
        self._records: dict[str, DumpedTensor] = {}

    def __getitem__(self, key: Any) -> np.ndarray:
        return self._records[_slot_key(key)].value

    def __contains__(self, key: object) -> bool:
        return _slot_key(key) in self._records

    def __iter__(self) -> Iterator[str]:
        return iter(self._records)

    def __len__(self) -> int:
        return len(self._records)

    def keys(self):  # noqa: ANN201 - dict protocol
        return self._records.keys()

    def items(self):  # noqa: ANN201 - dict protocol
        return [(k, r.value) for k, r in self._records.items()]


def _slot_key(key: Any) -> str:
    if isinstance(key, int):
        return f"output:{key}"
    return str(key)


class Dump:
    """A dump folder read back: ``dump.steps``, ``dump[step][op][slot]``, ``dump.get(step, op, slot)``.

    Steps are per graph (see the module docstring). ``dump.graphs`` lists the graph ids in the folder
    and ``dump.graph_info(k)`` what defines each (fetches, feeds); ``steps``, ``[step]``, ``get`` and
    ``tensors`` read one graph, ``dump.graph_id``: the one asked for, else the graph with the most dumped
    steps (on a tie the later one), which is the training loop when an initializer ran first.
    ``dump.graph(k)`` is the same dump read for graph ``k``.
    """

    def __init__(self, root: str, steps: dict[int, StepDump], *, graphs: dict[int, dict[int, StepDump]] | None = None,
                 graph_id: int | None = None, infos: dict[int, dict[str, Any]] | None = None) -> None:
        self.root = root
        self._graphs = graphs if graphs is not None else {0: steps}
        self._infos = infos or {}
        self.graph_id = graph_id if graph_id is not None else _busiest(self._graphs)
        self._steps = self._graphs.get(self.graph_id, {}) if graphs is not None else steps

    @property
    def graphs(self) -> list[int]:
        """The graph ids that have at least one complete step here."""
        return sorted(g for g, steps in self._graphs.items() if steps)

    def graph_info(self, graph_id: int) -> dict[str, Any]:
        """``{"id", "folder", "fetches", "feeds"}`` of one graph (from ``graphs.json`` or its manifests)."""
        if graph_id not in self._graphs:
            raise KeyError(f"graph {graph_id} is not in the dump at {self.root}; graphs: {self.graphs}")
        return dict(self._infos.get(graph_id) or {"id": graph_id})

    def graph(self, graph_id: int) -> Dump:
        """This dump read for graph ``graph_id``."""
        if graph_id not in self._graphs:
            raise KeyError(f"graph {graph_id} is not in the dump at {self.root}; graphs: {self.graphs}")
        return Dump(self.root, {}, graphs=self._graphs, graph_id=graph_id, infos=self._infos)

    @property
    def steps(self) -> list[int]:
        return sorted(self._steps)

    def __getitem__(self, step: int) -> StepDump:
        try:
            return self._steps[step]
        except KeyError:
            raise KeyError(f"step {step} is not in the dump at {self.root} (graph {self.graph_id}); dumped steps: "
                           f"{self.steps}; graphs: {self.graphs}") from None

    def __iter__(self) -> Iterator[int]:
        return iter(self.steps)

    def __len__(self) -> int:
        return len(self._steps)

    def get(self, step: int, op: str, slot: int | str = 0, kind: str = "output") -> np.ndarray | None:
        """The array of ``op``'s ``kind`` slot at ``step``; None when it was not dumped."""
        key = f"{kind}:{slot}" if isinstance(slot, int) else slot
        step_dump = self._steps.get(step)
        if step_dump is None or op not in step_dump or key not in step_dump[op]:
            return None
        return step_dump[op][key]

    def tensors(self) -> list[DumpedTensor]:
        """Every dumped tensor record of this graph, by step then manifest order."""
        return [t for s in self.steps for t in self._steps[s].tensors]

    def __repr__(self) -> str:
        others = f", graphs={self.graphs}" if len(self.graphs) > 1 else ""
        return f"Dump({self.root!r}, graph={self.graph_id}, steps={self.steps}{others})"


def _busiest(graphs: dict[int, dict[int, StepDump]]) -> int:
    """The graph with the most dumped steps, the later one on a tie; 0 for an empty dump."""
    return max(graphs, key=lambda g: (len(graphs[g]), g), default=0)


def _files_complete(folder: Path, manifest: dict[str, Any]) -> bool:
    """Every tensor file exists with the byte size the manifest recorded."""
    for rec in manifest.get("tensors", []):
        if not rec.get("file"):
            continue
        try:
            if "bytes" in rec and os.path.getsize(folder / rec["file"]) != rec["bytes"]:
                return False
        except OSError:
            return False
    return True


def load_dump(path: str | os.PathLike[str], graph: int | None = None) -> Dump:
    """Read a dump folder written by the emulator (complete steps only).

    ``path`` is the ``dump_path`` folder, one ``graph_<k>`` folder in it, or one ``step_<n>`` folder.
    Steps are numbered per graph, as the adapter counts iterations per compiled graph: ``dump.graphs``
    lists the graphs found, ``graph=k`` (or ``dump.graph(k)``) picks one; by default ``dump.steps`` and
    ``dump[step]`` read the graph with the most dumped steps (on a tie the later one), so after
    ``sess.run(init)`` and a training loop with ``dump_step="0|2"``, ``load_dump(path).steps == [0, 2]``
    are the training steps and ``load_dump(path).graph(0)[0]`` is the initializer run.
    """
    root = Path(path)
    if not root.is_dir():
        raise FileNotFoundError(f"no dump folder at {str(path)!r}")
    if (root / "manifest.json").exists() and re.fullmatch(r"step_\d+", root.name):
        located = [(root, None)]
        root = root.parent
    else:
        located = [(f, 0) for f in _step_folders(root)]
        if re.fullmatch(r"graph_\d+", root.name) and not (root / GRAPH_INDEX).exists():
            located = [(f, int(root.name[6:])) for f, _ in located]
        else:
            for sub in sorted(p for p in root.iterdir() if p.is_dir() and re.fullmatch(r"graph_\d+", p.name)):
                located += [(f, int(sub.name[6:])) for f in _step_folders(sub)]
    graphs: dict[int, dict[int, StepDump]] = {}
    infos: dict[int, dict[str, Any]] = {}
    for folder, graph_id in located:
        step_dump = _read_step(folder)
        if step_dump is None:
            continue
        gid = step_dump.graph_id if graph_id is None else graph_id
        step_dump.graph_id = gid
        for t in step_dump.tensors:
            t.graph_id = gid
        graphs.setdefault(gid, {})[step_dump.step] = step_dump
        if step_dump.manifest.get("graph"):
            infos.setdefault(gid, dict(step_dump.manifest["graph"]))
    index = _read_json(root / GRAPH_INDEX)
    if isinstance(index, dict) and index.get("format") == FORMAT and isinstance(index.get("graphs"), list):
        for record in index["graphs"]:
            if isinstance(record, dict) and record.get("id") in graphs:
                infos[record["id"]] = dict(record)
    if graph is not None and graph not in graphs:
        raise KeyError(f"graph {graph} is not in the dump at {root}; graphs: {sorted(graphs)}")
    return Dump(str(root), {}, graphs=graphs, graph_id=graph, infos=infos)


def _step_folders(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_dir() and re.fullmatch(r"step_\d+", p.name))


def _read_step(folder: Path) -> StepDump | None:
    """One complete step folder, or None when it is not ours or not complete."""
    manifest = _read_json(folder / "manifest.json")
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        return None  # not ours, or not complete
    if not _files_complete(folder, manifest):
        return None  # a crash after the rename but before the data reached the disk
    step = int(manifest["step"])
    tensors = [
        DumpedTensor(
            step=step,
            op=rec["op"],
            op_type=rec.get("op_type", ""),
            kind=rec["kind"],
            slot=int(rec["slot"]),
            path=str(folder / rec["file"]) if rec.get("file") else "",
            dtype=rec.get("dtype", ""),
            decided_dtype=rec.get("decided_dtype", ""),
            shape=list(rec.get("shape", [])),
            overflow=bool(rec.get("overflow", False)),
            stats=rec.get("stats"),
        )
        for rec in manifest.get("tensors", [])
    ]
    return StepDump(step, tensors, manifest)
