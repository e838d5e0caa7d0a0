"""``npu_jupyter.zoo``: whether each training script compiles, places, stays finite and drifts, per mode.

A migration team asks the same questions of dozens of models, per precision mode: does the adapter
accept the graph, where do the ops go, does float16 overflow or drift, what does the cost model expect.
``zoo(entries, modes)`` runs every (entry, option set) pair as its own task -- a fresh process with a
time limit -- locally or as Ray tasks, and gathers one :class:`~npu_jupyter._zoo_check.table.ZooTable`. With a
``results`` file the check is resumable: tasks with a row there are not run again.
The entry contract is in :mod:`npu_jupyter._zoo_check.entry`; what each column is, in :mod:`npu_jupyter._zoo_check.task`.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Iterable

from npu_jupyter._zoo_check.engines import ENGINES, run_local, run_ray
from npu_jupyter._zoo_check.entry import normalise
from npu_jupyter._zoo_check.results import ResultsFile, task_key
from npu_jupyter._zoo_check.table import ZooTable

#: The precision modes checked when none are given (the sweep's default set).
DEFAULT_MODES = ("force_fp32", "must_keep_origin_dtype", "allow_fp32_to_fp16", "allow_mix_precision", "force_fp16")
DEFAULT_TIMEOUT_S = 900.0


def zoo(
    entries: Iterable[Any],
    modes: Iterable[str] | None = DEFAULT_MODES,
    option_sets: Iterable[dict[str, Any]] | None = None,
    *,
    steps: int = 3,
    timeout: float = DEFAULT_TIMEOUT_S,
    results: str | os.PathLike[str] | None = None,
    engine: str = "local",
    workers: int | None = None,
    address: str | None = None,
    reference: bool = True,
    rerun_errors: bool = False,
    progress: bool | None = None,
    log: Callable[[str], None] | None = None,
) -> ZooTable:
    """Run every entry under every option set, one process per task, and tabulate the outcome.

    Parameters
    ----------
    entries : references or functions
        ``"path/train.py"`` (its ``zoo_entry``), ``"path/train.py:fn"``, ``"module:fn"`` or a function
        defined in an importable module; each is ``fn(npu, steps) -> loss`` (:mod:`npu_jupyter._zoo_check.entry`).
    modes : precision modes
        One task per mode (and option set); ``None`` or empty: the option sets alone.
    option_sets : dicts of options, optional
        Other option sets to cross with the modes, e.g. ``[{}, {"op_select_implmode": "high_precision"}]``.
        Each is laid over the script's own config; a bad option fails here, before anything runs.
    steps : int
        Training steps each entry runs (handed to it).
    timeout : float
        Seconds a task may take, start-up included; then its process is killed (a ``timeout`` row).
    results : path, optional
        The results file: rows already there are reused, each new row is written as its task finishes.
    engine : {"local", "ray"}
        ``local``: a pool of task processes. ``ray``: each task is a Ray task.
    workers : int, optional
        Local engine: tasks at a time (default: one per CPU core).
    address : str, optional
        Ray engine: the cluster to connect to (default: the running ``ray.init``, ``RAY_ADDRESS``, or a
        local Ray started for this call and shut down after it).
    reference : bool
        Run a float32 reference beside each emulated step (the drift columns; about doubles the time).
    rerun_errors : bool
        Also rerun tasks whose stored row is an error or a timeout.
    progress : bool, optional
        The notebook progress bar (default: only in a notebook frontend).
    log : callable, optional
        Called with one line per finished task (the command line prints them).

    """
    from npu_jupyter._progress import progress_bar

    refs = list(dict.fromkeys(normalise(e) for e in entries))
    sets = expand_option_sets(modes, option_sets)
    _check_arguments(refs, steps, timeout, engine, workers)
    store = ResultsFile(results)
    tasks = [
        {"entry": ref, "options": options, "steps": steps, "reference": reference}
        for ref in refs
        for options in sets
        if _to_run(store, ref, options, rerun_errors)
    ]
    finished = [0]
    with progress_bar(len(tasks), "zoo check", enabled=progress) as bar:

        def on_row(row: dict[str, Any]) -> None:
            store.add(row)
            finished[0] += 1
            bar.advance()
            if log is not None:
                log(_line(row, finished[0], len(tasks)))

        if engine == "ray":
            run_ray(tasks, timeout, address, on_row)
        else:
            run_local(tasks, timeout, workers, on_row)
    return ZooTable([store.rows[task_key(ref, options)] for ref in refs for options in sets])


def expand_option_sets(
    modes: Iterable[str] | None, option_sets: Iterable[dict[str, Any]] | None
) -> list[dict[str, Any]]:
    """Every option set crossed with every mode, each checked by ``NpuConfig`` (one clear error if not)."""
    from npu_jupyter._options.config import NpuConfig

    mode_list: list[str | None] = list(modes or []) or [None]
    base_sets = [dict(s) for s in (option_sets or [{}])]
    expanded: list[dict[str, Any]] = []
    for options in base_sets:
        for mode in mode_list:
            merged = dict(options)
            if mode is not None:
                merged["precision_mode"] = mode
            checked = NpuConfig(**merged).changed()  # NpuConfigError names any bad key or value
            typed = {key: checked.get(key, value) for key, value in merged.items()}
            if typed not in expanded:
                expanded.append(typed)
    return expanded


def _check_arguments(refs: list[str], steps: object, timeout: float, engine: str, workers: object) -> None:
    """Bad arguments fail before any task starts, each with what is allowed (the caller's values are unchecked)."""
    if not refs:
        raise ValueError("zoo(): give at least one entry ('file.py[:function]' or 'module:function')")
    if not isinstance(steps, int) or steps < 1:
        raise ValueError(f"zoo(): steps must be an int >= 1, got {steps!r}")
    if not timeout or timeout <= 0:
        raise ValueError(f"zoo(): timeout must be a number of seconds > 0, got {timeout!r}")
    if engine not in ENGINES:
        raise ValueError(f"zoo(): engine={engine!r} is not an engine; choose one of {', '.join(map(repr, ENGINES))}")
    if workers is not None and (not isinstance(workers, int) or workers < 1):
        raise ValueError(f"zoo(): workers must be an int >= 1 or None (one per CPU core), got {workers!r}")


def _to_run(store: ResultsFile, ref: str, options: dict[str, Any], rerun_errors: bool) -> bool:
    """A task runs unless the results file already has its row (an error row too, unless asked)."""
    key = task_key(ref, options)
    if not store.has(key):
        return True
    return rerun_errors and store.rows[key]["status"] in ("error", "timeout")


def _line(row: dict[str, Any], done: int, total: int) -> str:
    """``[3/6] entries.py:mobilenet_v1 force_fp16: ok (14.2 s measured)``: wall time of the task process."""
    from npu_jupyter._display.zoo_view import entry_label, options_label

    took = row.get("task_s")
    seconds = "" if took is None else f" ({took:.1f} s measured)"
    return f"[{done}/{total}] {entry_label(row['entry'])} {options_label(row['options'])}: {row['status']}{seconds}"
