"""Reading a dump folder back: ``load_dump`` and the ``Dump`` / ``StepDump`` views over it.

See :mod:`npu_jupyter._runtime.observe.dump` for the layout. Only complete steps are read: a step whose manifest
is missing, foreign or whose files do not match their recorded sizes is skipped.
"""

from __future__ import annotations

import os
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterator, KeysView, cast

import numpy as np

from npu_jupyter._runtime.observe.dump.format import FORMAT, GRAPH_INDEX, read_json


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
    iteration: int | None = None  # the loop iteration of a tensor inside a while-loop frame
    _value: Any = field(default=None, repr=False)

    @property
    def value(self) -> np.ndarray:
        """The dumped array, read from its ``.npy`` file on first access."""
        if self._value is None:
            if not self.path:
                raise ValueError(
                    f"{self.op} {self.kind}:{self.slot} was dumped as statistics only (dump_data='stats'): {self.stats}"
                )
            self._value = np.load(self.path, allow_pickle=False)
        return cast("np.ndarray", self._value)


class StepDump(Dict[Any, Any]):  # typing.Dict: a subscripted dict base needs Python 3.9
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
            records = self.setdefault(t.op, _OpSlots())._records
            if t.iteration is None:
                records[f"{t.kind}:{t.slot}"] = t
            else:  # "output:0#3" is iteration 3; "output:0" the last iteration recorded
                records[f"{t.kind}:{t.slot}#{t.iteration}"] = t
                records.setdefault(f"{t.kind}:{t.slot}", t)
                if (records[f"{t.kind}:{t.slot}"].iteration or 0) < t.iteration:
                    records[f"{t.kind}:{t.slot}"] = t

    @property
    def overflow_ops(self) -> list[str]:
        """Ops whose outputs went non-finite in this step, in topological order."""
        return list(self.manifest.get("overflow_ops", []))

    @property
    def first_overflow(self) -> str | None:
        """The first op that went non-finite in this step (None when none did)."""
        return self.manifest.get("first_overflow")


class _OpSlots(Dict[Any, Any]):
    """Slots of one op; values load lazily."""

    def __init__(self) -> None:
        super().__init__()
        self._records: dict[str, DumpedTensor] = {}

    def __getitem__(self, key: object) -> np.ndarray:
        return self._records[_slot_key(key)].value

    def __contains__(self, key: object) -> bool:
        return _slot_key(key) in self._records

    def __iter__(self) -> Iterator[str]:
        return iter(self._records)

    def __len__(self) -> int:
        return len(self._records)

    def keys(self) -> KeysView[str]:  # type: ignore[override]  # the op names, as a read-only view
        return self._records.keys()

    def items(self) -> list[tuple[str, Any]]:  # type: ignore[override]  # (op, value) pairs, not records, on purpose
        return [(k, r.value) for k, r in self._records.items()]


def _slot_key(key: object) -> str:
    if isinstance(key, int):
        return f"output:{key}"
    return str(key)


class Dump:
    """A dump folder read back: ``dump.steps``, ``dump[step][op][slot]``, ``dump.get(step, op, slot)``.

    Steps are per graph (see the module docstring). ``dump.graphs`` lists the graph ids in the folder
    and ``dump.graph_info(k)`` what defines each (fetches, feeds); ``steps``, ``[step]``, ``get`` and
    ``tensors`` read one graph, ``dump.graph_id``: the one asked for, else the training graph (the writer
    marks graphs that compute gradients or apply an optimizer) with the most steps, else the graph with
    the most dumped steps (on a tie the later one).
    ``dump.graph(k)`` is the same dump read for graph ``k``.
    """

    def __init__(
        self,
        root: str,
        steps: dict[int, StepDump],
        *,
        graphs: dict[int, dict[int, StepDump]] | None = None,
        graph_id: int | None = None,
        infos: dict[int, dict[str, Any]] | None = None,
    ) -> None:
        self.root = root
        self._graphs = graphs if graphs is not None else {0: steps}
        self._infos = infos or {}
        self.graph_id = graph_id if graph_id is not None else _busiest(self._graphs, self._infos)
        self._steps = self._graphs.get(self.graph_id, {}) if graphs is not None else steps

    @property
    def graphs(self) -> list[int]:
        """The graph ids that have at least one complete or skipped step here."""
        return sorted(g for g, steps in self._graphs.items() if steps or self._skipped_of(g))

    @property
    def skipped(self) -> dict[int, str]:
        """Steps of this graph that were run but not dumped (e.g. the size budget), and why."""
        return self._skipped_of(self.graph_id)

    def _skipped_of(self, graph_id: int) -> dict[int, str]:
        raw = (self._infos.get(graph_id) or {}).get("skipped") or {}
        return {int(k): str(v) for k, v in raw.items() if str(k).isdigit()}

    def graph_info(self, graph_id: int) -> dict[str, Any]:
        """``{"id", "folder", "fetches", "feeds"}`` of one graph (from ``graphs.json`` or its manifests)."""
        if graph_id not in self._graphs:
            raise KeyError(f"graph {graph_id} is not in the dump at {self.root}; graphs: {self.graphs}")
        return dict(self._infos.get(graph_id) or {"id": graph_id})

    def graph(self, graph_id: int) -> Dump:
        """The same dump folder, read for graph ``graph_id``."""
        if graph_id not in self._graphs:
            raise KeyError(f"graph {graph_id} is not in the dump at {self.root}; graphs: {self.graphs}")
        return Dump(self.root, {}, graphs=self._graphs, graph_id=graph_id, infos=self._infos)

    @property
    def steps(self) -> list[int]:
        """The steps that have a dump, ascending."""
        return sorted(self._steps)

    def __getitem__(self, step: int) -> StepDump:
        try:
            return self._steps[step]
        except KeyError:
            why = self.skipped.get(step)
            if why:
                raise KeyError(f"step {step} of graph {self.graph_id} was not dumped: {why}") from None
            raise KeyError(
                f"step {step} is not in the dump at {self.root} (graph {self.graph_id}); dumped steps: "
                f"{self.steps}; graphs: {self.graphs}"
            ) from None

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
        return cast("np.ndarray | None", step_dump[op][key])

    def tensors(self) -> list[DumpedTensor]:
        """Every dumped tensor record of this graph, by step then manifest order."""
        return [t for s in self.steps for t in self._steps[s].tensors]

    def __repr__(self) -> str:
        others = f", graphs={self.graphs}" if len(self.graphs) > 1 else ""
        skipped = f", skipped={sorted(self.skipped)}" if self.skipped else ""
        return f"Dump({self.root!r}, graph={self.graph_id}, steps={self.steps}{skipped}{others})"


