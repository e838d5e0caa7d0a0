"""Where the zoo's tasks run: a local pool of task processes, or Ray tasks on a cluster.

Neither is a scheduler of our own. Locally, ``concurrent.futures`` runs ``workers`` tasks at a time,
each in its own fresh Python process (:func:`npu_jupyter._zoo_check.isolate.run_isolated`). With Ray, each
task is one Ray task (``num_cpus=1``, no retries) running that same function on whichever node Ray
picks, so a row is the same wherever it was made. Rows come back to the caller's thread as tasks
finish, which writes them to the results file one at a time.
"""

from __future__ import annotations

import os
import sys
import types
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any, Callable, Dict

ENGINES = ("local", "ray")

# typing.Dict: this alias is evaluated at import time, and the package imports on Python 3.7.
OnRow = Callable[[Dict[str, Any]], None]


def run_local(tasks: list[dict[str, Any]], timeout: float, workers: int | None, on_row: OnRow) -> None:
    """Run ``tasks`` ``workers`` at a time (default: one per CPU core), each in its own process."""
    from npu_jupyter._zoo_check.isolate import run_isolated

    if not tasks:
        return
    count = workers or os.cpu_count() or 1
    path = list(sys.path)
    with ThreadPoolExecutor(max_workers=min(count, len(tasks)), thread_name_prefix="npu-zoo") as pool:
        futures = [pool.submit(run_isolated, task, timeout, path) for task in tasks]
        try:
            for future in as_completed(futures):
                on_row(future.result())
        except BaseException:  # an interrupt (or a failed write): start no more tasks; running ones end
            for future in futures:
                future.cancel()
            raise


def run_ray(tasks: list[dict[str, Any]], timeout: float, address: str | None, on_row: OnRow) -> None:
    """Run each task as a Ray task; connect to ``address`` (or the running/ambient Ray) when needed.

    A Ray instance this call starts (no ``ray.init`` before it, no address) is shut down at the end;
    one the caller started or connected to is left running.
    """
    ray = _import_ray()
    from npu_jupyter._zoo_check.isolate import run_isolated

    started = False
    if not ray.is_initialized():
        if address is None and not os.environ.get("RAY_ADDRESS"):
            ray.init(include_dashboard=False, log_to_driver=False)  # a local Ray for this call only
        else:
            ray.init(address=address, log_to_driver=False)  # a cluster's own settings are its own
        started = True
    try:
        remote = ray.remote(num_cpus=1, max_retries=0)(run_isolated)
        path = list(sys.path)
        pending = [remote.remote(task, timeout, path) for task in tasks]
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            on_row(ray.get(done[0]))
    finally:
        if started:
            ray.shutdown()


def _import_ray() -> types.ModuleType:
    """Ray, or one clear error saying how to get it."""
    try:
        import ray
    except ImportError:
        raise ImportError(
            "engine='ray' needs Ray: pip install 'npu_jupyter[ray]' (or pip install ray) in this environment "
            "and on every node of the cluster"
        ) from None
    return ray
