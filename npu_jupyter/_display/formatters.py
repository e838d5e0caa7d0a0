"""How plans and run reports reach the screen: the display layer registers itself, data never calls up.

``Plan`` and ``RunReport`` are plain data (``plan`` and ``runtime`` never import ``display``). This
module is the one entry point that makes them render: it gives them their ``str()`` text report and
registers the MIME bundle (JSON payload for the JupyterLab renderer, HTML and text fallbacks) with
IPython's display formatters by *name*, so registering imports neither the planner nor TensorFlow.
``import npu_jupyter`` calls :func:`register` once; ``%load_ext npu_jupyter`` calls it again with the
shell it is given.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from npu_jupyter._renderers import HTML_RENDERERS, TEXT_RENDERERS

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

    from npu_jupyter._plan.model import Plan
    from npu_jupyter._runtime.observe.compare import Comparison
    from npu_jupyter._runtime.report import RunReport
    from npu_jupyter._sweep import SweepTable

#: (module, class) of every object rendered as a report.
REPORT_TYPES = (("npu_jupyter._plan.model", "Plan"), ("npu_jupyter._runtime.report", "RunReport"))


def bundle(obj: Plan | RunReport, include: object = None, exclude: object = None) -> dict[str, Any]:
    """IPython's mimebundle formatter hook: the payload plus HTML and text fallbacks."""
    from npu_jupyter._display.mime import mimebundle

    return mimebundle(obj)


def text(obj: Plan | RunReport) -> str:
    """The plain-text report, at the detail level the notebook shows (one line for an iterator's initialisation)."""
    from npu_jupyter._display.brief import brief_line
    from npu_jupyter._display.html import default_detail
    from npu_jupyter._display.mime import report_payload
    from npu_jupyter._display.text import render

    line = brief_line(obj)
    return line if line is not None else render(report_payload(obj), detail=default_detail())


def comparison_html(obj: Comparison) -> str:
    """``compare()``'s result: differing tensors first, worst first, identical ones folded."""
    from npu_jupyter._display.comparison import render

    return render(obj)


def sweep_html(obj: SweepTable) -> str:
    """``sweep()``'s table, fitted to the cell width."""
    from npu_jupyter._display.sweep_view import render

    return render(obj)


def register(shell: InteractiveShell | None = None) -> None:
    """Give reports their text form, and register them with ``shell`` (default: the running IPython)."""
    if text not in TEXT_RENDERERS:
        TEXT_RENDERERS.append(text)
    HTML_RENDERERS.update(Comparison=comparison_html, SweepTable=sweep_html)
    shell = shell if shell is not None else _running_shell()
    formatter = getattr(getattr(shell, "display_formatter", None), "mimebundle_formatter", None)
    if formatter is None:
        return
    for module, name in REPORT_TYPES:
        formatter.for_type_by_name(module, name, bundle)


def _running_shell() -> InteractiveShell | None:
    """The IPython shell this process runs, if any (without importing IPython when it is not loaded)."""
    ipython = sys.modules.get("IPython")
    get = getattr(ipython, "get_ipython", None)
    return get() if get is not None else None
