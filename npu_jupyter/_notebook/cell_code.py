"""Compile and run a ``%%npu`` cell's body as IPython runs a plain cell, errors included.

A plain cell is compiled under IPython's name for it, so a traceback says ``Cell In[7], line 3`` and
shows that line; its frames are the user's only. Run naively, a ``%%npu`` cell's error showed five
frames of the magic's own code and ``Cell In[0]`` with lines counted from below the ``%%npu`` line.
Here the body is compiled under the cell's execution count with its line numbers shifted by the
``%%npu`` line, and an error leaving the user's code carries a traceback of the user's frames only
(IPython's ``_render_traceback_`` protocol, used once, so the full traceback stays in
``sys.last_traceback`` for ``%debug`` and a later ``%tb``).
"""

from __future__ import annotations

import ast
import contextlib
from types import TracebackType
from typing import TYPE_CHECKING

from IPython.core.error import UsageError

from npu_jupyter._notebook.legacy_keras import explain_keras3_error

if TYPE_CHECKING:  # pragma: no cover
    from IPython.core.interactiveshell import InteractiveShell


class CellCode:
    """A ``%%npu`` cell's body compiled as IPython compiles cells; :meth:`run` executes it."""

    def __init__(self, shell: InteractiveShell, line: str, cell: str) -> None:
        source = shell.transform_cell(cell)  # magics and ``!`` lines inside the cell work
        # what tracebacks quote: the cell as written, its %%npu line as a comment, so the text parses as
        # Python: AutoGraph converts a lambda (tf.function, Dataset.map) by parsing its whole cell
        shown = f"# %%npu {line}".rstrip() + "\n" + source
        self.shell = shell
        self.number = _cell_number(shell)
        self.filename = _cache(shell, shown, self.number)
        try:
            tree = ast.parse(source, self.filename)
        except SyntaxError as err:
            raise self._syntax_error(err) from None
        ast.increment_lineno(tree, 1)  # line 1 of the notebook cell is the %%npu line
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):  # its value is the cell's output, as usual
            last = ast.Expression(tree.body.pop().value)
        self.body = compile(tree, self.filename, "exec")
        self.expr = compile(last, self.filename, "eval") if last is not None else None

    def run(self) -> object:
        """Run the body in the user's namespace; the last expression's value is returned."""
        __tracebackhide__ = True  # IPython >= 8 hides this frame in %tb after the one-shot render
        namespace = self.shell.user_ns
        try:
            exec(self.body, namespace)  # noqa: S102 - running the user's own cell is the point
            return eval(self.expr, namespace) if self.expr is not None else None  # noqa: S307
        except (Exception, KeyboardInterrupt) as err:  # an interrupted cell shows where it was, too
            explain_keras3_error(err)
            self._show_user_frames(err)
            raise

    def _show_user_frames(self, err: BaseException) -> None:
        """Make IPython show ``err`` from the cell's first frame down, as for a plain cell."""
        user_tb = _from_file(err.__traceback__, self.filename)
        formatter = getattr(self.shell, "InteractiveTB", None)
        if user_tb is not None and formatter is not None:
            _render_once(err, formatter.structured_traceback(type(err), err, user_tb, tb_offset=0))

    def _syntax_error(self, err: SyntaxError) -> UsageError:
        """A syntax error as IPython shows one in a plain cell: where, the line, a caret, no frames.

        IPython shows a SyntaxError raised while code runs with the frames that raised it (here: the
        magic's own), so the cell's refusal is a UsageError carrying that text, like every other
        reason a ``%%npu`` cell does not run.
        """
        lineno = (err.lineno or 0) + 1  # counted in the notebook cell, whose line 1 is %%npu
        text = (err.text or "").rstrip("\n")
        stripped = text.lstrip()
        lines = [f"Cell In[{self.number}], line {lineno}"]
        if stripped:
            lines.append("    " + stripped)
            if err.offset:
                column = max(err.offset - 1 - (len(text) - len(stripped)), 0)
                lines.append("    " + " " * column + "^")
        lines.append(f"{type(err).__name__}: {err.msg}")
        return UsageError("\n".join(lines) + "\nThe cell was not run.")


def _render_once(err: BaseException, stb: list[str]) -> None:
    """Have IPython show ``stb`` for ``err`` the next time it shows ``err`` (``_render_traceback_``)."""

    def render_once() -> list[str]:
        with contextlib.suppress(AttributeError):
            del err._render_traceback_  # type: ignore[attr-defined]  # set just below
        return list(stb)

    with contextlib.suppress(AttributeError, TypeError):  # an exception class with __slots__
        err._render_traceback_ = render_once  # type: ignore[attr-defined]  # IPython's protocol


def _cache(shell: InteractiveShell, text: str, number: int) -> str:
    """IPython's name for ``text`` as cell ``number`` (``Cell In[N]``), with the source in linecache."""
    cache = getattr(getattr(shell, "compile", None), "cache", None)
    return "<%%npu>" if cache is None else str(cache(text, number))


def _cell_number(shell: InteractiveShell) -> int:
    """The running cell's execution count.

    The running cell's number: IPython 9 counts up before running a cell, 7 and 8 after; the display
    # hook's prompt_count (the number Out[N] gets) is the running cell's number in all of them.
    """
    number = getattr(getattr(shell, "displayhook", None), "prompt_count", None)
    return number if isinstance(number, int) else int(shell.execution_count)


def _from_file(tb: TracebackType | None, filename: str) -> TracebackType | None:
    """The traceback from its first frame in ``filename`` (the cell) on, or None if it never got there."""
    while tb is not None and tb.tb_frame.f_code.co_filename != filename:
        tb = tb.tb_next
    return tb
