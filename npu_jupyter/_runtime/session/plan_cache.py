"""``graph_compiler_cache_dir`` emulated: plans cached on disk, keyed by graph, config and fetches.

On a device this option caches compiled graphs so a re-run skips compilation. The emulator's costly
compile step is planning, so a plan is stored under the directory and reused when the same graph
(byte-identical GraphDef) is planned with the same config and fetches.

The files are data only: JSON of the :class:`~npu_jupyter._plan.model.Plan` dataclasses
(``npu_jupyter_plan_<sha256>.json``), never pickle, because unpickling a file someone else could write
runs their code. Reading rebuilds the dataclasses field by field; a file that is not valid JSON, not
ours, of another version or not shaped like a plan is ignored with a warning and the plan is recomputed
(and the file rewritten). Files are written atomically (``write_atomic``). A plan that would not come
back identical from JSON (a field holding something JSON cannot say) is simply not cached.
Older ``.pkl`` entries from earlier versions are never opened.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import warnings
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from npu_jupyter._plan.model import Plan
    from npu_jupyter._tf_types import Graph

_PREFIX = "npu_jupyter_plan_"
FORMAT = "npu-jupyter.plan"
VERSION = (
    3  # 2: OpDecision.declared_input_dtypes (input-only lowering counts as a precision change); 3: producer_dtypes
)


class PlanCacheError(ValueError):
    """A cache file that is not a plan this version wrote."""


def cache_key(graph: Graph, config_snapshot: str, fetches: tuple[object, ...] | None) -> str:
    """sha256 of the serialized GraphDef, the config snapshot and the fetch names."""
    digest = hashlib.sha256()
    digest.update(graph.as_graph_def().SerializeToString(deterministic=True))
    digest.update(b"\0" + config_snapshot.encode())
    digest.update(b"\0" + repr(fetches).encode())
    return digest.hexdigest()


def plan_to_json(plan: Plan) -> str:
    """The plan as JSON text: every dataclass field, nested OpDecision/Subgraph/Transfer as objects."""
    body = {f.name: _plain(getattr(plan, f.name)) for f in dataclasses.fields(plan)}
    return json.dumps({"format": FORMAT, "version": VERSION, "plan": body})  # key order kept: ops are topological


def plan_from_json(text: str) -> Plan:
    """Rebuild a Plan from :func:`plan_to_json` text; PlanCacheError when it is not one.

    Only known fields are read (unknown keys are dropped, missing ones take their defaults), and every
    value is plain data, so reading a file can never run code.
    """
    from npu_jupyter._plan.model import OpDecision, Plan, Subgraph, Transfer

    try:
        doc = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise PlanCacheError(f"not JSON ({exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or doc.get("version") != VERSION:
        raise PlanCacheError(f"not a {FORMAT} version {VERSION} file")
    body = doc.get("plan")
    if not isinstance(body, dict) or not isinstance(body.get("ops"), dict):
        raise PlanCacheError("no plan object with ops")
    try:
        fields = _known(Plan, body)
        fields["ops"] = {name: OpDecision(**_known(OpDecision, d)) for name, d in body["ops"].items()}
        fields["subgraphs"] = [Subgraph(**_known(Subgraph, d)) for d in body.get("subgraphs", [])]
        fields["transfers"] = [Transfer(**_known(Transfer, d)) for d in body.get("transfers", [])]
        return Plan(**fields)
    except (TypeError, AttributeError) as exc:
        raise PlanCacheError(f"not shaped like a plan ({exc})") from None


def cached_plan(
    cache_dir: str, graph: Graph, config_snapshot: str, fetches: tuple[object, ...] | None, compute: Callable[[], Plan]
) -> Plan:
    """The cached plan for this graph/config/fetches, computing and storing it on a miss."""
    path = os.path.join(cache_dir, f"{_PREFIX}{cache_key(graph, config_snapshot, fetches)}.json")
    try:
        with open(path, encoding="utf-8") as handle:
            return plan_from_json(handle.read())
    except FileNotFoundError:
        pass
    except (OSError, UnicodeDecodeError, PlanCacheError) as exc:
        warnings.warn(
            f"graph_compiler_cache_dir: ignoring unreadable plan cache file {path} "
            f"({exc}); planning again and rewriting it",
            RuntimeWarning,
            stacklevel=3,
        )
    plan = compute()
    _store(path, plan)
    return plan


def _store(path: str, plan: Plan) -> None:
    """Write the plan atomically, only if it comes back from JSON equal to itself."""
    from npu_jupyter._options.storage import write_atomic

    try:
        text = plan_to_json(plan)
        again = plan_from_json(text)
        if again != plan or list(again.ops) != list(plan.ops):
            return
    except (TypeError, ValueError):
        return  # a field JSON cannot hold: not cached, planned again next time
    write_atomic(path, text)


def _plain(value: object) -> object:
    """Dataclasses -> dicts; lists and dicts walked; everything else left for json to accept or refuse."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _known(cls: type, data: object) -> dict[str, Any]:
    """The entries of ``data`` that are fields of ``cls``."""
    if not isinstance(data, dict):
        raise PlanCacheError(f"{cls.__name__} entry is not an object")
    names = {f.name for f in dataclasses.fields(cls)}
    return {k: v for k, v in data.items() if k in names}
