"""Double of the TF2 adapter's ``npu_device``: ``global_options()``/``open()`` record what was set."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from npu_bridge import recorded

_OPTIONS = SimpleNamespace()


def global_options() -> Any:
    """The options object scripts set attributes on before ``open()``."""
    return _OPTIONS


class _Device:
    def as_default(self) -> _Device:
        return self


def open(*args: Any, **kwargs: Any) -> _Device:  # noqa: A001 - the adapter's own name
    recorded.device_calls.append(("open", dict(vars(_OPTIONS))))
    return _Device()
