"""The one exception type of the option model.

A ``ValueError`` so callers that already catch bad values keep working; the attributes let the panel
and the magics point at the offending option without parsing the message.
"""

from __future__ import annotations

from typing import Sequence

_UNSET = object()


class NpuConfigError(ValueError):
    """A bad option name, a bad value or broken cross-option rules.

    Parameters
    ----------
    message:
        The whole human-readable text (names the option, the bad value and what is allowed).
    option:
        The parameter_map key concerned (``None`` when several are).
    value:
        The rejected value (absent when the error is about several options).
    problems:
        Every problem found, one sentence each (``validate()`` collects them all).
    allowed:
        Allowed values or a description of them, when there is one.
    suggestions:
        Close known names for an unknown option name.

    """

    def __init__(
        self,
        message: str,
        *,
        option: str | None = None,
        value: object = _UNSET,
        problems: Sequence[str] | None = None,
        allowed: object = None,
        suggestions: Sequence[str] = (),
    ) -> None:
        super().__init__(message)
        self.option = option
        self.value = None if value is _UNSET else value
        self.has_value = value is not _UNSET
        self.problems = list(problems) if problems else [message]
        self.allowed = allowed
        self.suggestions = list(suggestions)

    @classmethod
    def combine(cls, errors: Sequence[NpuConfigError]) -> NpuConfigError:
        """One error listing every problem of several (the message keeps each on its own line)."""
        if len(errors) == 1:
            return errors[0]
        problems = [p for err in errors for p in err.problems]
        options = {err.option for err in errors}
        option = options.pop() if len(options) == 1 else None
        text = f"{len(problems)} problems in the NPU config:\n" + "\n".join(f"  - {p}" for p in problems)
        return cls(text, option=option, problems=problems)
