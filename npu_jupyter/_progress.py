"""Progress of long work (a precision sweep) in the notebook, and nowhere else.

A bar appears only in a kernel with a frontend (ipywidgets' ``IntProgress`` in an IPython ZMQ kernel),
only once the work has run for ``NPU_JUPYTER_PROGRESS_AFTER`` seconds (2 by default, so quick cells
and executed tutorials show none), and is closed when the work ends, so it leaves nothing behind. In
a terminal, a plain-text log or with ``NPU_JUPYTER_PROGRESS=0`` nothing is printed at all.
"""

from __future__ import annotations

import contextlib
import os
import time
from typing import TYPE_CHECKING, Any, Iterator

if TYPE_CHECKING:
    from typing import Protocol  # novermin - 3.8+; only the type checker reads this block

    class _Box(Protocol):
        """The shown ipywidgets HBox (ipywidgets ships no types): its bar and label, and closing it."""

        @property
        def children(self) -> tuple[Any, ...]: ...  # (IntProgress, Label), untyped ipywidgets
        def close(self) -> None: ...


DELAY_ENV = "NPU_JUPYTER_PROGRESS_AFTER"
SWITCH_ENV = "NPU_JUPYTER_PROGRESS"


class Progress:
    """A bar that shows itself late and closes itself; every method is cheap when it never shows."""

    def __init__(self, total: int, title: str, enabled: bool, delay: float) -> None:
        self.total = total
        self.title = title
        self.enabled = enabled
        self.delay = delay
        self.done = 0
        self.detail = ""
        self.started = time.monotonic()
        self.widget: _Box | None = None
        self.shown = 0  # how many bars were displayed (tests read it)

    def describe(self, detail: str) -> None:
        """Name the item being worked on (the sweep's current mode)."""
        self.detail = detail
        self._refresh()

    def advance(self, count: int = 1) -> None:
        """Count ``count`` more units done and redraw."""
        self.done += count
        self._refresh()

    def close(self) -> None:
        """Remove the bar (no-op when none was shown)."""
        if self.widget is not None:
            self.widget.close()
            self.widget = None

    def _refresh(self) -> None:
        if not self.enabled:
            return
        if self.widget is None:
            if time.monotonic() - self.started < self.delay:
                return
            self.widget = self._show()
        bar, label = self.widget.children
        bar.value = self.done
        label.value = f"{self.title}: {self.done}/{self.total} {self.detail}".rstrip()

    def _show(self) -> _Box:
        import ipywidgets
        from IPython.display import display

        bar = ipywidgets.IntProgress(min=0, max=max(self.total, 1), value=self.done)
        box: _Box = ipywidgets.HBox([bar, ipywidgets.Label("")])
        display(box)
        self.shown += 1
        return box


def in_notebook_frontend() -> bool:
    """True in a Jupyter kernel (a ZMQ shell), where a widget has somewhere to render."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython is a dependency
        return False
    shell = get_ipython()
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


@contextlib.contextmanager
def progress_bar(
    total: int, title: str, *, enabled: bool | None = None, delay: float | None = None
) -> Iterator[Progress]:
    """A :class:`Progress` for ``total`` items, closed on exit (also when the work raises)."""
    if enabled is None:
        enabled = in_notebook_frontend() and os.environ.get(SWITCH_ENV, "1") != "0"
    if delay is None:
        try:
            delay = float(os.environ.get(DELAY_ENV, "2"))
        except ValueError:
            delay = 2.0
    bar = Progress(total, title, enabled, delay)
    try:
        yield bar
    finally:
        bar.close()
