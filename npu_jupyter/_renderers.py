"""The one hook between data and display: the renderers the display layer registers.

``Plan`` and ``RunReport`` call :func:`render_text` for ``str()``; ``Comparison`` and ``SweepTable``
call :func:`render_html` for ``_repr_html_``. ``npu_jupyter._display.formatters`` registers its
renderers here when ``npu_jupyter`` is imported. Data modules thus never import the display layer,
and importing the package does not import the planner.
"""

from __future__ import annotations

from typing import Any, Callable

TEXT_RENDERERS: list[Callable[[Any], str]] = []
#: HTML renderers by class name (``"Comparison"``): the display layer fills this.
HTML_RENDERERS: dict[str, Callable[[Any], str]] = {}


def render_text(obj: object) -> str:
    """The registered text report of ``obj``, or a short placeholder before any renderer registered."""
    if TEXT_RENDERERS:
        return TEXT_RENDERERS[-1](obj)
    return f"<{type(obj).__name__}: import npu_jupyter._display.formatters to render it>"


def render_html(obj: object) -> str | None:
    """The registered HTML of ``obj``; None (IPython then shows the text form) before registration."""
    renderer = HTML_RENDERERS.get(type(obj).__name__)
    return renderer(obj) if renderer is not None else None
