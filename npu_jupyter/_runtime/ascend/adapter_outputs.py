"""What the real adapter wrote and what GE really decided, for reports of the ``ascend`` backend.

On the device the planner's placement and precision are a *prediction*: the adapter and the graph
engine decide. A report therefore says so, lists where the adapter's own outputs go (data dump and
overflow dump under ``dump_path``, profiling under ``profiling_options.output``, GE graph dumps under
``DUMP_GRAPH_PATH`` when ``DUMP_GE_GRAPH`` is on), and — when GE graph dumps from this session exist —
sets the actual engine and dtypes of each op next to the prediction (:mod:`npu_jupyter._runtime.ascend.ge_dump`).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Mapping

from npu_jupyter._options.profiling import ProfilingText, lenient_profiling_fields

if TYPE_CHECKING:
    from npu_jupyter._options.config import ConfigSource
    from npu_jupyter._plan.model import Plan
    from npu_jupyter._runtime.ascend.ge_dump import GeGraph

PREDICTION_NOTE = (
    "Placement and precision shown are the planner's prediction of what the adapter decides; the Ascend "
    "adapter and graph engine made the real decisions on the device. The run's time is the wall-clock time "
    "of session.run measured on the host while the device ran the graph, not a device kernel time: per-op "
    "device times are in the adapter's profiling output. The adapter's own outputs are listed below."
)


def output_locations(config: ConfigSource, environ: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """[{"label", "path", "exists"}] for each output the config makes the adapter write."""
    from npu_jupyter._runtime.ascend.ge_dump import dump_directory

    values: dict[str, Any] = (
        dict(config or {}) if config is None or isinstance(config, Mapping) else dict(config.changed())
    )
    places = []
    if values.get("enable_dump") and values.get("dump_path"):
        places.append(("Data dump (adapter)", values["dump_path"]))
    if values.get("enable_dump_debug") and values.get("dump_path"):
        places.append(("Overflow dump (adapter)", values["dump_path"]))
    if values.get("profiling_mode"):
        output = _profiling_output(values.get("profiling_options"))
        places.append(
            (
                "Profiling output (adapter)",
                output or "(profiling_options has no 'output': the adapter's default folder)",
            )
        )
    ge_dir = dump_directory(environ)
    if ge_dir is not None:
        places.append(("GE graph dumps (ge_proto_*.txt)", ge_dir))
    seen = set()
    result = []
    for label, path in places:
        if (label, path) in seen:
            continue
        seen.add((label, path))
        result.append({"label": label, "path": str(path), "exists": os.path.isdir(str(path))})
    return result


def _profiling_output(options: ProfilingText) -> str | None:
    """The ``output`` folder of a profiling_options value, or None (unset, or not a JSON object)."""
    output = lenient_profiling_fields(options).get("output")
    return str(output) if output else None


def actual_decisions(plan: Plan, since: float, environ: dict[str, str] | None = None) -> dict[str, Any] | None:
    """{"files", "rows", "missing", "error"} from GE's Build-stage dumps written since ``since``; None when off."""
    from npu_jupyter._runtime.ascend import ge_dump

    directory = ge_dump.dump_directory(environ)
    if directory is None:
        return None
    files = ge_dump.build_dumps(directory, since=since)
    if not files:
        return {"files": [], "rows": [], "missing": 0, "error": None}
    graphs: list[GeGraph] = []
    try:
        for path in files:
            graphs.extend(_read_cached(path))
    except (OSError, ge_dump.GeDumpError) as err:
        return {"files": files, "rows": [], "missing": 0, "error": f"could not read the GE graph dump: {err}"}
    return {
        "files": files,
        "rows": ge_dump.compare(plan, graphs),
        "missing": len(ge_dump.missing_from_dumps(plan, graphs)),
        "error": None,
    }


_READ: dict[tuple[str, int, float], list[GeGraph]] = {}


def _read_cached(path: str) -> list[GeGraph]:
    """A dump is read once per (path, size, mtime): every new report of a session looks at the same files."""
    from npu_jupyter._runtime.ascend import ge_dump

    stat = os.stat(path)
    key = (path, stat.st_size, stat.st_mtime)
    if key not in _READ:
        if len(_READ) >= 8:
            _READ.pop(next(iter(_READ)))
        _READ[key] = ge_dump.read_ge_dump(path)
    return _READ[key]
