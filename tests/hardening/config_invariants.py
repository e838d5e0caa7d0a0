"""Invariants the option fuzzers share, and the recognisers of inputs that hit bugs already reported.

Where an input hits a bug already reported (see test_known_bugs.py, one xfail-strict test per bug),
the fuzzers skip only the failing step for that input and say so here, so the rest of every invariant
still runs. Delete the skip when its bug is fixed.
"""

from __future__ import annotations

import contextlib

from npu_jupyter._options.config import NpuConfig
from npu_jupyter._options.errors import NpuConfigError


def assert_names_input(err: NpuConfigError, key: str, value: object) -> None:
    """The message names the option and the rejected value (as typed, or decoded from bytes)."""
    text = str(err)
    assert key in text, text
    shown = {repr(value)}
    if isinstance(value, bytes):
        shown.add(repr(value.decode("utf-8", "replace")))
        with contextlib.suppress(UnicodeDecodeError):
            shown.add(repr(value.decode("utf-8")))
    assert any(s in text for s in shown), (text, value)


def assert_round_trips(cfg: NpuConfig, *, strict: bool = True) -> None:
    """to_config_proto -> from_config_proto gives the same options (object and wire bytes).

    ``strict`` re-imports with ``strict=True``: right for configs built by setters, whose values all
    pass their checks; an imported config may keep values the adapter reads but we would refuse.
    """
    expected = cfg.changed()
    if expected.get("use_off_line") is True:  # reported: test_explicit_use_off_line_true_round_trips
        expected.pop("use_off_line")
    proto = cfg.to_config_proto(validate=False)
    back = NpuConfig.from_config_proto(proto, strict=strict)
    assert back.changed() == expected
    assert NpuConfig.from_config_proto(proto.SerializeToString()).changed() == expected
