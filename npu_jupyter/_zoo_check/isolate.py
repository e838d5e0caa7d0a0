"""Run one zoo task in a fresh Python process with a time limit, and read its row back.

Why a fresh interpreter per task (``python -m npu_jupyter._zoo_check.isolate``, spawn semantics, never a fork
of a process that already imported TensorFlow): each task gets its own TensorFlow state (default graph,
seeds, thread pools, memory), a task that hangs or crashes takes only its own process down, and the
time limit is enforced by killing that process. The parent hands the task over as JSON on stdin and the
child writes its row to a file (the entry's own prints go to the captured output, not into the row).
The same function runs inside a local thread pool and inside a Ray task, so both give the same rows.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

#: Lines of the task's captured output kept in the row when its process fails without a row.
TAIL_LINES = 12


def run_isolated(task: dict[str, Any], timeout: float, python_path: list[str] | None = None) -> dict[str, Any]:
    """The row of ``task`` (``entry``, ``options``, ``steps``, ``reference``), run in its own process.

    ``python_path`` is the caller's ``sys.path`` (the child must import the same ``npu_jupyter`` and
    find the same scripts); a task that outlives ``timeout`` seconds is killed and gets a ``timeout`` row.
    """
    from npu_jupyter._zoo_check.task import empty_row

    with tempfile.TemporaryDirectory(prefix="npu-zoo-") as work:
        out = Path(work) / "row.json"
        log = Path(work) / "output.txt"
        spec = dict(task, row_file=str(out))
        started = time.perf_counter()
        with open(log, "wb") as output:
            process = subprocess.Popen(  # our own interpreter and module, no shell
                [sys.executable, "-m", "npu_jupyter._zoo_check.isolate"],
                stdin=subprocess.PIPE,
                stdout=output,
                stderr=subprocess.STDOUT,
                env=_child_env(python_path),
            )
            try:
                process.communicate(json.dumps(spec).encode("utf-8"), timeout=timeout)
                timed_out = False
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
                timed_out = True
        elapsed = time.perf_counter() - started
        if out.is_file() and not timed_out:
            row: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
        else:
            row = empty_row(task["entry"], task["options"], task["steps"])
            row["status"] = "timeout" if timed_out else "error"
            row["error"] = (
                f"the task ran longer than its time limit of {timeout:g} s and was stopped"
                if timed_out
                else f"the task's process ended (exit code {process.returncode}) without a result"
            )
            row["traceback"] = _tail(log)
        row["task_s"] = elapsed
        return row


def _child_env(python_path: list[str] | None) -> dict[str, str]:
    """The environment of the task process: ours, with the caller's import path and TF's C++ logs quiet."""
    env = dict(os.environ)
    paths = [p for p in (python_path if python_path is not None else sys.path) if p and os.path.isdir(p)]
    if paths:
        env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    return env


def _tail(log: Path) -> str:
    """The last lines the task printed (its traceback when Python itself failed)."""
    try:
        lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(lines[-TAIL_LINES:])


def main() -> None:
    """The task process: read the task from stdin, run it, write its row (JSON) where it was asked."""
    started = time.perf_counter()
    from npu_jupyter._options.storage import write_atomic
    from npu_jupyter._zoo_check.task import run_task

    spec = json.loads(sys.stdin.read())
    row = run_task(spec["entry"], spec["options"], spec["steps"], spec.get("reference", True), started)
    write_atomic(spec["row_file"], json.dumps(row, allow_nan=True))


if __name__ == "__main__":
    main()
