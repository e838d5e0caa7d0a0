"""Keep TensorFlow's C++ log lines out of a ``%%npu`` cell's output.

TensorFlow's C++ runtime logs straight to file descriptor 2 (``profiler_session.cc ... Profiler session
started``, ``cuInit`` probes on a machine without a GPU, oneDNN notices). A Jupyter kernel forwards
that descriptor into the cell's output, so a profiled cell filled with pink lines that are not about
the user's code. Around the cell, descriptor 2 points at a temporary file instead; Python's own
``sys.stderr`` (warnings, tracebacks) is not that descriptor in a kernel and is left alone. The lines
are kept in :data:`last_log` for whoever wants them, and ``--verbose`` lets them through.

Plain cells get the same treatment until TensorFlow has started (:class:`QuietStartup`): the first cell
that imports TensorFlow of every notebook showed a pink block of absl, oneDNN and CUDA-probe lines
(``failed call to cuInit``), which ``TF_CPP_MIN_LOG_LEVEL=2`` does not hide (the probe logs an error).

In a terminal IPython, ``sys.stderr`` *is* descriptor 2: there Python's own writers (``sys.stderr``,
and the logging handlers writing to it, absl's included) are pointed at the saved descriptor for the
block, so warnings, logging and prints to stderr still show, as they do in a kernel.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import tempfile
from types import ModuleType
from typing import TYPE_CHECKING, Any, Callable, Iterator, TextIO

if TYPE_CHECKING:  # pragma: no cover
    from IPython.core.interactiveshell import InteractiveShell

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
            with _python_stderr_kept(saved):
                yield
        finally:
            _flush_python_stderr()
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            last_log = sink.read().decode("utf-8", "replace")


@contextlib.contextmanager
def _python_stderr_kept(saved: int) -> Iterator[None]:
    """Python's writers on descriptor 2 write to ``saved`` (where it pointed) while the block runs.

    Only where ``sys.stderr`` is descriptor 2 (a terminal IPython; a kernel's is its own stream): a
    trial ran a ModelZoo script in such a ``%%npu`` cell and its warnings and ``logging`` lines vanished
    into the sink with TensorFlow's C++ lines. Handlers made before the cell hold the stream object
    itself, so those writing to ``sys.stderr`` are repointed too, and put back after.
    """
    original = sys.stderr
    if _descriptor(original) != 2:
        yield
        return
    kept = _KeptStderr(original, saved)
    handlers = [h for h in _stream_handlers() if h.stream is original]
    sys.stderr = kept
    for handler in handlers:
        handler.setStream(kept)
    try:
        yield
    finally:
        for handler in handlers:
            if handler.stream is kept:
                handler.setStream(original)
        if sys.stderr is kept:
            sys.stderr = original
        kept.release()


class _KeptStderr:
    """``sys.stderr`` during a quiet block in a terminal: writes go where descriptor 2 pointed before.

    What takes it during the block (a handler ``logging.basicConfig()`` makes in the cell, a progress
    bar) keeps it after; once released it writes to the stream it stood in for, never to a closed file.
    """

    def __init__(self, original: TextIO, saved: int) -> None:
        encoding = getattr(original, "encoding", None) or "utf-8"
        self._original = original
        self._kept: TextIO | None = open(os.dup(saved), "w", encoding=encoding, errors="backslashreplace", buffering=1)  # noqa: SIM115

    def _target(self) -> TextIO:
        return self._kept if self._kept is not None else self._original

    def write(self, text: str) -> int:
        """Write to the saved descriptor during the block, to the original stream after it."""
        return self._target().write(text)

    def flush(self) -> None:
        """Flush whichever stream the writes go to now."""
        self._target().flush()

    def release(self) -> None:
        """From now on write to the original stream; close the copy of the saved descriptor."""
        kept, self._kept = self._kept, None
        if kept is not None:
            kept.close()

    def __getattr__(self, name: str) -> Any:  # noqa: ANN401 - encoding, isatty, fileno: the target's
        return getattr(self._target(), name)


def _descriptor(stream: object) -> int | None:
    """The file descriptor a text stream writes to, or None (a kernel's stream, a StringIO)."""
    try:
        return int(stream.fileno())  # type: ignore[attr-defined]
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is an OSError and a ValueError
        return None


def _stream_handlers() -> list[logging.StreamHandler]:  # type: ignore[type-arg]
    """Every logging StreamHandler attached to a logger (absl's, behind TensorFlow's logging, included)."""
    loggers = [
        logging.getLogger(),
        *(
            v for v in list(logging.Logger.manager.loggerDict.values()) if isinstance(v, logging.Logger)
        ),  # a copy: another thread may add a logger
    ]
    absl = sys.modules.get("absl.logging")  # absl's handler joins the root logger later, in app.run()
    extra = [absl.get_absl_handler()] if absl is not None and hasattr(absl, "get_absl_handler") else []
    found: list[logging.StreamHandler] = []  # type: ignore[type-arg]
    for handler_list in (*(logger.handlers for logger in loggers), extra):
        for handler in handler_list:
            for h in (handler, getattr(handler, "python_handler", None)):  # absl keeps its stream handler inside
                if isinstance(h, logging.StreamHandler) and h not in found:
                    found.append(h)
    return found


def _flush_python_stderr() -> None:
    """Text Python buffered for descriptor 2 goes where it was meant to go, not into the sink."""
    for stream in (sys.stderr, sys.__stderr__):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            pass


class QuietStartup:
    """Quiet plain cells (IPython's pre/post_run_cell events) until the cell in which TensorFlow started.

    TensorFlow logs its start-up lines when it is imported and when it first probes for devices (the
    CUDA probe); the probe is made at the end of that cell, still quiet, so a later cell's first session
    does not print it. ``verbose()`` true (``%config NpuMagics.verbose = True``) lets the lines through.
    Until then whatever native code writes to descriptor 2 in a plain cell goes to :data:`last_log`.
    Nothing is registered when TensorFlow was imported before the extension loaded: its lines are out.
    """

    def __init__(self, shell: InteractiveShell, verbose: Callable[[], bool]) -> None:
        self.shell = shell
        self.verbose = verbose
        self._quiet: contextlib.ExitStack | None = None
        self.registered = False

    def register(self) -> None:
        """Start quieting cells, unless TensorFlow has started already."""
        if "tensorflow" in sys.modules or self.registered:
            return
        self.shell.events.register("pre_run_cell", self.before)
        self.shell.events.register("post_run_cell", self.after)
        self.registered = True
        if _inside_a_cell(self.shell):  # `%load_ext npu_jupyter` and `import tensorflow` in one cell
            self.before()

    def unregister(self) -> None:
        """Stop quieting cells (TensorFlow started, or the extension is unloaded)."""
        if not self.registered:
            return
        self.registered = False
        for event, callback in (("pre_run_cell", self.before), ("post_run_cell", self.after)):
            with contextlib.suppress(ValueError):
                self.shell.events.unregister(event, callback)

    def before(self, *_: object) -> None:
        """Descriptor 2 to the sink for this cell (IPython 7 passes no argument, 8+ the cell's info)."""
        if self.verbose() or self._quiet is not None:
            return
        stack = contextlib.ExitStack()
        stack.enter_context(quiet_tensorflow())
        self._quiet = stack

    def after(self, *_: object) -> None:
        """Back to normal; once TensorFlow is imported, probe its devices quietly and stop."""
        stack, self._quiet = self._quiet, None
        try:
            if "tensorflow" in sys.modules:
                _probe_devices(sys.modules["tensorflow"])
                self.unregister()
        finally:
            if stack is not None:
                stack.close()


def _inside_a_cell(shell: InteractiveShell) -> bool:
    """Whether a cell is running (IPython enters its display trap around a cell's code only, not
    around a magic called from Python or an extension loaded at kernel start).
    """
    trap = getattr(shell, "display_trap", None)
    active = getattr(trap, "is_active", None)  # IPython 8+; IPython 7 has only the counter behind it
    if active is None:
        active = getattr(trap, "_nested_level", 0) != 0
    return bool(active)


def _probe_devices(tf: ModuleType) -> None:
    """List the physical devices now, so TensorFlow's one-time CUDA probe logs into the quiet cell."""
    with contextlib.suppress(Exception):  # a TensorFlow whose import failed half-way: nothing to probe
        tf.config.list_physical_devices()
