"""``graph_compiler_cache_dir`` emulated: plans cached on disk, keyed by graph, config and fetches.

On a device this option caches compiled graphs so a re-run skips compilation. The emulator's costly
compile step is planning, so a plan is pickled under the directory and reused when the same graph
(byte-identical GraphDef) is planned with the same config and fetches. Files are written atomically;
an unreadable or stale entry is recomputed, never trusted.
"""

from __future__ import annotations

import hashlib
import os
import pickle
from typing import Any, Callable

_PREFIX = "npu_jupyter_plan_"


def cache_key(graph: Any, config_snapshot: str, fetches: tuple | None) -> str:
    """sha256 of the serialized GraphDef, the config snapshot and the fetch names."""
    digest = hashlib.sha256()
    digest.update(graph.as_graph_def().SerializeToString(deterministic=True))
    digest.update(b"\0" + config_snapshot.encode())
    digest.update(b"\0" + repr(fetches).encode())
    return digest.hexdigest()


def cached_plan(cache_dir: str, graph: Any, config_snapshot: str, fetches: tuple | None,
                compute: Callable[[], Any]) -> Any:
    """The cached plan for this graph/config/fetches, computing and storing it on a miss."""
    path = os.path.join(cache_dir, f"{_PREFIX}{cache_key(graph, config_snapshot, fetches)}.pkl")
    try:
        with open(path, "rb") as handle:
            return pickle.load(handle)
    except FileNotFoundError:
        pass
    except Exception:  # noqa: BLE001 - a corrupt entry is recomputed, not fatal
        pass
    plan = compute()
    from npu_jupyter.options.storage import write_atomic

    write_atomic(path, pickle.dumps(plan, protocol=pickle.HIGHEST_PROTOCOL))
    return plan
