"""Double of ``npu_config``: NPURunConfig and its helper classes record their keyword arguments."""

from __future__ import annotations

from typing import Any

from npu_bridge import recorded


class _Helper:
    """DumpConfig(...), ProfilingConfig(...): keeps the keyword arguments it was given."""

    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs


class DumpConfig(_Helper):
    pass


class ProfilingConfig(_Helper):
    pass


class MemoryConfig(_Helper):
    pass


class ExperimentalConfig(_Helper):
    pass


class GraphMemoryOptimizeConfig(_Helper):
    pass


class DynamicInputConfig(_Helper):
    pass


def _plain(value: Any) -> Any:
    """Helper objects become the nested dicts ``NpuConfig.to_run_config_kwargs`` uses."""
    if isinstance(value, _Helper):
        return {k: _plain(v) for k, v in value.kwargs.items()}
    return value


class NPURunConfig:
    """Records ``NPURunConfig(**kwargs)`` (helper objects as nested dicts)."""

    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = {k: _plain(v) for k, v in kwargs.items()}
        recorded.run_configs.append(self.kwargs)
