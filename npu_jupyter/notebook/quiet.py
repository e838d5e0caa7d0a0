"""Keep TensorFlow's C++ log lines out of a ``%%npu`` cell's output.

TensorFlow's C++ runtime logs straight to file descriptor 2 (``profiler_session.cc ... Profiler session
started``, ``cuInit`` probes on a machine without a GPU, oneDNN notices). A Jupyter kernel forwards
that descriptor into the cell's output, so a profiled cell filled with pink lines that are not about
the user's code. Around the cell, descriptor 2 points at a temporary file instead; Python's own
``sys.stderr`` (warnings, tracebacks) is not that descriptor in a kernel and is left alone. The lines
are kept in :data:`last_log` for whoever wants them, and ``--verbose`` lets them through.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from typing import Iterator

last_log = ""  # what the last quiet cell's C++ code wrote to descriptor 2


@contextlib.contextmanager
def quiet_tensorflow(enabled: bool = True) -> Iterator[None]:
    """Send descriptor 2 to a temporary file while the block runs (nothing changes when disabled).

    ``TF_CPP_MIN_LOG_LEVEL`` is also set (when the user has not set it) so a TensorFlow imported for the
    first time inside the cell starts at the same level; it only takes effect before that import.
    """
    global last_log
    if not enabled:
        yield
        return
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    _flush_python_stderr()
    try:
        saved = os.dup(2)
    except OSError:  # no descriptor 2 (some embedded interpreters): nothing to silence
        yield
        return
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield
        finally:
            _flush_python_stderr()
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            last_log = sink.read().decode("utf-8", "replace")


def _flush_python_stderr() -> None:
    """Text Python buffered for descriptor 2 goes where it was meant to go, not into the sink."""
    for stream in (sys.stderr, sys.__stderr__):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            pass
