"""The notebook session's one shared NPU config.

``%npu``, ``%%npu`` and the widget panel all read and write the same :class:`NpuConfig` object, so a
change made in one shows in the others (the panel observes its traits). It is created on first use so
``%load_ext npu_jupyter`` stays fast; it is never replaced, only edited, because widgets hold a
reference to it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from npu_jupyter.options.config import NpuConfig

_config: NpuConfig | None = None


def current_config() -> NpuConfig:
    """The session-wide config that the magics and the panel share (created empty on first call)."""
    global _config
    if _config is None:
        from npu_jupyter.options.config import NpuConfig

        _config = NpuConfig()
    return _config
