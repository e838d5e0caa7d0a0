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

from npu_jupyter._runtime.observe.dump.format import (
    DEBUG_MODES,
    DUMP_MODES,
    FORMAT,
    GRAPH_INDEX,
    VERSION,
    DumpGraph,
    check_dump_path,
    config_error,
    parse_dump_step,
    step_selected,
)
from npu_jupyter._runtime.observe.dump.reader import Dump, DumpedTensor, StepDump, load_dump
from npu_jupyter._runtime.observe.dump.writer import (
    BUDGET_ENV,
    DEFAULT_BUDGET_BYTES,
    DumpBudgetExceeded,
    DumpEntry,
    DumpWriteError,
    DumpWriter,
    budget_from_env,
)

__all__ = [
    "BUDGET_ENV",
    "DEBUG_MODES",
    "DEFAULT_BUDGET_BYTES",
    "DUMP_MODES",
    "FORMAT",
    "GRAPH_INDEX",
    "VERSION",
    "Dump",
    "DumpBudgetExceeded",
    "DumpEntry",
    "DumpGraph",
    "DumpWriteError",
    "DumpWriter",
    "DumpedTensor",
    "StepDump",
    "budget_from_env",
    "check_dump_path",
    "config_error",
    "load_dump",
    "parse_dump_step",
    "step_selected",
]
