"""The ``profiling_options`` JSON, read in one place.

The option is a JSON object in a string. The option check, the cross-option rules, the emulator's
profiler, the adapter-output list, the ``%%npu --profile`` flag and the panel's profiling form all
need its fields; each used to parse it itself. They call :func:`profiling_fields` (or its lenient
twin) and word their own message from :class:`ProfilingOptionsError`; the default JSON the adapter
uses when the option is empty comes from the catalogue.
"""

from __future__ import annotations

import json
from typing import Mapping, Union

ProfilingText = Union[str, Mapping[str, object], None]


class ProfilingOptionsError(ValueError):
    """``profiling_options`` that is not a JSON object; ``json_msg`` is json's reason when it is not JSON at all."""

    def __init__(self, text: object, json_error: json.JSONDecodeError | None = None) -> None:
        self.text = text
        self.json_msg = None if json_error is None else json_error.msg
        super().__init__("not a JSON object" if json_error is None else str(json_error))


def profiling_fields(text: ProfilingText) -> dict[str, object]:
    """The fields of a profiling_options value (``{}`` when unset or empty); ProfilingOptionsError otherwise."""
    if text is None or text == "":
        return {}
    if isinstance(text, Mapping):
        return dict(text)
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:  # what json.loads raises on a str; it carries .msg
        raise ProfilingOptionsError(text, exc) from None
    if not isinstance(value, dict):
        raise ProfilingOptionsError(text)
    return value


def lenient_profiling_fields(text: ProfilingText) -> dict[str, object]:
    """The fields, or ``{}`` when the value is not a JSON object (rules and displays that only peek)."""
    try:
        return profiling_fields(text)
    except ProfilingOptionsError:
        return {}


def adapter_profiling_fields(text: ProfilingText) -> dict[str, object]:
    """The fields the adapter profiles with: an unset or empty value means the catalogue's default JSON."""
    if text is None or text == "" or (isinstance(text, Mapping) and not text):
        from npu_jupyter._options import catalogue  # the catalogue's checks import this module

        return dict(catalogue.profiling_default())
    return profiling_fields(text)