def _busiest(graphs: dict[int, dict[int, StepDump]], infos: dict[int, dict[str, Any]]) -> int:
    """The training graph with the most steps run (dumped or skipped); 0 for an empty dump.

    A graph the writer marked ``"role": "training"`` (it computes gradients or applies an optimizer)
    comes first, so after ``fit(..., validation_data=...)`` the train function's dump opens, not the
    evaluate function's that ran as many calls. Then the most steps run: counting skipped steps keeps a
    training loop whose dump was skipped for its size the default, rather than silently returning the
    initialiser graph's one step. On a tie, the later graph (dumps written before roles were recorded).
    """

    def rank(g: int) -> tuple[bool, int, int]:
        info = infos.get(g) or {}
        return info.get("role") == "training", len(graphs.get(g, {})) + len(info.get("skipped") or {}), g

    return max(set(graphs) | set(infos), key=rank, default=0)


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
    ``dump[step]`` read the training graph (or train function) with the most steps, else the graph with
    the most dumped steps (on a tie the later one), so after
    ``sess.run(init)`` and a training loop with ``dump_step="0|2"``, ``load_dump(path).steps == [0, 2]``
    are the training steps and ``load_dump(path).graph(0)[0]`` is the initializer run.
    """
    root = Path(path)
    if not root.is_dir():
        raise FileNotFoundError(f"no dump folder at {str(path)!r}")
    if (root / "manifest.json").exists() and re.fullmatch(r"step_\d+", root.name):
        located: list[tuple[Path, int | None]] = [(root, None)]
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
    index = read_json(root / GRAPH_INDEX)
    if isinstance(index, dict) and index.get("format") == FORMAT and isinstance(index.get("graphs"), list):
        for record in index["graphs"]:
            if isinstance(record, dict) and (record.get("id") in graphs or record.get("skipped")):
                infos[record["id"]] = dict(record)
                graphs.setdefault(record["id"], {})
    if graph is not None and graph not in graphs:
        raise KeyError(f"graph {graph} is not in the dump at {root}; graphs: {sorted(graphs)}")
    dump = Dump(str(root), {}, graphs=graphs, graph_id=graph, infos=infos)
    if graph is None and dump.skipped and not dump.steps:
        warnings.warn(
            f"load_dump({str(path)!r}): graph {dump.graph_id} (the default: training, most steps) has no dumped step; "
            f"skipped: {dump.skipped}. Other graphs: {[g for g in dump.graphs if g != dump.graph_id]} "
            f"(dump.graph(k)).",
            RuntimeWarning,
            stacklevel=2,
        )
    return dump


def _step_folders(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_dir() and re.fullmatch(r"step_\d+", p.name))


def _read_step(folder: Path) -> StepDump | None:
    """One complete step folder, or None when it is not ours or not complete."""
    manifest = read_json(folder / "manifest.json")
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
            iteration=rec.get("iteration"),
        )
        for rec in manifest.get("tensors", [])
    ]
    return StepDump(step, tensors, manifest)
