"""The notebook session's one shared NPU config, and the reports of the last ``%%npu`` cell.

``%npu``, ``%%npu`` and the widget panel all read and write the same :class:`NpuConfig` object, so a
change made in one shows in the others (the panel observes its traits). It is created on first use so
``%load_ext npu_jupyter`` stays fast; it is never replaced, only edited, because widgets hold a
reference to it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from npu_jupyter._options.config import NpuConfig
    from npu_jupyter._runtime.report import RunReport

_config: NpuConfig | None = None
_last_reports: list[RunReport] = []


def current_config() -> NpuConfig:
    """The session-wide config that the magics and the panel share (created empty on first call)."""
    global _config
    if _config is None:
        from npu_jupyter._options.config import NpuConfig

        _config = NpuConfig()
    return _config


def last_reports() -> list[RunReport]:
    """The run reports of the last ``%%npu`` cell, one per distinct run or traced function.

    Also after ``--quiet`` (nothing was rendered) and after a cell that raised (the runs before the error).
    A cell of TF2 code has no session to ask for ``last_report``; this is where its reports are.
    """
    return list(_last_reports)


def set_last_reports(reports: list[RunReport]) -> None:
    """Record the reports of the cell that just ran (``%%npu`` calls this)."""
    _last_reports[:] = reports
