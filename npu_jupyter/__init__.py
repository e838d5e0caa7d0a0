"""npu_jupyter: Ascend NPU session configuration, placement and precision reports in Jupyter.

Importing this package is cheap: TensorFlow, ipywidgets and the planner load on first use of a name
that needs them (PEP 562 ``__getattr__``), so ``%load_ext npu_jupyter`` stays fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # what the lazy names below resolve to, for editors and type checkers
    from IPython.core.interactiveshell import InteractiveShell

    from npu_jupyter import scope as scope
    from npu_jupyter._notebook.panel import panel as panel
    from npu_jupyter._notebook.state import current_config as current_config
    from npu_jupyter._notebook.state import last_reports as last_reports
    from npu_jupyter._options.config import NpuConfig as NpuConfig
    from npu_jupyter._options.errors import NpuConfigError as NpuConfigError
    from npu_jupyter._plan.model import Plan as Plan
    from npu_jupyter._plan.planner import plan as plan
    from npu_jupyter._runtime.backends import session as session
    from npu_jupyter._runtime.observe.compare import compare as compare
    from npu_jupyter._runtime.observe.dump import load_dump as load_dump
    from npu_jupyter._runtime.report import RunReport as RunReport
    from npu_jupyter._sweep import sweep as sweep
    from npu_jupyter._zoo_check.check import zoo as zoo
    from npu_jupyter.adapter.install import emulate_adapter as emulate_adapter
    from npu_jupyter.cost.roofline import estimate as estimate

__version__ = "0.1.0"

# public name -> "module:attribute"
_LAZY = {
    "NpuConfig": "npu_jupyter._options.config:NpuConfig",
    "NpuConfigError": "npu_jupyter._options.errors:NpuConfigError",
    "plan": "npu_jupyter._plan.planner:plan",
    "Plan": "npu_jupyter._plan.model:Plan",
    "session": "npu_jupyter._runtime.backends:session",
    "RunReport": "npu_jupyter._runtime.report:RunReport",
    "load_dump": "npu_jupyter._runtime.observe.dump:load_dump",
    "compare": "npu_jupyter._runtime.observe.compare:compare",
    "sweep": "npu_jupyter._sweep:sweep",
    "zoo": "npu_jupyter._zoo_check.check:zoo",
    "estimate": "npu_jupyter.cost.roofline:estimate",
    "panel": "npu_jupyter._notebook.panel:panel",
    "current_config": "npu_jupyter._notebook.state:current_config",
    "last_reports": "npu_jupyter._notebook.state:last_reports",
    "scope": "npu_jupyter.scope",
    "emulate_adapter": "npu_jupyter.adapter.install:emulate_adapter",
}

__all__ = [*sorted(_LAZY), "load_ipython_extension", "unload_ipython_extension"]  # noqa: PLE0604 - the lazy table's keys are the public names


def __getattr__(name: str) -> object:
    """The public name's object, imported on first use (type checkers see it through the imports above)."""
    target = _LAZY.get(name)
    if target is None:
        raise AttributeError(f"module 'npu_jupyter' has no attribute {name!r}")
    module_name, _, attr = target.partition(":")
    module = importlib.import_module(module_name)
    value = getattr(module, attr) if attr else module
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


def load_ipython_extension(ipython: InteractiveShell) -> None:
    """``%load_ext npu_jupyter``: register ``%npu`` / ``%%npu`` (TensorFlow is not imported)."""
    from npu_jupyter._notebook.magics import load_ipython_extension as _load

    _formatters.register(ipython)
    _load(ipython)


def unload_ipython_extension(ipython: InteractiveShell) -> None:
    """Remove the magics and formatters ``%load_ext npu_jupyter`` added (IPython calls this)."""
    from npu_jupyter._notebook.magics import unload_ipython_extension as _unload

    _unload(ipython)


# Reports render through the display layer, which registers itself (see _display/formatters.py).
from npu_jupyter._display import formatters as _formatters  # noqa: E402 - after the lazy table on purpose

_formatters.register()
