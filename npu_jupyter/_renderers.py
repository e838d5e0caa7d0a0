"""The one hook between data and display: the text renderer the display layer registers.

``Plan`` and ``RunReport`` call :func:`render_text` for ``str()``; ``npu_jupyter.display.formatters``
appends its renderer here when ``npu_jupyter`` is imported. Data modules thus never import the display
layer, and importing the package does not import the planner.
"""

from __future__ import annotations

from typing import Any, Callable

TEXT_RENDERERS: list[Callable[[Any], str]] = []


def render_text(obj: Any) -> str:
    """The registered text report of ``obj``, or a short placeholder before any renderer registered."""
    if TEXT_RENDERERS:
        return TEXT_RENDERERS[-1](obj)
    return f"<{type(obj).__name__}: import npu_jupyter.display.formatters to render it>"
